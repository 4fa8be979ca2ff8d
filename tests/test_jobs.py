"""Runs that outlive the terminal that started them: the events journal, detached runner jobs,
`trsi-tui jobs list / attach / stop`, and what a killed runner leaves behind."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.config.paths import REPO_ROOT
from engine.events import (
    AgentStepTaken,
    EpisodeFinished,
    EpisodePhase,
    EpisodeStarted,
    EventBus,
    PipelineProgress,
    RprProgress,
    RsrProgress,
    RunbookDrafted,
    RunFinished,
    RunStarted,
    SandboxOutput,
    TrainingStep,
)
from engine.jobs import EVENT_TYPES, EventJournal, EventTail, JobRegistry, JobRun, read_events
from engine.results import AgentStep, CheckResult, EpisodeResult
from engine.store import Store
from engine.store.schema import pid_alive
from engine.store.work_lock import lock_path
from tests.conftest import ctrf_test, write_task
from trsi_tui.cli import cli

STEP = AgentStep(
    command="ls -la /app",
    output="total 0\n\x1b[31mred\x1b[0m \u00e9\u4e2d",
    exit_code=None,
    timed_out=True,
    duration_s=1.25,
    action_text="```bash\nls -la /app\n```",
    token_ids=(1, 2, 3),
    logprobs=(-0.5, -1.0, -0.25),
    prompt_tokens=42,
    parse_error="",
    generation_s=0.5,
)
RESULT = EpisodeResult(
    episode_id="run1-0000",
    run_id="run1",
    task="count-lines",
    split=None,
    agent="model",
    backend="local",
    attempt=3,
    status="completed",
    success=True,
    checks_passed=1,
    checks_total=2,
    reward=None,
    failure_mode="tampered",
    checks=(CheckResult("a", "passed"), CheckResult("b", "failed", "expected 3")),
    steps=(STEP, AgentStep("true", "", 0, False, 0.0)),
    phase_s={"sandbox": 0.25, "agent": 2.0},
    resource_events=("oom_kill",),
    token_ids=(5, 6),
    token_mask=(0, 1),
    messages=({"role": "user", "content": "hi"},),
    harness="fenced-bash-turns",
    model="bundled:smollm2-135m",
)
# One of every event type the engine emits, in the order a run would.
EVENTS = [
    RunStarted("run1", "eval", 2),
    EpisodeStarted("run1", "run1-0000", "count-lines", "model", node="host:a"),
    EpisodePhase("run1-0000", "agent"),
    SandboxOutput("run1-0000", "agent", "command", "ls -la /app"),
    SandboxOutput("run1-0000", "agent", "output", "total 0\r\n\x1b[2K partial"),
    AgentStepTaken("run1-0000", 0, STEP),
    EpisodeFinished("run1", RESULT),
    RunFinished("run1", 0.5, 2),
    RsrProgress(1, "explore", "12/40 episodes"),
    RunbookDrafted(1, "rb-1", "count-lines", "pending"),
    RprProgress(1, 2, 8, "joint", "round 3/8: reward 0.40"),
    PipelineProgress("RSR-1", "running", "explore"),
    TrainingStep("rsr-1", "RSR-1", "sft/loss", 7, float("inf")),
]


def invoke(*args: str, home: Path):
    return CliRunner().invoke(cli, ["--home", str(home), *args], obj={}, catch_exceptions=False)


# -- the journal ----------------------------------------------------------------------------------
def test_the_journal_gives_back_every_event_type_typed_and_in_order(tmp_path: Path):
    assert {type(e).__name__ for e in EVENTS} == set(EVENT_TYPES), "a new event type needs a case here"
    store, bus = Store(tmp_path / "trsi.db"), EventBus()
    with EventJournal(store.path, "job-1", bus) as journal:
        for event in EVENTS:
            bus.emit(event)
    bus.emit(RunStarted("after", "eval", 1))  # closed: no longer listening
    assert journal.written == len(EVENTS) and journal.dropped == 0
    entries = read_events(sqlite3.connect(store.path), job="job-1")
    assert [e.event for e in entries] == EVENTS
    assert [type(e.event) for e in entries] == [type(e) for e in EVENTS]
    assert entries[6].event.result.steps[0].token_ids == (1, 2, 3)  # tuples again, not lists
    assert [e.id for e in entries] == sorted(e.id for e in entries)
    assert all(e.ts > 0 for e in entries)


def test_emitting_never_waits_for_sqlite(tmp_path: Path):
    """While another process holds the database's write lock, emitting goes on at full speed;
    the events are stored once the lock is free, in order."""
    store, bus = Store(tmp_path / "trsi.db"), EventBus()
    blocker = sqlite3.connect(store.path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # a writer in the middle of a long transaction
    journal = EventJournal(store.path, "job-1", bus)
    try:
        n = 2000
        slowest, started = 0.0, time.perf_counter()
        for i in range(n):
            t = time.perf_counter()
            bus.emit(SandboxOutput("e", "agent", "output", f"line {i}\n"))
            slowest = max(slowest, time.perf_counter() - t)
        elapsed = time.perf_counter() - started
        time.sleep(0.3)
        assert journal.written == 0  # the writer is waiting for the lock, the emitter was not
    finally:
        blocker.execute("COMMIT")
        journal.close()
    assert elapsed < 2.0 and slowest < 0.5, (elapsed, slowest)  # the writer waits up to 30 s
    texts = [e.event.text for e in read_events(sqlite3.connect(store.path))]
    assert texts == [f"line {i}\n" for i in range(n)]


def test_the_store_goes_on_writing_while_a_journal_writes_beside_it(tmp_path: Path):
    """Episodes are stored in transactions while the journal's own connection commits every 50 ms:
    none is refused with "database is locked" (each transaction takes the write lock first)."""
    store, bus, done = Store(tmp_path / "trsi.db"), EventBus(), threading.Event()
    run_id = store.runs.create("eval", backend="local", agent="oracle", tasks_path="x", total=150, config={})

    def chatter() -> None:
        while not done.is_set():
            bus.emit(SandboxOutput("e", "agent", "output", "x" * 200))
            time.sleep(0.0005)

    with EventJournal(store.path, "job-1", bus, flush_s=0.002) as journal:
        emitter = threading.Thread(target=chatter)
        emitter.start()
        try:
            for i in range(150):
                store.runs.record_episode(replace(RESULT, episode_id=f"{run_id}-{i:04d}", run_id=run_id))
        finally:
            done.set()
            emitter.join()
    assert len(store.runs.episodes(run_id)) == 150 and journal.written > 0 and journal.dropped == 0


def test_a_tail_follows_one_job_from_where_it_left_off(tmp_path: Path):
    store, bus, other_bus = Store(tmp_path / "trsi.db"), EventBus(), EventBus()
    with EventJournal(store.path, "a", bus), EventJournal(store.path, "b", other_bus):
        bus.emit(RunStarted("r", "eval", 1))
        other_bus.emit(RunStarted("other", "eval", 9))
    with EventTail(store.path, "a") as tail:
        assert [e.event.run_id for e in tail.poll()] == ["r"]
        assert tail.poll() == []
        with EventJournal(store.path, "a", bus):
            bus.emit(RunFinished("r", 1.0, 1))
        with sqlite3.connect(store.path) as conn:  # written by a newer trsi-tui: skipped, not fatal
            conn.execute("INSERT INTO events (job, ts, type, payload) VALUES ('a', 0, 'FutureEvent', '{}')")
        with EventJournal(store.path, "a", bus):
            bus.emit(PipelineProgress("Base", "done", ""))
        assert [type(e.event).__name__ for e in tail.poll()] == ["RunFinished", "PipelineProgress"]


# -- the registry and a job's own process ---------------------------------------------------------
def test_a_job_whose_process_is_gone_reads_interrupted_and_a_zombie_is_gone(tmp_path: Path):
    store = Store(tmp_path / "trsi.db")
    registry = JobRegistry(store.database)
    ended = subprocess.Popen(["true"])
    deadline = time.monotonic() + 10
    while Path(f"/proc/{ended.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert not pid_alive(ended.pid)  # exited, not yet reaped by its parent (us)
    registry.start("eval-1", "eval", ["eval", "--agent", "oracle"], ended.pid, new=True)
    registry.start("rsr-1", "rsr", ["rsr", "run"], os.getpid(), new=True)
    ended.wait()
    jobs = {j.id: j for j in registry.list()}
    assert jobs["eval-1"].status == "interrupted" and "finished episodes are stored" in jobs["eval-1"].detail
    assert jobs["eval-1"].command == ("eval", "--agent", "oracle")
    assert jobs["rsr-1"].status == "running"
    assert registry.get("rsr").id == "rsr-1"  # a unique prefix names it


def test_sigterm_stops_a_job_cleanly_through_the_engines_cancel(tmp_path: Path):
    store = Store(tmp_path / "trsi.db")
    registry, bus, cancelled = JobRegistry(store.database), EventBus(), threading.Event()
    handler = signal.getsignal(signal.SIGTERM)
    with JobRun(registry, store.path, bus, "rpr-1", "rpr", ["rpr", "run"], cancelled.set) as job:
        assert registry.get("rpr-1").status == "running" and registry.get("rpr-1").pid == os.getpid()
        bus.emit(RprProgress(1, 0, 4, "warmup", "round 1/4"))
        os.kill(os.getpid(), signal.SIGTERM)
        assert cancelled.wait(5)  # the work is asked to stop, as ctrl+c asks it
        job.note("stopped after round 1")
    stopped = registry.get("rpr-1")
    assert stopped.status == "stopped" and stopped.ended_at
    assert stopped.detail == "stopped by `trsi-tui jobs stop`; run the same command to resume it; stopped after round 1"
    assert [type(e.event) for e in read_events(sqlite3.connect(store.path), job="rpr-1")] == [RprProgress]
    assert signal.getsignal(signal.SIGTERM) == handler  # put back

    with pytest.raises(RuntimeError):
        with JobRun(registry, store.path, bus, "rpr-2", "rpr", ["rpr", "run"], cancelled.set):
            raise RuntimeError("no checkpoint to resume")
    assert (registry.get("rpr-2").status, registry.get("rpr-2").detail) == ("failed", "no checkpoint to resume")


# -- detached jobs, end to end --------------------------------------------------------------------
def _suite(root: Path, seconds: float, names: tuple[str, ...] = ("slow-a", "slow-b")) -> Path:
    toml = "[agent]\ntimeout_sec = 120\n[verifier]\ntimeout_sec = 20\n[environment]\nmemory_mb = 256\n"
    for name in names:
        write_task(root, name, solve=f"sleep {seconds}; echo hello > /app/out.txt", toml=toml)
    return root


def _detach(home: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`trsi-tui --home HOME ARGS --detach` in a process of its own, as a user's terminal runs it."""
    return subprocess.run(
        [sys.executable, "-m", "trsi_tui.cli", "--home", str(home), *args, "--detach"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        env={**os.environ, **(env or {})},
    )


def _started_job(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("started job ") and "it goes on when this terminal closes" in first
    return first.split()[2]


def _jobs(home: Path) -> dict[str, dict]:
    out = home / "jobs.json"
    r = invoke("jobs", "list", "--json", str(out), home=home)
    assert r.exit_code == 0, r.output
    return {j["id"]: j for j in json.loads(out.read_text())["jobs"]}


def _wait_for(what, timeout: float = 60.0, every: float = 0.1):
    deadline = time.monotonic() + timeout
    while not (found := what()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(every)
    return found


def _episode_running(home: Path, job_id: str) -> bool:
    entries = read_events(sqlite3.connect(home / "trsi.db"), job=job_id)
    return any(isinstance(e.event, EpisodePhase) and e.event.phase == "agent" for e in entries)


@pytest.mark.slow
def test_a_detached_eval_goes_on_after_its_terminal_returns_and_attach_follows_it(tmp_path: Path):
    home, suite = tmp_path / "home", _suite(tmp_path / "suite", 2)
    began = time.monotonic()
    started = _detach(home, "eval", "--tasks", str(suite), "--agent", "oracle", "--backend", "local", "-j", "1")
    job_id = _started_job(started)
    assert f"jobs attach {job_id}" in started.stdout and f"jobs stop {job_id}" in started.stdout
    assert f"logs/jobs/{job_id}.log" in started.stdout
    # The starting command has returned; the job is at work in a process of its own.
    job = _jobs(home)[job_id]
    assert job["status"] == "running" and pid_alive(job["pid"]) and job["pid"] != os.getpid()
    assert job["command"] == [
        "--home", str(home), "eval", "--tasks", str(suite), "--agent", "oracle", "--backend", "local",
        "--concurrency", "1",
    ]  # fmt: skip
    listed = invoke("jobs", home=home)
    assert job_id in listed.output and "running" in listed.output

    attached = invoke("jobs", "attach", job_id, home=home)  # follows it to its end
    assert attached.exit_code == 0, attached.output
    assert f"attached to job {job_id} (eval, " in attached.output
    assert "1/2 PASS slow-a (oracle) 2/2 reward=1.00" in attached.output
    assert "2/2 PASS slow-b (oracle) 2/2 reward=1.00" in attached.output
    assert f"job {job_id} done: run " in attached.output and "2/2 scored episodes passed" in attached.output
    assert time.monotonic() - began > 4  # two episodes of 2 s each, one at a time: it ran after `eval` returned
    done = _jobs(home)[job_id]
    assert done["status"] == "done" and done["ended_at"] and "2/2 scored episodes passed" in done["detail"]

    # Attached again after the end: the stored events, replayed as they happened (shell included).
    replay = invoke("jobs", "attach", job_id[:8], "--shell", home=home)
    assert "$ bash /solution/solve.sh" in replay.output and "2/2 PASS slow-b" in replay.output
    assert replay.output.index("1/2 PASS slow-a") < replay.output.index("2/2 PASS slow-b")
    log = (home / "logs" / "jobs" / f"{job_id}.log").read_text()
    assert "slow-b" in log  # its headless output went to the log


@pytest.mark.slow
def test_jobs_stop_ends_a_waiting_job_as_stopped_within_the_timeout(tmp_path: Path):
    home, suite = tmp_path / "home", _suite(tmp_path / "suite", 120, ("sleepy",))
    job_id = _started_job(_detach(home, "eval", "--tasks", str(suite), "--agent", "oracle", "--backend", "local"))
    _wait_for(lambda: _episode_running(home, job_id))  # its oracle sleeps for two minutes
    began = time.monotonic()
    stopped = invoke("jobs", "stop", job_id, "--timeout", "30", home=home)
    assert stopped.exit_code == 0, stopped.output
    assert f"stopping {job_id} (waits for the running episodes to end)" in stopped.output
    assert f"job {job_id} stopped: stopped by `trsi-tui jobs stop`; its finished episodes are stored" in stopped.output
    assert time.monotonic() - began < 30
    job = _jobs(home)[job_id]
    assert job["status"] == "stopped" and not pid_alive(job["pid"])
    again = invoke("jobs", "stop", job_id, home=home)
    assert again.exit_code == 0 and f"job {job_id} is not running (stopped)" in again.output


@pytest.mark.slow
def test_a_killed_runner_leaves_its_job_interrupted(tmp_path: Path):
    home, suite = tmp_path / "home", _suite(tmp_path / "suite", 120, ("sleepy",))
    job_id = _started_job(_detach(home, "eval", "--tasks", str(suite), "--agent", "oracle", "--backend", "local"))
    _wait_for(lambda: _episode_running(home, job_id))
    pid = _jobs(home)[job_id]["pid"]
    os.kill(pid, signal.SIGKILL)  # no chance to record anything
    _wait_for(lambda: not pid_alive(pid), timeout=10)
    listed = invoke("jobs", "list", home=home)
    assert job_id in listed.output and "interrupted" in listed.output
    job = _jobs(home)[job_id]
    assert job["status"] == "interrupted" and job["ended_at"] == ""
    assert job["detail"].startswith("its process ended without recording how")
    attached = invoke("jobs", "attach", job_id, home=home)
    assert attached.exit_code == 1 and f"job {job_id} interrupted: its process ended" in attached.output


CTRF_SLOW_TEST = ctrf_test(("slow", "sleep 1"), ("out_is_hello", 'test "$(cat /app/out.txt)" = hello'))


@pytest.mark.slow
def test_a_pipeline_runner_killed_mid_evaluation_resumes_with_pipeline_run_keeping_every_finished_episode(
    tmp_path: Path,
):
    if not os.environ.get("CI"):
        pytest.importorskip("llama_cpp", reason="needs the model extra (installed by .ci/setup)")
    home, suite = tmp_path / "home", tmp_path / "suite"
    for n in range(6):  # each verification takes a second, so the kill lands between episodes
        write_task(
            suite,
            f"hello-{n}",
            test=CTRF_SLOW_TEST,
            toml='[metadata]\nsplit = "eval"\n[agent]\ntimeout_sec = 30\n[verifier]\ntimeout_sec = 20\n',
        )
    config = tmp_path / "pipeline.toml"
    config.write_text(
        f'tasks = "{suite}"\n[sandbox]\nbackend = "local"\n[policy]\nmax_reply_tokens = 16\n'
        '[pipeline]\nmodel = "bundled:smollm2-135m"\neval_seeds = 1\neval_max_turns = 1\n'
    )
    run = ("pipeline", "run", "--config", str(config), "--stop-after", "Base", "-j", "1")
    job_id = _started_job(_detach(home, *run))
    db = home / "trsi.db"

    def finished() -> dict[str, str]:
        # Read-only while the runner may still be making its tables: a Store here would write them.
        try:
            with sqlite3.connect(db) as conn:
                rows = conn.execute("SELECT key, episode_id FROM jobs WHERE scope = 'stage/Base'").fetchall()
        except sqlite3.OperationalError:  # the runner has not made its tables yet
            return {}
        return dict(rows)

    _wait_for(lambda: db.exists() and len(finished()) >= 2, timeout=120)
    pid = _jobs(home)[job_id]["pid"]
    os.kill(pid, signal.SIGKILL)  # mid-evaluation, with no chance to record anything
    _wait_for(lambda: not pid_alive(pid), timeout=10)
    before = finished()
    assert 2 <= len(before) < 6 and _jobs(home)[job_id]["status"] == "interrupted"
    base = [line for line in invoke("pipeline", "status", home=home).output.splitlines() if "Base" in line]
    assert base and "interrupted" in base[0] and "running" not in base[0], base  # the stage, like its job

    again = subprocess.run(
        [sys.executable, "-m", "trsi_tui.cli", "--home", str(home), *run, "--headless"],
        capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
    )  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    after = finished()
    assert len(after) == 6  # every eval task once
    assert {k: after[k] for k in before} == before  # the episodes finished before the kill are kept, not run again
    store = Store(db)
    assert len(store.runs.episodes_by_id(list(after.values()))) == 6
    assert store.stages.all()["Base"].status == "done"
    store.close()


# A stand-in for the pipeline's work (no model): it holds the work lock, as the pipeline does,
# until it is cancelled. Loaded into the job's process through PYTHONPATH.
FAKE_PIPELINE = """
import threading

from engine.api import engine as api


class WaitingWork:
    def __init__(self):
        self.stop = threading.Event()

    def run(self):
        self.stop.wait(120)
        return {}

    def cancel(self):
        self.stop.set()


def pipeline(self, **options):
    return self._run_work("the pipeline", WaitingWork, "local")


api.Engine.pipeline = pipeline
"""


@pytest.mark.slow
def test_a_second_writer_is_refused_naming_the_job_that_holds_the_data_dir(tmp_path: Path):
    home, fake = tmp_path / "home", tmp_path / "fake"
    fake.mkdir()
    (fake / "sitecustomize.py").write_text(FAKE_PIPELINE)
    env = {"PYTHONPATH": str(fake)}
    job_id = _started_job(_detach(home, "pipeline", "run", "--tasks", str(tmp_path), env=env))
    assert job_id.startswith("pipeline-")
    _wait_for(
        lambda: job_id in (lock_path(home / "trsi.db").read_text() if lock_path(home / "trsi.db").exists() else "")
    )

    second = _detach(home, "pipeline", "run", env=env)
    assert second.returncode == 1
    message = " ".join(second.stderr.split())
    assert f"the pipeline (job {job_id}, process" in message
    assert f"trsi-tui jobs attach {job_id}" in message and f"trsi-tui jobs stop {job_id}" in message
    assert "started job" not in second.stdout
    rsr = _detach(home, "rsr", "run", "--round", "1", "--model", "bundled:smollm2-135m", env=env)
    assert rsr.returncode == 1 and f"job {job_id}" in rsr.stderr
    # In the foreground too: the work itself is refused, naming the job.
    refused = invoke(
        "rsr", "run", "--round", "1", "--model", "bundled:smollm2-135m", "--tasks", str(tmp_path), home=home
    )
    assert refused.exit_code == 1 and f"the pipeline (job {job_id}," in " ".join(refused.output.split())

    stopped = invoke("jobs", "stop", job_id, home=home)
    assert stopped.exit_code == 0 and f"job {job_id} stopped" in stopped.output
    assert _jobs(home)[job_id]["command"][-1] == "--headless"  # a job has no terminal for the TUI


# -- pruning old journals ---------------------------------------------------------------------------
def test_old_journals_are_pruned_as_a_job_ends_and_by_jobs_prune_keeping_running_jobs_and_every_row(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("[jobs]\nkeep_journals = 2\n")
    store = Store(home / "trsi.db")
    registry = JobRegistry(store.database)
    registry.start("running-1", "eval", ["eval"], os.getpid())  # this process: alive, so running
    for name in ("running-1", "old-1", "old-2", "old-3"):
        bus = EventBus()
        with EventJournal(store.path, name, bus):
            bus.emit(RunStarted(f"run-{name}", "eval", 1))
            bus.emit(SandboxOutput(f"ep-{name}", "agent", "output", f"shell of {name}"))
    for n, name in enumerate(("old-1", "old-2", "old-3")):
        registry.start(name, "eval", ["eval"], os.getpid())
        registry.finish(name, "done")
        store.database.db.execute("UPDATE runner_jobs SET started_at = ? WHERE id = ?", [f"2026-01-0{n + 1}", name])
    store.database.db.conn.commit()

    def kept() -> set[str]:
        return {e.job for e in read_events(sqlite3.connect(store.path))}

    # A job ending prunes down to [jobs] keep_journals = 2 finished jobs (itself the newest).
    with JobRun(registry, store.path, EventBus(), "new-1", "eval", ["eval"], lambda: None, keep_journals=2):
        pass
    assert kept() == {"running-1", "old-3"}  # new-1 journaled nothing; old-1 and old-2 went
    assert len(invoke("jobs", "list", home=home).output.split("old-1")) > 1, "its row stays listed"
    attached = invoke("jobs", "attach", "old-1", home=home)
    assert "no events are kept for this job" in attached.output and "([jobs] keep_journals)" in attached.output
    # A recent job that journaled nothing is not said to be pruned.
    assert "this job journaled no events" in invoke("jobs", "attach", "new-1", home=home).output

    pruned = invoke("jobs", "prune", "--keep", "1", home=home)
    assert pruned.exit_code == 0
    assert "pruned the journals of 1 finished job(s): 2 event(s) deleted" in pruned.output  # old-3
    assert kept() == {"running-1"}  # never a running job's
    assert invoke("jobs", "prune", "--keep", "0", home=home).output.startswith("pruned the journals of 0")
