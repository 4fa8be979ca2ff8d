"""The TUI built by its factory around an injected engine and store."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable

from engine.api import Engine
from engine.config import Config
from engine.store import Store
from trsi_tui.app import create_app


async def test_dashboard_lists_stored_runs(tmp_path: Path):
    store = Store(tmp_path / "db.sqlite")
    run_id = store.create_run("eval", backend="local", agent="oracle", tasks_path="x", total=2, config={})
    store.finish_run(run_id, "finished", {"success_rate": 0.5, "episodes": 2})
    app = create_app(Engine(Config(), store))
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.screen.query_one("#runs", DataTable)
        assert table.row_count == 1
        row = table.get_row_at(0)
        assert row[0] == run_id and row[-1] == "50.0%"
        await pilot.press("q")
    assert not app.is_running
