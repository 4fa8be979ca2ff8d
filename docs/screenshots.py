"""Regenerate the TUI screenshots in docs/screenshots/ from the test fixture store.

    .venv/bin/python docs/screenshots.py

Uses the same data as the snapshot tests (tests/tui_data.py), so the pictures show what the
tests pin down.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.api import Engine  # noqa: E402
from engine.config import Config  # noqa: E402
from tests.test_tui_snapshots import SIZE, feed_live_episodes  # noqa: E402
from tests.tui_data import EVAL_RUN, build_store, settle  # noqa: E402
from trsi_tui.app import create_app  # noqa: E402

OUT = ROOT / "docs" / "screenshots"


async def shoot() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(Engine(Config(), build_store(Path(tmp) / "db.sqlite")))
        async with app.run_test(size=SIZE) as pilot:

            async def save(name: str) -> None:
                await settle(pilot)
                await pilot.pause(0.3)
                app.save_screenshot(str(OUT / f"{name}.svg"))
                print(OUT / f"{name}.svg")

            await save("dashboard")
            await pilot.press("2")
            feed_live_episodes(app)
            await save("sandboxes")
            await pilot.press("3")
            await settle(pilot)
            table = app.screen.query_one("#tasks")
            table.move_cursor(row=table.get_row_index("count-lines-1"))
            await save("tasks")
            await pilot.press("4")
            await save("trajectories")
            app.screen.filter_run(EVAL_RUN)
            await settle(pilot)
            app.screen.query_one("#episodes").focus()
            await pilot.press("enter")
            await settle(pilot)
            await pilot.press("n")
            await save("trajectory")
            await pilot.press("escape", "5", "down")
            await save("runbooks")
            await pilot.press("6")
            await save("curves")
            await pilot.press("n")
            await save("start-run")
            await pilot.press("escape", "question_mark")
            await save("help")


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    asyncio.run(shoot())
