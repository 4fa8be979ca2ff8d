"""Snapshots of every screen at a fixed size with the fixture store (pytest-textual-snapshot).

After an intended change to a screen, regenerate with
`python -m pytest tests/test_tui_snapshots.py --snapshot-update` and review the SVG diffs.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from engine.api import Engine
from engine.config import Config
from engine.events import EpisodeFinished, EpisodePhase, EpisodeStarted, RunStarted, SandboxOutput
from tests.tui_data import EVAL_RUN, _checks, _episode, build_store, settle
from trsi_tui.app import create_app

SIZE = (120, 36)


@pytest.fixture
def app(tmp_path: Path):
    return create_app(Engine(Config(), build_store(tmp_path / "db.sqlite")))


def feed_live_episodes(app) -> None:
    """Three episodes through the app's real event path: ANSI colour, a progress line, a verdict."""
    emit = app._on_bus_event  # noqa: SLF001 - the app's bus listener, called as the bus would
    emit(RunStarted("live01", "eval", 3))
    for i, task in enumerate(["count-lines-1", "copy-file-1", "sort-unique-1"]):
        emit(EpisodeStarted("live01", f"live01-{i}", task, "model"))
        emit(EpisodePhase(f"live01-{i}", "agent"))
        emit(SandboxOutput(f"live01-{i}", "agent", "command", "ls --color=always /app"))
        emit(
            SandboxOutput(
                f"live01-{i}", "agent", "output", "\x1b[01;34mdata\x1b[0m  input.txt  \x1b[01;32mrun.sh\x1b[0m\n"
            )
        )
        emit(SandboxOutput(f"live01-{i}", "agent", "command", "pip download tool"))
        emit(SandboxOutput(f"live01-{i}", "agent", "output", "progress  10%\rprogress  55%\rprogress 100%\n"))
    result = _episode("live01", 0, "count-lines-1", "model", success=True, checks=_checks(("a", True), ("b", True)))
    emit(EpisodeFinished("live01", replace(result, episode_id="live01-0")))


def keys(*pressed: str):
    """A run_before that presses keys once the screens' store reads have landed, and settles again."""

    async def run_before(pilot) -> None:
        await settle(pilot)
        for key in pressed:
            await pilot.press(key)
            await settle(pilot)

    return run_before


def test_dashboard(snap_compare, app):
    assert snap_compare(app, terminal_size=SIZE, run_before=keys())


def test_sandboxes_streaming(snap_compare, app):
    async def run_before(pilot) -> None:
        await pilot.press("2")
        feed_live_episodes(pilot.app)
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_tasks(snap_compare, app):
    async def run_before(pilot) -> None:
        await pilot.press("3")
        await settle(pilot)
        table = pilot.app.screen.query_one("#tasks")
        table.move_cursor(row=table.get_row_index("count-lines-1"))
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_trajectories(snap_compare, app):
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("4"))


def test_trajectory_step(snap_compare, app):
    async def run_before(pilot) -> None:
        await pilot.press("4")
        await settle(pilot)
        pilot.app.screen.filter_run(EVAL_RUN)
        await settle(pilot)
        pilot.app.screen.query_one("#episodes").focus()
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("n")

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_runbooks(snap_compare, app):
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("5", "down"))


def test_curves(snap_compare, app):
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("6"))


def test_start_run_form(snap_compare, app):
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("n"))


def test_help(snap_compare, app):
    assert snap_compare(app, terminal_size=SIZE, run_before=keys("question_mark"))


def test_sandboxes_hostile_text(snap_compare, app):
    """A multi-line command with screen clears, cursor moves and OSC sequences, as the model wrote
    it: the pane shows plain wrapped lines and every border stays intact."""
    from tests.test_tui_hostile_text import HOSTILE_COMMAND, HOSTILE_OUTPUT

    async def run_before(pilot) -> None:
        await pilot.press("2")
        emit = pilot.app._on_bus_event  # noqa: SLF001 - the app's bus listener, called as the bus would
        emit(RunStarted("hostile", "eval", 2))
        for i in range(2):
            emit(EpisodeStarted("hostile", f"hostile-{i}", f"task-{i}", "model"))
            emit(SandboxOutput(f"hostile-{i}", "agent", "command", HOSTILE_COMMAND))
            emit(SandboxOutput(f"hostile-{i}", "agent", "output", HOSTILE_OUTPUT))
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
