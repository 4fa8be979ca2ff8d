"""Trajectories: stored episodes, filtered by run, task and outcome; enter opens one to step through."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import DataTable, Header, Input, Select, Static

from trsi_tui.loading import LiveStoreView
from trsi_tui.screens.trajectory import TrajectoryScreen
from trsi_tui.widgets.footer import SteadyFooter
from trsi_tui.widgets.table import Table

OUTCOMES = [("all outcomes", "all"), ("passed", "passed"), ("failed", "failed"), ("infra errors", "infra")]


class TrajectoriesScreen(LiveStoreView, Screen):
    CSS_PATH = "trajectories.tcss"
    BINDINGS = [
        Binding("r", "refresh", "Refresh", id="trajectories.refresh"),
        Binding("slash", "focus_task_filter", "Filter task", id="trajectories.filter", key_display="/"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="filters"):
            yield Select([], prompt="all runs", id="run")
            yield Input(placeholder="task name contains…", id="task")
            yield Select(OUTCOMES, value="all", allow_blank=False, id="outcome")
        yield Table(id="episodes", cursor_type="row", zebra_stripes=True)
        yield Static("", id="count")
        yield SteadyFooter(compact=True)

    def on_mount(self) -> None:
        self.query_one("#episodes", DataTable).add_columns(
            "episode", "task", "agent", "status", "success", "checks", "reward", "failure", "time"
        )
        self._load_runs()
        self.query_one("#episodes", DataTable).focus()

    def on_screen_resume(self) -> None:
        self._load_runs()

    def _load_runs(self, then_show: str | None = None) -> None:
        engine = self.app.engine
        self.load("runs", lambda: (engine.runs(200), then_show))

    def show_runs(self, data: tuple) -> None:
        runs, then_show = data
        select = self.query_one("#run", Select)
        current = then_show or (None if select.is_blank() else select.value)
        with self.prevent(Select.Changed):
            select.set_options([(f"{r.id}  {r.kind} {r.agent}", r.id) for r in runs])
            if current is not None and any(r.id == current for r in runs):
                select.value = current
        self.action_refresh()

    def filter_run(self, run_id: str) -> None:
        self._load_runs(then_show=run_id)

    @on(Select.Changed)
    @on(Input.Changed, "#task")
    def _filters_changed(self) -> None:
        self.action_refresh()

    def action_refresh(self) -> None:
        select = self.query_one("#run", Select)
        run = None if select.is_blank() else str(select.value)
        engine = self.app.engine
        self.load("episodes", lambda: engine.episodes(run))

    def show_episodes(self, episodes: list) -> None:
        needle = self.query_one("#task", Input).value.strip().lower()
        outcome = self.query_one("#outcome", Select).value
        shown = []
        for e in episodes:
            kind = "infra" if e.reward is None else ("passed" if e.success else "failed")
            if needle and needle not in e.task.lower():
                continue
            if outcome != "all" and kind != outcome:
                continue
            shown.append(e)
        rows = [
            (
                e.id,
                e.task,
                e.agent,
                e.status,
                "yes" if e.success else "no",
                f"{e.checks_passed}/{e.checks_total}",
                "-" if e.reward is None else f"{e.reward:.2f}",
                e.failure_mode or "-",
                f"{e.duration_s:.1f}s",
            )
            for e in shown
        ]
        if rows == self.__dict__.get("_rows"):
            return  # a refresh that found nothing new: keep the table (and the cursor) as it is
        self._rows = rows
        table = self.query_one("#episodes", DataTable)
        table.clear()
        for row in rows:
            table.add_row(*row, key=row[0])
        self.query_one("#count", Static).update(f"{len(shown)} of {len(episodes)} episode(s)")

    def action_focus_task_filter(self) -> None:
        self.query_one("#task", Input).focus()

    @on(DataTable.RowSelected, "#episodes")
    def _open(self, event: DataTable.RowSelected) -> None:
        self.app.push_screen(TrajectoryScreen(str(event.row_key.value)))
