"""Start (or resume) an RSR round: round number, actor model, suite, approval, attempts, backend."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from engine.api import Engine, RsrRequest
from engine.policy import PolicyError, parse_model_spec
from trsi_tui.screens.start_run import DEFAULT_MODEL, _positive, backend_select


class StartRsrScreen(ModalScreen[RsrRequest | None]):
    CSS_PATH = "start_run.tcss"
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="start_rsr.cancel")]

    def __init__(self, engine: Engine) -> None:
        super().__init__()
        self.engine = engine

    def compose(self) -> ComposeResult:
        config = self.engine.config
        with Vertical(id="form"):
            yield Static("Run an RSR round (a stopped round resumes with the same number)", id="form-title")
            with Grid(id="fields"):
                yield Label("Round")
                yield Input(str(self.engine.store.next_rsr_round()), type="integer", id="round", compact=True)
                yield Label("Model")
                yield Input(DEFAULT_MODEL, id="model", compact=True)
                yield Label("Suite")
                yield Input(config.tasks, placeholder="built-in suite (or a path)", id="suite", compact=True)
                yield Label("Approval")
                yield Select([("auto", "auto"), ("manual (Runbooks screen)", "manual")], value=config.rsr.approval,
                             allow_blank=False, id="approval", compact=True)
                yield Label("Attempts")
                yield Input(str(config.rsr.attempts), type="integer", id="attempts", compact=True)
                yield Label("Backend")
                yield backend_select(config.sandbox.backend)
                yield Label("Concurrency")
                yield Input(str(config.eval.concurrency), type="integer", id="concurrency", compact=True)
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
        except (ValueError, PolicyError) as exc:
            self.query_one("#form-error", Static).update(f"[red]{exc}[/]")
            return
        self.dismiss(request)

    def request(self) -> RsrRequest:
        model = self.query_one("#model", Input).value.strip()
        spec = parse_model_spec(model)  # a bad spec is reported here, before anything starts
        if spec.kind not in ("bundled", "hf"):
            raise ValueError("Model: RSR trains the actor, so it needs bundled:NAME or hf:PATH")
        suite = self.engine.suite_path(self.query_one("#suite", Input).value.strip() or None)
        if not suite.is_dir():
            raise ValueError(f"Suite: {suite} is not a directory")
        return RsrRequest(
            round=_positive(self.query_one("#round", Input).value, "Round", 1000), model=model, tasks=str(suite),
            approval=str(self.query_one("#approval", Select).value),
            attempts=_positive(self.query_one("#attempts", Input).value, "Attempts", 64),
            backend=str(self.query_one("#backend", Select).value),
            concurrency=_positive(self.query_one("#concurrency", Input).value, "Concurrency", 64),
        )
