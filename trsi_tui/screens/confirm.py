"""Questions as modals: yes or no (`ConfirmScreen`), or one of several answers (`ChoiceScreen`)."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmScreen(ModalScreen[bool]):
    CSS_PATH = "confirm.tcss"
    BINDINGS = [Binding("escape", "dismiss(False)", "Cancel", id="confirm.cancel")]

    def __init__(self, question: str, *, yes: str = "Yes", no: str = "No") -> None:
        super().__init__()
        self.question, self.yes, self.no = question, yes, no

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.question, id="question")
            with Horizontal(id="buttons"):
                yield Button(self.yes, variant="error", id="yes")
                yield Button(self.no, variant="primary", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")


class ChoiceScreen(ModalScreen[str]):
    """A question with several answers as a modal; dismisses with the chosen answer's key, or
    `cancel` on escape. The `default` answer has the focus (enter picks it)."""

    CSS_PATH = "confirm.tcss"
    BINDINGS = [Binding("escape", "dismiss('cancel')", "Cancel", id="choice.cancel")]

    def __init__(self, question: str, choices: list[tuple[str, str]], *, default: str, danger: str = "") -> None:
        """`choices`: (key, label) in the order shown; `danger`: the key of the answer drawn in red."""
        super().__init__()
        self.question, self.choices, self.default, self.danger = question, choices, default, danger

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.question, id="question")
            with Horizontal(id="buttons"):
                for key, label in self.choices:
                    variant = "error" if key == self.danger else "primary" if key == self.default else "default"
                    yield Button(label, variant=variant, id=f"choice-{key}")

    def on_mount(self) -> None:
        self.query_one(f"#choice-{self.default}", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(str(event.button.id).removeprefix("choice-"))
