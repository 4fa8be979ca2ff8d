"""Dashboard: stored runs and the pipeline's stages (a first, read-only version)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from engine.store import Store

STAGES = ("Base", "RSR-1", "RPR-1", "RSR-2", "RPR-2")


class DashboardScreen(Screen):
    CSS_PATH = "dashboard.tcss"
    BINDINGS = [Binding("r", "refresh", "Refresh", id="dashboard.refresh")]

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="body"):
            yield Static("Pipeline: " + "  ->  ".join(f"{s} (not run)" for s in STAGES), id="pipeline")
            yield Static("Recent runs", classes="title")
            yield DataTable(id="runs", cursor_type="row")
            yield Static(
                "Headless commands: trsi-tui tasks check | trsi-tui eval --agent oracle  (see --help)",
                id="hint",
            )
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#runs", DataTable)
        table.add_columns("run", "kind", "agent", "status", "episodes", "success rate")
        self.action_refresh()

    def action_refresh(self) -> None:
        table = self.query_one("#runs", DataTable)
        table.clear()
        for r in self.store.runs(50):
            rate = "-" if r.success_rate is None else f"{r.success_rate:.1%}"
            table.add_row(r.id, r.kind, r.agent, r.status, str(r.summary.get("episodes", r.total)), rate)
