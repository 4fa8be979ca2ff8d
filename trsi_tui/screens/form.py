"""What the start forms share: a modal that dismisses with a request built from its fields.

A subclass yields its fields with `form_body()` and turns them into a request in `request()`;
a ValueError there is shown in the form, and nothing starts.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Select, Static

from engine.api import Engine
from sandboxes import available_backends


class FormScreen(ModalScreen):
    CSS_PATH = "form.tcss"
    TITLE_TEXT = ""

    def __init__(self, engine: Engine) -> None:
        super().__init__()
        self.engine = engine

    def form_body(self) -> ComposeResult:
        raise NotImplementedError

    def request(self):
        raise NotImplementedError

    def compose(self) -> ComposeResult:
        with Vertical(id="form"):
            yield Static(self.TITLE_TEXT, id="form-title")
            with Grid(id="fields"):
                yield from self.form_body()
            yield Static("", id="form-error")
            with Horizontal(id="buttons"):
                yield Button("Start", variant="primary", id="start")
                yield Button("Cancel", id="cancel")

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#start")
    def _start(self) -> None:
        try:
            request = self.request()
        except ValueError as exc:
            self.query_one("#form-error", Static).update(f"[red]{exc}[/]")
            return
        self.dismiss(request)


def backend_select(configured: str) -> Select:
    """The sandbox backends usable here, the configured one first choice."""
    backends = available_backends() or [configured]
    return Select(
        [(b, b) for b in backends],
        value=configured if configured in backends else backends[0],
        allow_blank=False,
        id="backend",
        compact=True,
    )


def positive(text: str, field: str, most: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{field}: a whole number from 1 to {most}, not {text!r}") from None
    if not 1 <= value <= most:
        raise ValueError(f"{field}: a whole number from 1 to {most}, not {value}")
    return value
