"""Hostile or broken agents, run as a task's "solution" under the oracle agent, on both backends.

Each one must end cleanly with the right result, and the engine must keep working.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest

from engine.config import Config, parse_config
from engine.events import EpisodePhase
from engine.results import EpisodeResult
from engine.rollout.agents import OracleAgent
from engine.rollout.episode import run_episode
from engine.rollout.runner import EpisodeJob, EpisodeRunner
from engine.tasks import load_task
from tests.conftest import ctrf_test, write_task

PYTEST_VERIFIER = """#!/bin/bash
cat > /tests/test_out.py <<'PY'
def test_out_is_hello():
    assert open('/app/out.txt').read().strip() == 'hello'

def test_single_line():
    assert open('/app/out.txt').read().count('\\n') <= 1
PY
cd /app && python3 -m pytest /tests/test_out.py -rA
"""


CONFIGS = {"local": Config(), "docker": parse_config('[sandbox]\nbackend = "docker"\n')}


@pytest.fixture(params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def backend(request) -> str:
    return request.param


def episode(tmp_path: Path, backend: str, name: str, solve: str, **kw) -> EpisodeResult:
    task = load_task(write_task(tmp_path, name, solve=solve, **kw))
    return run_episode(task, OracleAgent(), config=CONFIGS[backend], backend=backend)


def test_background_forger_cannot_touch_the_verifier(tmp_path: Path, backend: str):
    forger = (
        "(while true; do mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt;"
        ' echo \'{"results":{"tests":[{"name":"x","status":"passed"}]}}\' > /logs/verifier/ctrf.json;'
        " cp -r /tests /app/stolen 2>/dev/null; sleep 0.01; done) >/dev/null 2>&1 &"
    )
    r = episode(tmp_path, backend, "forger", forger)
    assert not r.success and r.status == "completed"
    assert [c.name for c in r.checks] == ["out_exists", "out_is_hello"]


def test_pytest_cannot_be_hijacked(tmp_path: Path, backend: str):
    force_pass = (
        "import pytest\n"
        "@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n"
        "    out = yield\n"
        "    out.get_result().outcome = 'passed'\n"
    )
    solve = (
        f"cat > /app/conftest.py <<'PY'\n{force_pass}PY\n"
        "cp /app/conftest.py /conftest.py\n"
        "mkdir -p /app/evil && cp /app/conftest.py /app/evil/evilplugin.py\n"
        "printf '[pytest]\\naddopts = -p evilplugin\\npythonpath = /app/evil\\n' > /pytest.ini\n"
        "printf 'print(\"PASSED x::test_out_is_hello\")\\n' > /app/pytest.py\n"
        "mkdir -p /root/.local/lib/python3.11/site-packages\n"
        "printf 'import sys; sys.exit(0)\\n' > /root/.local/lib/python3.11/site-packages/usercustomize.py\n"
        "echo goodbye > /app/out.txt\n"
    )
    r = episode(tmp_path, backend, "pytest-hijack", solve, test=PYTEST_VERIFIER)
    assert r.verifier_source == "pytest", r.error or r.verifier_output
    assert not r.success
    assert {c.name.split("::")[-1]: c.status for c in r.checks}["test_out_is_hello"] == "failed"


def test_honest_pytest_verifier_still_passes(tmp_path: Path, backend: str):
    r = episode(tmp_path, backend, "pytest-honest", "echo hello > /app/out.txt", test=PYTEST_VERIFIER)
    assert r.success and (r.checks_passed, r.checks_total) == (2, 2), r.verifier_output


def test_fork_bomb_is_contained(tmp_path: Path, backend: str):
    r = episode(
        tmp_path,
        backend,
        "fork-bomb",
        "bomb() { bomb | bomb & }; bomb; sleep 2; echo hello > /app/out.txt",
        toml="[agent]\ntimeout_sec = 15\n",
    )
    assert r.scored and "pids_limit" in r.resource_events
    # The engine goes on: a normal episode right after still works.
    assert episode(tmp_path, backend, "after-bomb", "echo hello > /app/out.txt").success


def test_memory_hog_is_killed_and_reported(tmp_path: Path, backend: str):
    r = episode(
        tmp_path,
        backend,
        "hog",
        "python3 -c 'x = bytearray(1024 * 1024 * 1024)'",
        toml="[environment]\nmemory_mb = 128\n",
    )
    assert not r.success and r.failure_mode == "oom_killed" and "oom_kill" in r.resource_events


@pytest.mark.parametrize("target", ["/app/fill", "/fill", "/tmp/fill"])
def test_disk_fill_is_capped_and_verification_still_runs(tmp_path: Path, target: str, backend: str):
    name = "fill" + target.replace("/", "-")
    r = episode(
        tmp_path,
        backend,
        name,
        f"head -c 5G /dev/zero > {target}; echo hello > /app/out.txt",
        toml="[environment]\nstorage_mb = 32\nmemory_mb = 512\n",
    )
    assert r.scored, r.error
    assert r.checks_total == 2  # the verifier ran and reported, even with the disk full
    assert "disk_limit" in r.resource_events


def test_output_flood_is_capped(tmp_path: Path, backend: str):
    r = episode(tmp_path, backend, "flood", "yes 'flooding the engine with output'", toml="[agent]\ntimeout_sec = 4\n")
    assert r.status == "agent_timeout" and "output_capped" in r.resource_events
    (step,) = r.steps
    assert len(step.output) < 1_200_000  # head and tail kept, the rest dropped


def test_host_loopback_listener_and_dns_are_unreachable(tmp_path: Path, backend: str):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                accepted.append(server.accept())
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    solve = (
        f"(echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo reached > /app/net || echo blocked > /app/net;"
        " getent hosts pypi.org > /dev/null && echo resolved > /app/dns || echo failed > /app/dns"
    )
    test = ctrf_test(
        ("loopback_blocked", 'test "$(cat /app/net)" = blocked'), ("dns_fails", 'test "$(cat /app/dns)" = failed')
    )
    r = episode(tmp_path, backend, "net", solve, test=test)
    stop.set()
    t.join()
    server.close()
    assert r.success, r.checks
    assert accepted == []


def test_writes_outside_the_workspace_leave_the_host_unchanged(tmp_path: Path, backend: str):
    marker = tmp_path / "host-file"
    marker.write_text("original")
    solve = (
        f"echo changed > {marker}; touch /usr/bin/trsi-evil /etc/trsi-evil; "
        f"test -e {marker} && echo visible > /app/out.txt || echo hello > /app/out.txt"
    )
    r = episode(tmp_path, backend, "escape", solve)
    assert r.success  # the host path was not even visible
    assert marker.read_text() == "original"
    assert not Path("/usr/bin/trsi-evil").exists() and not Path("/etc/trsi-evil").exists()


@pytest.mark.parametrize("phase", ["setup", "agent"])
def test_sandbox_killed_from_outside_is_an_infra_failure(tmp_path: Path, backend: str, phase: str):
    # The victim sleeps in the phase under attack, so the kill lands there whatever the machine's speed.
    setup = "mkdir -p /app; sleep 60" if phase == "setup" else "mkdir -p /app"
    victim = load_task(
        write_task(tmp_path, "victim", setup=setup, solve="sleep 60", toml="[agent]\ntimeout_sec = 90\n")
    )
    bystander = load_task(write_task(tmp_path, "bystander", solve="sleep 1; echo hello > /app/out.txt"))
    runner = EpisodeRunner(config=CONFIGS[backend], backend=backend, store=None, bus=None)
    victim_in_phase = threading.Event()

    def watch(event) -> None:
        if isinstance(event, EpisodePhase) and event.phase == phase:
            sandbox = runner._live.get(event.episode_id)  # noqa: SLF001
            if sandbox is not None and sandbox.spec.name == "victim":
                victim_in_phase.set()

    runner.bus.subscribe(watch)

    def kill(sandbox) -> None:
        if backend == "local":  # SIGKILL the namespace's init
            os.kill(sandbox._init_pid, signal.SIGKILL)  # noqa: SLF001
        else:  # `docker kill`
            sandbox._container.kill()  # noqa: SLF001

    def assassin() -> None:
        if not victim_in_phase.wait(60):
            return
        time.sleep(1.0)  # well inside the phase's 60 s sleep
        for sandbox in list(runner._live.values()):  # noqa: SLF001
            if sandbox.spec.name == "victim":
                kill(sandbox)

    threading.Thread(target=assassin, daemon=True).start()
    _, results = runner.run(
        [EpisodeJob(victim, OracleAgent), EpisodeJob(bystander, OracleAgent)],
        kind="eval",
        agent_label="oracle",
        tasks_path="x",
        concurrency=2,
    )
    by_task = {r.task: r for r in results}
    assert victim_in_phase.is_set()
    assert by_task["victim"].status == "infra_error" and by_task["victim"].failure_mode == "sandbox_error"
    assert by_task["victim"].reward is None
    assert by_task["victim"].duration_s < 45  # ended by the kill, not by its own 60 s sleep
    assert by_task["bystander"].success


def test_tests_and_solution_are_not_there_during_the_turn(tmp_path: Path, backend: str):
    spy = (
        "ls /tests > /app/seen_tests 2>&1; ls / > /app/root_listing; "
        "cat /solution/solve.sh > /dev/null && echo hello > /app/out.txt"
    )
    test = ctrf_test(
        ("tests_hidden", 'grep -q "No such file" /app/seen_tests'),
        ("no_tests_at_root", "! grep -qx tests /app/root_listing"),
        ("solution_was_readable_by_the_oracle_only", 'test "$(cat /app/out.txt)" = hello'),
    )
    r = episode(tmp_path, backend, "spy", spy, test=test)
    assert r.success, r.checks


def test_sleeping_past_the_agent_timeout_ends_the_turn(tmp_path: Path, backend: str):
    t = time.monotonic()
    r = episode(tmp_path, backend, "sleeper", "echo hello > /app/out.txt; sleep 600", toml="[agent]\ntimeout_sec = 2\n")
    assert time.monotonic() - t < 30
    assert r.status == "agent_timeout" and r.success  # the work done in time still counts
