"""Runbooks: the queue of drafts with both reviews; a person approves, edits in place, or rejects.

Every decision is written to the store at once (the RSR round waiting on manual approval reads
it from there). Editing keeps the original text stored beside the edit.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Header, Input, Select, Static, TextArea

from engine.api import Runbook
from trsi_tui.loading import LiveStoreView
from trsi_tui.safe_text import markup as escape
from trsi_tui.safe_text import printable
from trsi_tui.widgets.footer import SteadyFooter
from trsi_tui.widgets.table import Table

FILTERS = [("pending", "pending"), ("approved", "approved"), ("rejected", "rejected"), ("all", "all")]


class RunbooksScreen(LiveStoreView, Screen):
    CSS_PATH = "runbooks.tcss"
    BINDINGS = [
        Binding("a", "decide('approved')", "Approve", id="runbooks.approve"),
        Binding("x", "decide('rejected')", "Reject", id="runbooks.reject"),
        Binding("e", "edit", "Edit", id="runbooks.edit"),
        Binding("ctrl+s", "save", "Save edit", id="runbooks.save"),
        Binding("escape", "cancel_edit", "Cancel edit", id="runbooks.cancel_edit", show=False),
        Binding("r", "refresh", "Refresh", id="runbooks.refresh"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.current: Runbook | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="split"):
            with Vertical(id="queue"):
                yield Select(FILTERS, value="pending", allow_blank=False, id="status")
                yield Table(id="runbooks", cursor_type="row", zebra_stripes=True)
            with Vertical(id="detail"):
                yield Static("", id="meta")
                yield TextArea("", id="text", read_only=True, language="markdown", show_line_numbers=False)
                yield Static("", id="review")
                yield Input(placeholder="note for approve/reject (optional)", id="note")
        yield SteadyFooter(compact=True)

    def on_mount(self) -> None:
        self.query_one("#runbooks", DataTable).add_columns("id", "task", "round", "status", "leak", "reviewer")
        self.action_refresh()
        self.query_one("#runbooks", DataTable).focus()

    @on(Select.Changed, "#status")
    def _status_changed(self) -> None:
        self.action_refresh()

    def action_refresh(self, select: str | None = None) -> None:
        """Re-read the queue; `select` a runbook by id when it is in the new list."""
        status = self.query_one("#status", Select).value
        engine = self.app.engine
        self.load("runbooks", lambda: (engine.runbooks(str(status)), select))

    def show_runbooks(self, data: tuple) -> None:
        runbooks, select = data
        if select is None and runbooks == list(self.__dict__.get("listed", {}).values()):
            return  # nothing changed: keep the table, the cursor and an edit in progress
        self.listed = {rb.id: rb for rb in runbooks}
        table = self.query_one("#runbooks", DataTable)
        cursor = table.cursor_row
        table.clear()
        for rb in runbooks:
            leak = (
                "-" if rb.leak is None else (f"LEAK {rb.leak.score:.2f}" if rb.leak.leaked else f"{rb.leak.score:.2f}")
            )
            reviewer = "-" if rb.verdict is None else ("approve" if rb.verdict.approve else "reject")
            table.add_row(
                rb.id, rb.task, str(rb.round), rb.status + (" (edited)" if rb.edited else ""), leak, reviewer, key=rb.id
            )
        if runbooks:
            ids = [rb.id for rb in runbooks]
            table.move_cursor(row=ids.index(select) if select in ids else min(cursor, len(runbooks) - 1))
            self.show(self.listed[str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)])
        else:
            self.show(None)

    @on(DataTable.RowHighlighted, "#runbooks")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and (self.current is None or self.current.id != event.row_key.value):
            self.show(self.listed.get(str(event.row_key.value)))

    def show(self, rb: Runbook | None) -> None:
        self.current = rb
        text = self.query_one("#text", TextArea)
        text.read_only = True
        meta = self.query_one("#meta", Static)
        review = self.query_one("#review", Static)
        if rb is None:
            meta.update("[dim]No runbooks with this status. RSR rounds put their drafts here.[/]")
            text.load_text("")
            review.update("")
            return
        meta.update(
            f"[b]{rb.task}[/]  runbook {rb.id}  round {rb.round}  from episode {rb.source_episode_id}"
            f"  harness {rb.harness or '-'}  written by {rb.author or '-'}\nstatus [b]{rb.status}[/]"
            + (f" by {rb.decided_by}" if rb.decided_by else "")
            + (f": {escape(rb.note)}" if rb.note else "")
            + ("  [yellow](edited by a person)[/]" if rb.edited else "")
        )
        text.load_text(printable(rb.text))
        lines = []
        if rb.leak is not None:
            lines.append(
                f"[b]Leak scan[/] score {rb.leak.score:.2f}"
                + (f": [red]{len(rb.leak.matches)} protected fragment(s)[/]" if rb.leak.leaked else ": clean")
            )
            lines += [f"  [red]{escape(m[:100])}[/]" for m in rb.leak.matches[:5]]
        if rb.verdict is not None:
            v = rb.verdict
            flags = (
                f"format {'ok' if v.format_ok else 'BAD'} · artifacts {'named' if v.artifacts_named else 'MISSING'}"
                f" · leakage {'SUSPECTED' if v.leakage_suspected else 'none'}"
            )
            lines.append(f"[b]Reviewer[/] {'[green]approve[/]' if v.approve else '[red]reject[/]'}  {flags}")
            lines += [f"  - {escape(r)}" for r in v.reasons]
        review.update("\n".join(lines) or "[dim]Not reviewed yet.[/]")

    def action_edit(self) -> None:
        if self.current is None:
            return
        text = self.query_one("#text", TextArea)
        text.read_only = False
        text.focus()
        self.notify("Editing: ctrl+s saves, escape cancels.")

    def action_save(self) -> None:
        text = self.query_one("#text", TextArea)
        if self.current is None or text.read_only:
            return
        engine, runbook_id, edited = self.app.engine, self.current.id, text.text
        text.read_only = True
        self.load("saved", lambda: engine.edit_runbook(runbook_id, edited))

    def show_saved(self, runbook: Runbook) -> None:
        self.current = runbook
        self.notify(f"Saved edit of runbook {runbook.id}.")
        self.action_refresh(select=runbook.id)

    def action_cancel_edit(self) -> None:
        text = self.query_one("#text", TextArea)
        if self.current is not None and not text.read_only:
            self.show(self.current)
            self.query_one("#runbooks", DataTable).focus()

    def action_decide(self, status: str) -> None:
        if self.current is None:
            return
        text = self.query_one("#text", TextArea)
        edited = text.text if not text.read_only and text.text != printable(self.current.text) else None
        note_input = self.query_one("#note", Input)
        engine, runbook_id, note = self.app.engine, self.current.id, note_input.value.strip()
        note_input.value = ""
        self.query_one("#runbooks", DataTable).focus()
        self.load("decided", lambda: engine.decide_runbook(runbook_id, status, note=note, edited=edited))

    def show_decided(self, decided: Runbook) -> None:
        self.notify(f"Runbook {decided.id} ({decided.task}) {decided.status}.", markup=False)
        self.action_refresh()
