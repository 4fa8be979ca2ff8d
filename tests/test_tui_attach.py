"""The TUI attached to a detached job: it follows the job's events journal, shows them live on every
screen, lets a person approve runbooks the job waits for, and quits leaving the job running or
stopping it.

The jobs are fakes: a row in `runner_jobs` whose process is a live `sleep`, and events written
through `EventJournal`, as a detached job's own process writes them.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from textual.widgets import DataTable, Static

import trsi_tui.attach
from engine.api import Engine
from engine.config import Config
from engine.events import (
    EpisodeFinished,
    EpisodePhase,
    EpisodeStarted,
    EventBus,
    PipelineProgress,
    RsrProgress,
    RunStarted,
    SandboxOutput,
    TrainingStep,
)
from engine.jobs import EventJournal, JobRegistry, catch_up
from engine.results import EpisodeResult
from engine.store import Store
from engine.store.records import RunbookDraft
from tests.tui_data import settle
from trsi_tui.app import create_app
from trsi_tui.cli import cli
from trsi_tui.screens.confirm import ChoiceScreen
from trsi_tui.screens.runbooks import RunbooksScreen
from trsi_tui.screens.sandboxes import SandboxesScreen
from trsi_tui.widgets.shell_pane import ShellPane

RESULT = EpisodeResult(
    episode_id="r-old",
    run_id="r",
    task="task-old",
    split="train",
    agent="oracle",
    backend="local",
    attempt=0,
    status="completed",
    success=True,
    checks_passed=2,
    checks_total=2,
    reward=1.0,
    token_ids=tuple(range(1000)),
)


class FakeJob:
    """A detached job as the TUI sees it: registered as running in a live process (a `sleep`),
    writing its events to the journal. With `trap_term` its process records a SIGTERM and goes on
    (a job waiting for its running episodes to end) until `end()`."""

    def __init__(self, store: Store, job_id: str, kind: str = "pipeline", trap_term: bool = False) -> None:
        self.id, self.store = job_id, store
        self.term_mark = store.path.parent / f"{job_id}.sigterm"
        if trap_term:
            script = f"trap 'touch {self.term_mark}' TERM; while true; do sleep 0.05; done"
            self.proc = subprocess.Popen(["bash", "-c", script])
        else:
            self.proc = subprocess.Popen(["sleep", "300"])
        self.registry = JobRegistry(store.database)
        self.registry.start(job_id, kind, [kind, "run"], self.proc.pid, new=True)
        self.bus = EventBus()
        self.journal = EventJournal(store.path, job_id, self.bus)
        self.emitted_at: dict[str, float] = {}

    def emit(self, *events) -> None:
        for event in events:
            self.bus.emit(event)

    def flush(self) -> None:
        """Wait until what was emitted is in the journal (the writer flushes every 50 ms)."""
        time.sleep(0.15)

    @property
    def got_sigterm(self) -> bool:
        return self.term_mark.exists()

    def end(self) -> None:
        """Its running episodes have ended: the process exits."""
        self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        self.journal.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture(autouse=True)
def quick_job_lookup(monkeypatch):
    monkeypatch.setattr(trsi_tui.attach, "JOBS_EVERY_S", 0.2)


@pytest.fixture
def jobs():
    made: list[FakeJob] = []

    def make(store: Store, job_id: str, kind: str = "pipeline", trap_term: bool = False) -> FakeJob:
        made.append(FakeJob(store, job_id, kind, trap_term))
        return made[-1]

    yield make
    for job in made:
        job.close()


async def wait_until(pilot, condition, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the UI")
        await pilot.pause(0.02)


def text_of(app, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def notes(app) -> list[str]:
    return [n.message for n in app._notifications]  # noqa: SLF001 - Textual keeps shown notifications private


def started_episode(job: FakeJob, episode: str, task: str) -> None:
    job.emit(EpisodeStarted("r", episode, task, "oracle"), EpisodePhase(episode, "agent"))


async def test_an_attached_tui_shows_the_jobs_running_shells_and_a_new_chunk_within_a_second(tmp_path: Path, jobs):
    store = Store(tmp_path / "trsi.db")
    job = jobs(store, "eval-1a2b3c", "eval")
    job.emit(RunStarted("r", "eval", 3))
    started_episode(job, "r-old", "task-old")
    job.emit(SandboxOutput("r-old", "agent", "output", "old output\n"), EpisodeFinished("r", RESULT))
    started_episode(job, "r-a", "task-a")
    job.emit(SandboxOutput("r-a", "agent", "command", "make all"), SandboxOutput("r-a", "agent", "output", "so far\n"))
    job.flush()
    app = create_app(Engine(Config(), store))
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_until(pilot, lambda: app.job is not None)
        await settle(pilot)
        assert "attached: the work runs in job eval-1a2b3c (eval, process" in text_of(app, "#job")
        assert "quitting leaves it running" in text_of(app, "#job")
        assert "Running: 1 episode(s) in 1 run(s)" in text_of(app, "#now")
        assert "r (eval): 1/3 done, 1 passed" in text_of(app, "#now")
        await pilot.press("2")
        assert isinstance(app.screen, SandboxesScreen)
        panes = {p.pane.task: p for p in app.screen.query(ShellPane)}
        # The running episode, with its output so far; the finished one counts in the progress only.
        assert set(panes) == {"task-a"}
        assert panes["task-a"].pane.buffer.plain_lines() == ["$ make all", "so far"]
        assert "1 episode(s) running in job eval-1a2b3c" in text_of(app, "#progress")

        t0 = time.monotonic()
        job.emit(SandboxOutput("r-a", "agent", "output", "\x1b[32mlive chunk\x1b[0m\n"))
        await wait_until(pilot, lambda: "live chunk" in panes["task-a"].pane.buffer.plain_lines(), timeout=5)
        assert time.monotonic() - t0 < 1.0
        await pilot.pause(0.05)
        assert panes["task-a"].lines_drawn >= 3  # drawn on the screen, not only buffered
        assert "attached to job eval-1a2b3c" in app.sub_title


async def test_stage_progress_of_the_job_appears_on_the_dashboard(tmp_path: Path, jobs):
    store = Store(tmp_path / "trsi.db")
    job = jobs(store, "pipeline-000001")
    job.emit(PipelineProgress("Base", "running", "evaluating"), PipelineProgress("Base", "done", "16 episodes"))
    job.emit(RsrProgress(1, "explore", "2/40 episodes"), RsrProgress(1, "explore", "12/40 episodes"))
    job.flush()
    app = create_app(Engine(Config(), store))
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_until(pilot, lambda: app.job is not None)
        await settle(pilot)
        now = text_of(app, "#now")  # caught up: the newest line of each
        assert "Pipeline: Base done: 16 episodes" in now and "RSR round 1: explore: 12/40 episodes" in now
        assert " 2/40" not in now and "Base running" not in now
        job.emit(PipelineProgress("RSR-1", "running", "explore"), RsrProgress(1, "sft", "epoch 1/2"))
        job.emit(TrainingStep("rsr-1", "RSR-1", "sft/loss", 3, 0.25))
        await wait_until(pilot, lambda: "RSR round 1: sft: epoch 1/2" in text_of(app, "#now"), timeout=5)
        await wait_until(pilot, lambda: "Training rsr-1: step 3, loss 0.2500" in text_of(app, "#now"), timeout=5)
        assert "Pipeline: RSR-1 running: explore" in text_of(app, "#now")
        job.registry.finish(job.id, "failed", "CUDA out of memory")
        await wait_until(pilot, lambda: "job pipeline-000001 ended: failed: CUDA out of memory" in text_of(app, "#job"))
        assert "RSR round 1" not in text_of(app, "#now")  # what the job said last is not running now
        assert "job pipeline-000001 ended: failed: CUDA out of memory" in notes(app)


async def test_approving_from_the_attached_tui_unblocks_the_job_waiting_for_it(tmp_path: Path, jobs, monkeypatch):
    monkeypatch.setenv("TRSI_HOME", str(tmp_path))  # `--home` sets it: put back afterwards
    store = Store(tmp_path / "trsi.db")
    runbook = store.runbooks.add(RunbookDraft("task-a", 1, "r-a", "# Goal\nDo it.\n", "fenced-bash"))
    job = jobs(store, "rsr-abcdef", "rsr")
    job.emit(RsrProgress(1, "approval", "waiting for a person to decide 1 runbook(s) in the TUI"))
    job.flush()
    # The job's round, as distill.await_approval does: poll the store until nothing is pending.
    seen = threading.Event()

    def await_approval() -> None:
        reader = Store(tmp_path / "trsi.db")
        while reader.runbooks.list(status="pending") and not seen.is_set():
            time.sleep(0.05)
        seen.set()
        job.emit(RsrProgress(1, "replay", "1 approved runbook(s)"))

    waiter = threading.Thread(target=await_approval, daemon=True)
    waiter.start()

    listed = CliRunner().invoke(cli, ["--home", str(tmp_path), "jobs", "list", "--json", str(tmp_path / "j.json")])
    assert "waiting for approval: 1 runbook(s)" in " ".join(listed.output.split())
    (row,) = json.loads((tmp_path / "j.json").read_text())["jobs"]
    assert row["awaiting_approval"] == 1 and row["doing"].startswith("RSR round 1: approval")

    app = create_app(Engine(Config(), store))
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_until(pilot, lambda: "waiting for approval: 1 runbook(s)" in text_of(app, "#job"))
        await pilot.press("5")
        await settle(pilot)
        assert isinstance(app.screen, RunbooksScreen)
        app.screen.query_one("#runbooks", DataTable).focus()
        await pilot.press("a")
        await settle(pilot)
        assert Store(tmp_path / "trsi.db").runbooks.get(runbook).status == "approved"
        assert seen.wait(5)  # the job saw the decision in the store
        await pilot.press("1")
        await wait_until(pilot, lambda: "RSR round 1: replay" in text_of(app, "#now"), timeout=5)
        await wait_until(pilot, lambda: "waiting for approval" not in text_of(app, "#job"), timeout=5)
    seen.set()


async def test_quitting_with_the_default_choice_leaves_the_job_running(tmp_path: Path, jobs):
    store = Store(tmp_path / "trsi.db")
    job = jobs(store, "rpr-123456", "rpr")
    app = create_app(Engine(Config(), store))
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_until(pilot, lambda: app.job is not None)
        await pilot.press("q")
        assert isinstance(app.screen, ChoiceScreen)
        question = text_of(app, "#question")
        assert "Job rpr-123456 keeps running in the background" in question
        labels = [str(b.label) for b in app.screen.query("Button")]
        assert labels == ["Leave it running and quit", "Stop it and quit", "Cancel"]
        await pilot.press("escape")  # cancel: still attached
        assert app.is_running and app.job is not None
        await pilot.press("q")
        await pilot.press("enter")  # the default: leave it running
        await wait_until(pilot, lambda: not app.is_running, timeout=5)
    time.sleep(0.2)
    assert job.proc.poll() is None  # still alive
    assert job.registry.get(job.id).status == "running"


async def test_stop_it_and_quit_sends_sigterm_and_quits_once_the_job_has_ended(tmp_path: Path, jobs):
    store = Store(tmp_path / "trsi.db")
    job = jobs(store, "eval-654321", "eval", trap_term=True)
    job.emit(RunStarted("r", "eval", 2))
    started_episode(job, "r-a", "task-a")
    job.flush()
    app = create_app(Engine(Config(), store))
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_until(pilot, lambda: app.job is not None and app.live.running)
        await pilot.press("q")
        await pilot.click("#choice-stop")
        stopping = "stopping job eval-654321: waiting for its running episodes to end (1 running: task-a)"
        assert any(stopping in n for n in notes(app))  # said at once
        await wait_until(pilot, lambda: job.got_sigterm, timeout=5)
        await pilot.pause(0.6)
        assert app.is_running and stopping in text_of(app, "#job")  # until the job has ended
        job.end()
        await wait_until(pilot, lambda: not app.is_running, timeout=10)
    assert job.registry.get(job.id).status == "interrupted"  # a fake job records nothing


async def test_stopping_a_sleeping_job_ends_it(tmp_path: Path, jobs):
    store = Store(tmp_path / "trsi.db")
    job = jobs(store, "rsr-999999", "rsr")
    app = create_app(Engine(Config(), store))
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_until(pilot, lambda: app.job is not None)
        await pilot.press("q")
        await pilot.click("#choice-stop")
        assert job.proc.wait(timeout=5) == -signal.SIGTERM
        await wait_until(pilot, lambda: not app.is_running, timeout=10)


async def test_s_stops_the_attached_job_its_end_is_announced_and_a_new_job_is_attached(tmp_path: Path, jobs):
    store = Store(tmp_path / "trsi.db")
    first = jobs(store, "eval-aaaaaa", "eval", trap_term=True)
    first.emit(RunStarted("r", "eval", 2))
    started_episode(first, "r-a", "task-a")
    first.flush()
    app = create_app(Engine(Config(), store))
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_until(pilot, lambda: app.job is not None and app.live.running)
        await settle(pilot)
        await pilot.press("s")
        stopping = "stopping job eval-aaaaaa: waiting for its running episodes to end (1 running: task-a)"
        await wait_until(pilot, lambda: stopping in text_of(app, "#job"), timeout=5)
        await wait_until(pilot, lambda: first.got_sigterm, timeout=5)
        await pilot.pause(0.6)
        assert stopping in text_of(app, "#job")  # shown until the job has ended
        first.end()
        await wait_until(pilot, lambda: app.job is None, timeout=5)
        assert any(n.startswith("job eval-aaaaaa ended: interrupted") for n in notes(app))
        await pilot.pause(0.05)
        assert text_of(app, "#job").startswith("job eval-aaaaaa ended: interrupted")
        assert app.live.panes["r-a"].phase == "ended with job eval-aaaaaa" and not app.live.running

        second = jobs(store, "rsr-bbbbbb", "rsr")  # started later, from another terminal
        await wait_until(pilot, lambda: app.job is not None and app.job.id == "rsr-bbbbbb", timeout=5)
        await pilot.pause(0.05)
        assert "attached: the work runs in job rsr-bbbbbb (rsr, process" in text_of(app, "#job")

        second.registry.finish(second.id, "done", "RSR round 1 done: 4 sample(s)")  # it ends on its own
        await wait_until(pilot, lambda: app.job is None, timeout=5)
        assert "job rsr-bbbbbb ended: done: RSR round 1 done: 4 sample(s)" in notes(app)
        await pilot.press("q")  # nothing attached: quits at once
        await wait_until(pilot, lambda: not app.is_running, timeout=5)


def test_catching_up_leaves_out_finished_episodes_shells_and_superseded_progress(tmp_path: Path):
    store, bus = Store(tmp_path / "trsi.db"), EventBus()
    with EventJournal(store.path, "j", bus):
        bus.emit(RunStarted("r", "eval", 30))
        for i in range(30):
            episode = f"r-{i:02d}"
            bus.emit(EpisodeStarted("r", episode, f"task-{i}", "oracle"))
            bus.emit(EpisodePhase(episode, "agent"))
            for n in range(20):
                bus.emit(SandboxOutput(episode, "agent", "output", f"{episode} line {n}\n"))
            bus.emit(TrainingStep("rsr-1", "RSR-1", "sft/loss", i, 1.0 / (i + 1)))
            if i < 28:  # two still running
                bus.emit(EpisodeFinished("r", replace(RESULT, episode_id=episode, task=f"task-{i}")))
    with sqlite3.connect(store.path) as conn:
        total = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        caught = catch_up(conn, "j", keep_finished=5)
    events = [e.event for e in caught.entries]
    assert caught.after == total and caught.skipped == total - len(events)
    shells = {e.episode_id for e in events if isinstance(e, SandboxOutput)}
    assert shells == {"r-28", "r-29"}  # only the running episodes' output
    started = [e.episode_id for e in events if isinstance(e, EpisodeStarted)]
    assert started == ["r-23", "r-24", "r-25", "r-26", "r-27", "r-28", "r-29"]  # the newest 5 finished, the running
    finished = [e for e in events if isinstance(e, EpisodeFinished)]
    assert len(finished) == 28 and all(f.result.token_ids == () for f in finished)  # every verdict, no trajectory
    assert [e.step for e in events if isinstance(e, TrainingStep)] == [29]
    assert len(events) < 100 < total
