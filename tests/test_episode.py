"""Whole episodes in real sandboxes: oracle, nop, and agents that try to cheat or break things."""

from __future__ import annotations

from pathlib import Path

from engine.config import Config
from engine.events import EpisodePhase, EventBus, SandboxOutput
from engine.rollout.agents import NopAgent, OracleAgent
from engine.rollout.episode import run_episode
from engine.tasks import load_task
from tests.conftest import EXAMPLE_TASK, ctrf_test, write_task


def test_oracle_succeeds_with_full_reward(config: Config):
    r = run_episode(load_task(EXAMPLE_TASK), OracleAgent(), config=config)
    assert r.success and r.status == "completed"
    assert (r.checks_passed, r.checks_total, r.reward) == (3, 3, 1.0)
    assert r.verifier_source == "ctrf+reward.txt"  # reward.txt decides, ctrf.json gives the detail


def test_nop_gets_partial_credit_below_success(config: Config):
    r = run_episode(load_task(EXAMPLE_TASK), NopAgent(), config=config)
    assert not r.success and r.failure_mode == "checks_failed"
    assert (r.checks_passed, r.checks_total) == (1, 3)
    assert r.reward == 0.5 * 1 / 3


def test_events_stream_phases_and_shell_output(config: Config):
    bus = EventBus()
    events = []
    bus.subscribe(events.append)
    run_episode(load_task(EXAMPLE_TASK), OracleAgent(), config=config, bus=bus)
    phases = [e.phase for e in events if isinstance(e, EpisodePhase)]
    assert phases == ["sandbox", "setup", "agent", "verifier", "done"]
    channels = {e.channel for e in events if isinstance(e, SandboxOutput)}
    assert {"setup", "agent", "verifier"} <= channels


def test_prewritten_reward_and_fake_reports_do_not_count(tmp_path: Path, config: Config):
    cheat = (
        "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt\n"
        'echo \'{"results":{"tests":[{"name":"x","status":"passed"}]}}\' > /logs/verifier/ctrf.json\n'
        "mkdir -p /tests && echo 'echo 1 > /logs/verifier/reward.txt' > /tests/test.sh\n"
    )
    task = load_task(write_task(tmp_path, "cheater", solve=cheat))
    r = run_episode(task, OracleAgent(), config=config)
    assert not r.success
    assert (r.checks_passed, r.checks_total) == (0, 2)
    assert [c.name for c in r.checks] == ["out_exists", "out_is_hello"]


def test_tests_and_solution_are_invisible_during_the_agent_turn(tmp_path: Path, config: Config):
    # The "solution" reports what it can see into a file the verifier then checks.
    spy = (
        "ls /tests > /app/seen_tests 2>&1; ls / > /app/root_listing; "
        "cat /solution/solve.sh > /dev/null && echo ok > /app/out.txt"
    )
    test = ctrf_test(
        ("tests_hidden", 'grep -q "No such file" /app/seen_tests'),
        ("no_tests_at_root", "! grep -qx tests /app/root_listing"),
    )
    r = run_episode(load_task(write_task(tmp_path, "spy", solve=spy, test=test)), OracleAgent(), config=config)
    assert r.success, r.checks


def test_a_verifier_timeout_scores_zero(tmp_path: Path, config: Config):
    """Inside a live sandbox a verifier that runs out of time is the agent's doing (it may have
    armed it to): a zero with its reason, never an episode dropped from the success rate."""
    task = load_task(
        write_task(tmp_path, "slow-verifier", test="#!/bin/bash\nsleep 30\n", toml="[verifier]\ntimeout_sec = 1\n")
    )
    r = run_episode(task, OracleAgent(), config=config)
    assert r.status == "verifier_timeout" and r.failure_mode == "verifier_timeout"
    assert r.reward == 0.0 and r.scored and not r.success


def test_a_verifier_without_results_scores_zero_with_its_reason(tmp_path: Path, config: Config):
    task = load_task(write_task(tmp_path, "silent", test="#!/bin/bash\necho nothing\n"))
    r = run_episode(task, OracleAgent(), config=config)
    assert r.status == "verifier_error" and r.reward == 0.0 and r.scored
    assert "no usable results" in r.error


def test_failing_setup_is_an_infrastructure_error(tmp_path: Path, config: Config):
    task = load_task(write_task(tmp_path, "bad-setup", setup="echo broken >&2; exit 4"))
    r = run_episode(task, OracleAgent(), config=config)
    assert r.status == "infra_error" and r.failure_mode == "setup_failed"
    assert "exited 4" in r.error and "broken" in r.error


def test_agent_timeout_is_recorded_and_still_verified(tmp_path: Path, config: Config):
    task = load_task(
        write_task(tmp_path, "slowpoke", solve="echo hello > /app/out.txt; sleep 60", toml="[agent]\ntimeout_sec = 1\n")
    )
    r = run_episode(task, OracleAgent(), config=config)
    assert r.status == "agent_timeout"
    # The work done before the deadline still counts: the file exists and is right.
    assert r.success and r.reward == 1.0


def test_setup_runs_as_root_with_environment_files(tmp_path: Path, config: Config):
    d = write_task(
        tmp_path,
        "env-files",
        setup="cp data.txt /app/data.txt; test $(id -u) -eq 0",
        solve="cp /app/data.txt /app/out.txt",
        test=ctrf_test(("copied", 'test "$(cat /app/out.txt)" = payload')),
    )
    (d / "environment" / "data.txt").write_text("payload")
    r = run_episode(load_task(d), OracleAgent(), config=config)
    assert r.success, (r.error, r.checks)


def test_dockerfile_task_on_local_backend_says_why(tmp_path: Path, config: Config):
    d = write_task(tmp_path, "needs-image")
    (d / "environment" / "Dockerfile").write_text("FROM debian\n")
    r = run_episode(load_task(d), OracleAgent(), config=config)
    assert r.status == "infra_error" and "--backend docker" in r.error
