"""Work that outlives the front end that started it: long work started from the TUI runs as a
runner job the TUI attaches to (`[tui] detach`, the default), and a command run in the foreground
of a terminal is a runner job too (listed, journaled, followed, stopped from elsewhere)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from textual.widgets import Input

import trsi_tui.app
import trsi_tui.cli.pipeline
from engine.api import Engine, EvalRequest, PipelineRequest, RsrRequest
from engine.config import Config
from engine.config.paths import REPO_ROOT
from engine.events import EpisodeStarted, PipelineProgress, SandboxOutput
from engine.jobs import read_events
from engine.store import Store
from engine.store.schema import pid_alive
from engine.store.work_lock import hold_work_lock
from tests.conftest import write_task
from tests.test_jobs import _episode_running, _jobs, _suite, _wait_for, invoke
from tests.test_tui_attach import notes, wait_until
from trsi_tui import background
from trsi_tui.app import create_app
from trsi_tui.cli import cli
from trsi_tui.screens.confirm import ChoiceScreen
from trsi_tui.screens.start_run import StartRunScreen

ONLY_TRAIN = '[metadata]\nsplit = "train"\n[agent]\ntimeout_sec = 30\n'  # a suite a pipeline fails on at once


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"  # TRSI_HOME (tests/conftest.py): where a job started here works


@pytest.fixture
def stop_leftover_jobs(home: Path):
    """Jobs a failed test leaves running are stopped, not left to run on."""
    yield
    if (home / "trsi.db").exists():
        for job in Engine.open(str(home)).runner_jobs():
            if job.running and job.pid and job.pid != os.getpid():
                os.kill(job.pid, signal.SIGTERM)


# -- started from the TUI --------------------------------------------------------------------------
async def test_an_eval_started_from_the_tui_runs_as_a_job_that_goes_on_after_the_tui_quits(
    tmp_path: Path, home: Path, stop_leftover_jobs
):
    suite = _suite(tmp_path / "suite", 5, ("slow-a",))
    engine = Engine.open(str(home))
    app = create_app(engine)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("n")
        assert isinstance(app.screen, StartRunScreen)
        app.screen.query_one("#suite", Input).value = str(suite)
        await pilot.click("#start")
        await wait_until(pilot, lambda: app.job is not None, timeout=30)
        job = app.job
        assert job.kind == "eval" and job.pid != os.getpid() and pid_alive(job.pid)
        assert not app.run_in_progress  # nothing runs inside the TUI
        assert job.command[:3] == ("--home", str(home.resolve()), "eval")
        assert any(n.startswith("attached: the work runs in job " + job.id) for n in notes(app))
        # The job's episode streams into the Sandboxes screen through the journal.
        await wait_until(pilot, lambda: [p.task for p in app.live.panes.values()] == ["slow-a"], timeout=30)
        await pilot.press("q")
        assert isinstance(app.screen, ChoiceScreen)
        await pilot.press("enter")  # leave it running and quit
        await wait_until(pilot, lambda: not app.is_running, timeout=5)
    assert engine.runner_job(job.id).status == "running" and pid_alive(job.pid)  # the TUI is gone, the job is not
    ended = engine.wait_runner_job(job.id, timeout=60)
    assert ended is not None and ended.status == "done", ended
    assert "1/1 scored episodes passed" in ended.detail
    (run,) = engine.store.runs.list()
    assert run.status == "finished" and run.success_rate == 1.0


async def test_with_detach_off_work_started_from_the_tui_runs_inside_it(tmp_path: Path, home: Path, stop_leftover_jobs):
    home.mkdir(parents=True)
    (home / "config.toml").write_text("[tui]\ndetach = false\n")
    suite = _suite(tmp_path / "suite", 0, ("quick",))
    engine = Engine.open(str(home))
    app = create_app(engine)
    async with app.run_test(size=(160, 50)) as pilot:
        assert app.start_run(EvalRequest(agent="oracle", tasks=str(suite)))
        assert app.run_in_progress  # in a worker of the app
        await wait_until(pilot, lambda: not app.run_in_progress, timeout=60)
        assert app.job is None
    assert engine.runner_jobs() == []
    assert engine.store.runs.list()[0].success_rate == 1.0


async def test_work_the_tui_cannot_start_while_another_process_holds_the_data_dir_is_refused_saying_why(
    home: Path, stop_leftover_jobs
):
    engine = Engine.open(str(home))
    app = create_app(engine)
    async with app.run_test(size=(160, 50)) as pilot:
        with hold_work_lock(engine.store.path, "the pipeline", job="pipeline-aaaaaa"):
            assert app.start_pipeline()
            await wait_until(pilot, lambda: not app.job_starting, timeout=10)
        assert any("the pipeline (job pipeline-aaaaaa" in n for n in notes(app))
        assert app.job is None and not app.run_in_progress
    assert engine.runner_jobs() == []  # nothing was started


def test_pipeline_run_in_a_terminal_starts_a_job_and_opens_the_tui_attached_to_it(
    tmp_path: Path, home: Path, monkeypatch, stop_leftover_jobs
):
    suite = tmp_path / "suite"  # no eval split: Base fails at once, without a model
    write_task(suite, "only-train", toml=ONLY_TRAIN)
    opened = []

    class App:
        def __init__(self, engine, start_pipeline=None, follow_job=None) -> None:
            opened.append((start_pipeline, follow_job))

        def run(self) -> None:
            pass

    monkeypatch.setattr(trsi_tui.app, "create_app", App)
    monkeypatch.setattr(trsi_tui.cli.pipeline, "sys", SimpleNamespace(stdout=Terminal(), stdin=Terminal()))
    result = CliRunner().invoke(
        cli, ["--home", str(home), "pipeline", "run", "--preset", "home", "--tasks", str(suite)]
    )
    assert result.exit_code == 0, result.output
    ((start_pipeline, job),) = opened
    assert start_pipeline is None and job.kind == "pipeline" and job.pid != os.getpid()  # the work is the job's
    assert job.command == ("--home", str(home.resolve()), "pipeline", "run", "--preset", "home", "--tasks", str(suite),
                           "--headless")  # fmt: skip
    ended = Engine.open(str(home)).wait_runner_job(job.id, timeout=60)
    assert ended.status == "failed" and "no tasks in the eval split" in ended.detail


class Terminal:
    def isatty(self) -> bool:
        return True


def test_a_tui_starts_jobs_only_where_a_job_works_on_its_own_store_and_config(tmp_path: Path, home: Path):
    engine = Engine.open(str(home))
    assert engine.runner_home_args() == ["--home", str(home.resolve())]
    engine.use_config(Config(tasks="curriculum"), keep_tui=True)  # `pipeline run --config X` opening the TUI
    assert engine.runner_home_args() is None  # a job would read the home's config instead: it runs here
    assert Engine(Config(), Store(tmp_path / "other.db")).runner_home_args() is None  # a job would use another store


class Captured(Exception):
    """What the command would run, caught before it runs."""


def test_what_the_tui_starts_as_a_job_is_what_it_would_run_itself(tmp_path: Path, home: Path, monkeypatch):
    """Each request, turned into its trsi-tui command, reaches the engine as the same request."""
    seen: list[object] = []

    def capture(_engine, request):
        seen.append(request)
        raise Captured

    def capture_eval(_engine, tasks, **options):
        seen.append({"tasks": tasks, **options})
        raise Captured

    monkeypatch.setattr(Engine, "run_rsr", capture)
    monkeypatch.setattr(Engine, "run_pipeline", capture)
    monkeypatch.setattr(Engine, "evaluate", capture_eval)
    requests = [
        RsrRequest(
            2, "hf:/m", tasks="t", approval="manual", attempts=3, concurrency=2, seed=1,
            harnesses=("fenced-bash-plain", "fenced-bash-turns"), split="train",
        ),
        PipelineRequest(tasks="t", backend="local", concurrency=3, stop_after="RSR-1", seeds=(0, 2)),
        PipelineRequest(),
    ]  # fmt: skip
    args = [background.rsr_args(requests[0]), *(background.pipeline_args(r) for r in requests[1:])]
    for a in args:
        result = CliRunner().invoke(cli, ["--home", str(home), *a], obj={})
        assert isinstance(result.exception, Captured), result.output
    # The CLI names the config's training seeds where the TUI leaves them to the engine: the same.
    assert seen == [*requests[:2], PipelineRequest(seeds=tuple(Config().pipeline.training_seeds()))]

    eval_request = EvalRequest(agent="oracle", tasks="t", split="eval", only=("x", "y"), seeds=2, attempts=3)
    seen.clear()
    with pytest.raises(Captured):
        Engine.open(str(home)).run_request(eval_request)  # what the TUI runs itself
    result = CliRunner().invoke(cli, ["--home", str(home), *background.eval_args(eval_request)], obj={})
    assert isinstance(result.exception, Captured), result.output
    tui, command = seen
    assert {k: command[k] for k in tui} == tui
    # Options the TUI has no field for: the command leaves them to their defaults too.
    assert {k: v for k, v in command.items() if k not in tui} == {"temperature": None, "seed": 0, "max_turns": None}


# -- run in the foreground of a terminal -----------------------------------------------------------
def _foreground(home: Path, *args: str) -> subprocess.Popen:
    """`trsi-tui --home HOME ARGS` without --detach, as a user's other terminal runs it."""
    return subprocess.Popen(
        [sys.executable, "-m", "trsi_tui.cli", "--home", str(home), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=REPO_ROOT,
    )


async def test_a_foreground_eval_is_a_job_listed_journaled_followed_by_a_tui_and_stopped_from_elsewhere(
    tmp_path: Path, home: Path, stop_leftover_jobs
):
    suite = _suite(tmp_path / "suite", 120, ("sleepy",))
    proc = _foreground(home, "eval", "--tasks", str(suite), "--agent", "oracle", "--backend", "local")
    try:
        job = _wait_for(lambda: next((j for j in _jobs(home).values() if j["pid"] == proc.pid), None), timeout=60)
        assert job["kind"] == "eval" and job["status"] == "running"
        assert job["command"] == ["--home", str(home.resolve()), "eval", "--tasks", str(suite), "--agent", "oracle",
                                  "--backend", "local"]  # fmt: skip

        def journaled_with_command() -> list | None:
            events = [e.event for e in read_events(sqlite3.connect(home / "trsi.db"), job=job["id"])]
            ran = any(isinstance(e, SandboxOutput) and e.text == "bash /solution/solve.sh" for e in events)
            return events if ran else None

        # Its events reach the journal as they happen: the episode's command, while it still sleeps.
        events = _wait_for(journaled_with_command)
        assert [e.task for e in events if isinstance(e, EpisodeStarted)] == ["sleepy"]
        assert _episode_running(home, job["id"])

        app = create_app(Engine.open(str(home)))  # a TUI opened on the same data dir
        async with app.run_test(size=(160, 50)) as pilot:
            await wait_until(pilot, lambda: app.job is not None and app.job.id == job["id"], timeout=10)
            await wait_until(pilot, lambda: "sleepy" in [p.task for p in app.live.running], timeout=10)
            (pane,) = app.live.running
            await wait_until(pilot, lambda: "$ bash /solution/solve.sh" in pane.buffer.plain_lines(), timeout=5)
            await pilot.press("q")
            await pilot.press("enter")  # leave it running
            await wait_until(pilot, lambda: not app.is_running, timeout=5)
        assert proc.poll() is None

        stopped = invoke("jobs", "stop", job["id"], "--timeout", "30", home=home)
        assert stopped.exit_code == 0, stopped.output
        assert f"job {job['id']} stopped: stopped by `trsi-tui jobs stop`" in stopped.output
        assert proc.wait(timeout=30) is not None  # the terminal's command has ended, cleanly
    finally:
        if proc.poll() is None:
            proc.kill()
        output = proc.communicate()[0]
    assert "Traceback" not in output, output
    assert _jobs(home)[job["id"]]["status"] == "stopped"


def test_a_foreground_headless_pipeline_is_a_job_with_its_stage_lines_in_the_journal(tmp_path: Path, home: Path):
    suite = tmp_path / "suite"  # no eval split: Base fails at once, without a model
    write_task(suite, "only-train", toml=ONLY_TRAIN)
    proc = _foreground(home, "pipeline", "run", "--preset", "home", "--tasks", str(suite), "--headless")
    output = proc.communicate(timeout=120)[0]
    assert proc.returncode == 1 and "no tasks in the eval split" in output, output
    (job,) = _jobs(home).values()
    assert job["kind"] == "pipeline" and job["pid"] == proc.pid and job["status"] == "failed"
    assert "no tasks in the eval split" in job["detail"]
    listed = invoke("jobs", "list", home=home)
    assert job["id"] in listed.output and "failed" in listed.output
    attached = invoke("jobs", "attach", job["id"], home=home)  # replays what it printed
    assert "Base failed: PipelineError: no tasks in the eval split" in attached.output
    events = [e.event for e in read_events(sqlite3.connect(home / "trsi.db"), job=job["id"])]
    assert [(e.stage, e.status) for e in events if isinstance(e, PipelineProgress)][-1] == ("Base", "failed")
