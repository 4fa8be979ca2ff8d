"""The help screen: what each screen is for, and every active key with its binding id.

The ids are what `[tui.keymap]` in the config file remaps, e.g. `"app.screen.runbooks" = "f5"`.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from trsi_tui.widgets.table import Table

SCREEN_GUIDE = """\
[b]1 Dashboard[/]  pipeline stages, what runs now, recent runs (enter: its trajectories)
[b]2 Sandboxes[/]  live shells of running episodes; tab focuses (and enlarges) a pane, z maximizes
[b]3 Tasks[/]  suites, instructions, checks and oracle/nop validation
[b]4 Trajectories[/]  stored episodes; enter steps through one
[b]5 Runbooks[/]  runbook drafts and reviews: approve, edit, reject
[b]6 Curves[/]  reward, pass rate and training curves per run
[b]n[/] start a run   [b]R[/] run an RSR round   [b]s[/] stop it   [b]ctrl+p[/] command palette   [b]q[/] quit
Remap keys in the config file ([b]trsi-tui config path[/]) under [b][tui.keymap][/] by binding id."""


class HelpScreen(ModalScreen[None]):
    CSS_PATH = "help.tcss"
    BINDINGS = [
        Binding("escape", "dismiss", "Close", id="help.close"),
        Binding("question_mark", "dismiss", "Close", id="help.close_again", show=False),
    ]

    def __init__(self, bindings: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self.rows = bindings

    def compose(self) -> ComposeResult:
        with Vertical(id="help"):
            yield Static("trsi-tui help", id="help-title")
            yield Static(SCREEN_GUIDE, id="guide")
            yield Table(id="keys", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        table = self.query_one("#keys", DataTable)
        table.add_columns("key", "action", "binding id")
        for key, binding_id, description in self.rows:
            table.add_row(key, description, binding_id)
