"""Sandboxes: a grid of live shell panes, one per episode of the work in progress.

Panes of finished episodes stay (with their verdict in the border) until newer episodes push
them out. The focused pane spans two cells; `z` maximizes it to the whole screen.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.screen import Screen
from textual.widgets import Header, Static

from trsi_tui.messages import LiveChanged
from trsi_tui.widgets.footer import SteadyFooter
from trsi_tui.widgets.shell_pane import ShellPane


class SandboxesScreen(Screen):
    CSS_PATH = "sandboxes.tcss"
    BINDINGS = [
        Binding("z", "maximize_pane", "Maximize pane", id="sandboxes.maximize"),
        Binding("x", "clear_finished", "Clear finished", id="sandboxes.clear"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="progress")
        yield Grid(id="panes")
        yield Static("No episodes yet. Press n to start a run.", id="empty")
        yield SteadyFooter(compact=True)

    def on_mount(self) -> None:
        self.reconcile()

    def on_screen_resume(self) -> None:
        self.reconcile()

    @on(LiveChanged)
    def _live_changed(self, message: LiveChanged) -> None:
        if message.structural:
            self.reconcile()
        else:
            for pane in self.query(ShellPane):
                if pane.episode_id in message.episode_ids:
                    pane.sync()
        self._show_progress()

    def reconcile(self) -> None:
        """Make the grid show exactly the app's live panes, in order, reusing mounted widgets."""
        live = self.app.live
        grid = self.query_one("#panes", Grid)
        mounted = {p.episode_id: p for p in grid.query(ShellPane)}
        for episode_id, pane in list(mounted.items()):
            if episode_id not in live.panes:
                pane.remove()
        for episode_id, state in live.panes.items():
            if episode_id in mounted:
                mounted[episode_id].sync()
            else:
                grid.mount(ShellPane(state, id=f"pane-{_dom_id(episode_id)}"))
        count = len(live.panes)
        grid.styles.grid_size_columns = 1 if count <= 1 else 2 if count <= 4 else 3
        grid.styles.grid_rows = "1fr" if count <= 6 else "14"
        self.query_one("#empty").display = not live.panes
        grid.display = bool(live.panes)
        self._show_progress()

    def _show_progress(self) -> None:
        live = self.app.live
        running = len(live.running)
        runs = [r for r in live.runs.values() if not r.finished]
        text = f"{running} episode(s) running"
        if self.app.job is not None:
            text += f" in job {self.app.job.id}"
        for r in runs:
            text += f"  |  run {r.run_id} ({r.kind}): {r.done}/{r.total} done, {r.successes} passed"
        if text != self.__dict__.get("_progress"):  # an update lays the screen out again: only on a change
            self._progress = text
            self.query_one("#progress", Static).update(text)

    def action_maximize_pane(self) -> None:
        if self.maximized is not None:
            self.minimize()
        elif isinstance(self.focused, ShellPane):
            self.maximize(self.focused)

    def action_clear_finished(self) -> None:
        live = self.app.live
        for key in [k for k, p in live.panes.items() if p.finished]:
            del live.panes[key]
        self.reconcile()


def _dom_id(episode_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in episode_id)
