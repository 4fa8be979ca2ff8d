"""The Docker backend, for real (marked `docker`; CI starts dockerd and builds the base image)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from engine.config import Config, parse_config
from engine.rollout.agents import NopAgent, OracleAgent
from engine.rollout.episode import run_episode
from engine.tasks import load_task
from sandboxes import Limits, SandboxSpec, create_sandbox
from sandboxes.docker_images import LABEL, TASK_IMAGE_REPO, client
from sandboxes.docker_sandbox import remove_orphans
from tests.conftest import EXAMPLE_TASK, write_task

pytestmark = pytest.mark.docker
DOCKER = parse_config(
    '[sandbox]\nbackend = "docker"\n[sandbox.docker.aliases]\n"ubuntu:24.04" = "trsi-tui/base:bookworm"\n'
)


@pytest.fixture
def sandbox():
    sb = create_sandbox("docker", SandboxSpec("docker-test", Limits(memory_mb=256, pids=64)))
    sb.start()
    yield sb
    sb.stop()


def test_session_state_timeout_and_clean_exec(sandbox):
    sandbox.run("cd /tmp && export K=v", 5)
    assert sandbox.run('pwd; echo "$K"', 5).output == "/tmp\nv\n"
    r = sandbox.run("sleep 30", 1)
    assert r.timed_out and not r.shell_restarted
    after = sandbox.run("pwd", 5)
    # The timed-out job's "Killed" notice may land in this output; the state must be intact.
    assert after.output.endswith("/tmp\n"), after
    assert sandbox.exec('echo "[$K]"; pwd', 5).output == "[]\n/app\n"


CAP_CHOWN, CAP_SETGID, CAP_SETUID, CAP_SYS_ADMIN = 0, 6, 7, 21


def test_no_network_and_dockers_default_capabilities_without_sys_admin(sandbox):
    assert sandbox.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '", 5).output.split() == ["lo"]
    status = dict(line.split(":\t") for line in sandbox.run("grep ^Cap /proc/self/status", 5).output.splitlines())
    effective, bounding = int(status["CapEff"], 16), int(status["CapBnd"], 16)
    for cap in (CAP_CHOWN, CAP_SETGID, CAP_SETUID):  # what apt-get and setuid verifiers need, as under Harbor
        assert effective >> cap & 1
    # The capability the private verifier view needs is out of reach, setuid binaries included.
    assert not effective >> CAP_SYS_ADMIN & 1 and not bounding >> CAP_SYS_ADMIN & 1
    assert not sandbox.run("unshare --mount true", 5).ok


def test_files_round_trip(sandbox, tmp_path: Path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f.txt").write_text("F")
    sandbox.upload(tmp_path / "d", "/data")
    sandbox.run("echo G > /data/g.txt", 5)
    sandbox.download("/data", tmp_path / "out")
    assert (tmp_path / "out" / "data" / "g.txt").read_text() == "G\n"
    assert (tmp_path / "out" / "data" / "f.txt").read_text() == "F"


def test_memory_and_pids_limits(sandbox):
    r = sandbox.run("python3 -c 'x = bytearray(600 * 1024 * 1024)'; echo rc=$?", 30)
    assert "rc=137" in r.output
    assert "oom_kill" in sandbox.resource_events
    r = sandbox.run("for i in $(seq 100); do sleep 5 & done 2>&1 | tail -1", 20)
    assert "fork" in r.output or "Resource temporarily unavailable" in r.output


def test_stop_removes_the_container_and_orphans_are_cleaned():
    sb = create_sandbox("docker", SandboxSpec("stopper"))
    sb.start()
    cid = sb._container.id  # noqa: SLF001
    sb.stop()
    assert not client().containers.list(all=True, filters={"id": cid})
    orphan = client().containers.run(
        "trsi-tui/base:bookworm",
        ["sleep", "60"],
        detach=True,
        network_mode="none",
        labels={LABEL: "sandbox", "trsi-tui.owner-pid": "999999999", "trsi-tui.owner-host": os.uname().nodename},
    )
    assert remove_orphans() >= 1
    assert not client().containers.list(all=True, filters={"id": orphan.id})


def test_example_task_oracle_and_nop():
    task = load_task(EXAMPLE_TASK)
    ok = run_episode(task, OracleAgent(), config=DOCKER, backend="docker")
    assert ok.success and ok.reward == 1.0, ok.error
    nop = run_episode(task, NopAgent(), config=DOCKER, backend="docker")
    assert not nop.success and (nop.checks_passed, nop.checks_total) == (1, 3)


def test_background_forger_cannot_touch_the_verifier(tmp_path: Path):
    forger = (
        "(while true; do mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; sleep 0.01; done)"
        " >/dev/null 2>&1 &"
    )
    r = run_episode(
        load_task(write_task(tmp_path, "forger", solve=forger)), OracleAgent(), config=DOCKER, backend="docker"
    )
    assert r.status == "completed" and not r.success and r.checks_total == 2


def test_dockerfile_through_an_alias_is_built_once(tmp_path: Path):
    d = write_task(tmp_path, "from-ubuntu", setup=None, solve="cat /marker > /app/out.txt")
    (d / "environment" / "Dockerfile").write_text("FROM ubuntu:24.04\nRUN echo hello > /marker\n")
    task = load_task(d)
    t = time.monotonic()
    first = run_episode(task, OracleAgent(), config=DOCKER, backend="docker")
    assert first.success, first.error
    built = [i for i in client().images.list(name=TASK_IMAGE_REPO)]
    t2 = time.monotonic()
    second = run_episode(task, OracleAgent(), config=DOCKER, backend="docker")
    assert second.success
    assert len(client().images.list(name=TASK_IMAGE_REPO)) == len(built)  # cached by content hash
    assert time.monotonic() - t2 <= (t2 - t) + 1.0


def test_unaliased_unpullable_image_says_what_to_do(tmp_path: Path):
    d = write_task(tmp_path, "exotic", toml='[environment]\ndocker_image = "example.org/nothing:1"\n')
    r = run_episode(load_task(d), OracleAgent(), config=Config(), backend="docker")
    assert r.status == "infra_error" and "add an alias" in r.error


@pytest.mark.slow
def test_builtin_eval_split_on_docker():
    from engine.api import Engine
    from engine.store import Store

    engine = Engine(DOCKER, Store(":memory:"))
    report, _ = engine.evaluate(None, agent="oracle", backend="docker", split="eval", concurrency=2)
    assert len(report.results) == 16 and report.summary["success_rate"] == 1.0


def test_warm_pool_hands_out_a_ready_container_that_streams_to_its_new_owner():
    from sandboxes.docker_sandbox import POOL

    first = create_sandbox("docker", SandboxSpec("pool-a", warm_pool=1))
    first.start()
    deadline = time.monotonic() + 60
    while POOL.size() < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert POOL.size() >= 1
    second = create_sandbox("docker", SandboxSpec("pool-b", warm_pool=1))
    seen: list[str] = []
    second.subscribe(lambda c: seen.append(c.text) if c.kind == "output" else None)
    t = time.monotonic()
    second.start()
    started = time.monotonic() - t
    try:
        assert second._container.id != first._container.id  # noqa: SLF001
        assert second.run("echo from-b", 5).output == "from-b\n"
        assert "from-b\n" in "".join(seen)
        assert started < 2.0
    finally:
        first.stop()
        second.stop()
        POOL.drain()
