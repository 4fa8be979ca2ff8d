"""Start a run: suite, split, tasks, agent or model, harness, backend, concurrency, seeds.

The form checks what it can before anything starts (numbers, a model spec for the model agent,
task names that exist in the suite) and dismisses with an `EvalRequest`, or None on cancel.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Input, Label, Select

from engine.api import HARNESSES, SCRIPTED_AGENTS, EvalRequest
from trsi_tui.screens.form import FormScreen, backend_select, positive

DEFAULT_MODEL = "bundled:smollm2-135m"


class StartRunScreen(FormScreen):
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="start_run.cancel")]
    TITLE_TEXT = "Start a run"

    def form_body(self) -> ComposeResult:
        config = self.engine.config
        agents = [*sorted(SCRIPTED_AGENTS), "model"]
        yield Label("Suite")
        yield Input(config.tasks, placeholder="built-in suite (or a path)", id="suite", compact=True)
        yield Label("Split")
        yield Select(
            [("all", "all"), ("train", "train"), ("eval", "eval")],
            value="all",
            allow_blank=False,
            id="split",
            compact=True,
        )
        yield Label("Tasks")
        yield Input(placeholder="all; or names, comma-separated", id="only", compact=True)
        yield Label("Agent")
        yield Select([(a, a) for a in agents], value="oracle", allow_blank=False, id="agent", compact=True)
        yield Label("Model")
        yield Input(DEFAULT_MODEL, id="model", disabled=True, compact=True)
        yield Label("Harness")
        yield Select(
            [(h, h) for h in sorted(HARNESSES)],
            value=config.pipeline.eval_harness,
            allow_blank=False,
            id="harness",
            disabled=True,
            compact=True,
        )
        yield Label("Backend")
        yield backend_select(config.sandbox.backend)
        yield Label("Concurrency")
        yield Input(str(config.eval.concurrency), type="integer", id="concurrency", compact=True)
        yield Label("Seeds")
        yield Input("1", type="integer", id="seeds", compact=True)

    @on(Select.Changed, "#agent")
    def _agent_changed(self, event: Select.Changed) -> None:
        is_model = event.value == "model"
        self.query_one("#model", Input).disabled = not is_model
        self.query_one("#harness", Select).disabled = not is_model

    def request(self) -> EvalRequest:
        """The form as an EvalRequest; ValueError says which field is wrong and why."""
        suite_path = self.engine.suite_path(self.query_one("#suite", Input).value.strip() or None).expanduser()
        if not suite_path.is_dir():
            raise ValueError(f"Suite: {suite_path} is not a directory")
        split = str(self.query_one("#split", Select).value)
        only = tuple(n.strip() for n in self.query_one("#only", Input).value.split(",") if n.strip())
        if only:
            suite = self.engine.load_suite(suite_path)
            names = {t.name for t in suite.tasks if split == "all" or t.split == split}
            unknown = [n for n in only if n not in names]
            if unknown:
                raise ValueError(
                    f"Tasks: not in this suite{'' if split == 'all' else f' (split {split})'}: " + ", ".join(unknown)
                )
        agent = str(self.query_one("#agent", Select).value)
        model = self.query_one("#model", Input).value.strip() if agent == "model" else None
        if agent == "model" and not model:
            raise ValueError("Model: the model agent needs a model spec, e.g. " + DEFAULT_MODEL)
        concurrency = positive(self.query_one("#concurrency", Input).value, "Concurrency", 64)
        seeds = positive(self.query_one("#seeds", Input).value, "Seeds", 100)
        return EvalRequest(
            agent=agent,
            tasks=str(suite_path),
            split=None if split == "all" else split,
            only=only,
            model=model,
            harness=str(self.query_one("#harness", Select).value),
            backend=str(self.query_one("#backend", Select).value),
            concurrency=concurrency,
            seeds=seeds,
        )
