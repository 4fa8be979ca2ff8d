"""Start (or resume) an RSR round: round number, actor model, suite, approval, attempts, backend."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Input, Label, Select

from engine.api import PolicyError, RsrRequest, parse_model_spec
from trsi_tui.loading import StoreLoader
from trsi_tui.screens.form import FormScreen, backend_select, positive
from trsi_tui.screens.start_run import DEFAULT_MODEL


class StartRsrScreen(StoreLoader, FormScreen):
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="start_rsr.cancel")]
    TITLE_TEXT = "Run an RSR round (a stopped round resumes with the same number)"

    def form_body(self) -> ComposeResult:
        config = self.engine.config
        yield Label("Round")
        # The next unused round number is proposed once read from the store (on_mount).
        yield Input("", placeholder="next round", type="integer", id="round", compact=True)
        yield Label("Model")
        yield Input(DEFAULT_MODEL, id="model", compact=True)
        yield Label("Suite")
        yield Input(config.tasks, placeholder="built-in suite (or a path)", id="suite", compact=True)
        yield Label("Approval")
        yield Select(
            [("auto", "auto"), ("manual (Runbooks screen)", "manual")],
            value=config.rsr.approval,
            allow_blank=False,
            id="approval",
            compact=True,
        )
        yield Label("Attempts")
        yield Input(str(config.rsr.attempts), type="integer", id="attempts", compact=True)
        yield Label("Backend")
        yield backend_select(config.sandbox.backend)
        yield Label("Concurrency")
        yield Input(str(config.eval.concurrency), type="integer", id="concurrency", compact=True)

    def on_mount(self) -> None:
        self.load("next_round", self.engine.next_rsr_round)

    def show_next_round(self, round: int) -> None:
        field = self.query_one("#round", Input)
        if not field.value:
            field.value = str(round)

    def request(self) -> RsrRequest:
        model = self.query_one("#model", Input).value.strip()
        try:
            spec = parse_model_spec(model)  # a bad spec is reported here, before anything starts
        except PolicyError as exc:
            raise ValueError(str(exc)) from None
        if spec.kind not in ("bundled", "hf"):
            raise ValueError("Model: RSR trains the actor, so it needs bundled:NAME or hf:PATH")
        suite = self.engine.suite_path(self.query_one("#suite", Input).value.strip() or None)
        if not suite.is_dir():
            raise ValueError(f"Suite: {suite} is not a directory")
        return RsrRequest(
            round=positive(self.query_one("#round", Input).value, "Round", 1000),
            model=model,
            tasks=str(suite),
            approval=str(self.query_one("#approval", Select).value),
            attempts=positive(self.query_one("#attempts", Input).value, "Attempts", 64),
            backend=str(self.query_one("#backend", Select).value),
            concurrency=positive(self.query_one("#concurrency", Input).value, "Concurrency", 64),
        )
