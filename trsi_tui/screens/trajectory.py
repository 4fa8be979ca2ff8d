"""One stored episode, step by step: the model's reply, the command, what it saw, timing, parse errors.

The final checks and the verdict sit at the bottom. `n`/`p` (or the step list) move between steps.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static

from engine.api import AgentStep, EpisodeDetail
from trsi_tui.loading import StoreLoader
from trsi_tui.safe_text import markup as escape
from trsi_tui.safe_text import one_line
from trsi_tui.widgets.footer import SteadyFooter
from trsi_tui.widgets.table import Table


class TrajectoryScreen(StoreLoader, Screen):
    CSS_PATH = "trajectory.tcss"
    BINDINGS = [
        Binding("n", "step(1)", "Next step", id="trajectory.next"),
        Binding("p", "step(-1)", "Previous step", id="trajectory.previous"),
        Binding("escape", "app.pop_screen", "Back", id="trajectory.back"),
    ]

    def __init__(self, episode_id: str) -> None:
        super().__init__()
        self.episode_id = episode_id
        self.steps: list[AgentStep] = []
        self.index = 0

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="summary")
        with Horizontal(id="split"):
            yield Table(id="steps", cursor_type="row")
            with VerticalScroll(id="step"):
                yield Static("", id="step-detail")
        yield Static("", id="final")
        yield SteadyFooter(compact=True)

    def on_mount(self) -> None:
        engine, episode_id = self.app.engine, self.episode_id
        self.load("episode", lambda: engine.episode_detail(episode_id))

    def show_episode(self, detail: EpisodeDetail) -> None:
        episode, model, checks = detail.episode, detail.model, detail.checks
        self.steps = list(detail.steps)
        head = f"[b]{escape(episode.task)}[/]  episode {escape(episode.id)}  agent {escape(episode.agent)}" + (
            f"  model {escape(model.model)} ({escape(model.harness)})" if model.model else ""
        )
        verdict = (
            f"{'[green]PASS[/]' if episode.success else '[red]FAIL[/]'}  {episode.checks_passed}/"
            f"{episode.checks_total} checks  reward {'-' if episode.reward is None else f'{episode.reward:.2f}'}"
            f"  status {episode.status}  {episode.duration_s:.1f}s"
            + (f"  stop: {episode.stop_reason}" if episode.stop_reason else "")
            + (f"  failure: {episode.failure_mode}" if episode.failure_mode else "")
        )
        self.query_one("#summary", Static).update(head + "\n" + verdict)
        table = self.query_one("#steps", DataTable)
        table.add_columns("#", "command", "exit", "time")
        for i, s in enumerate(self.steps):
            command = s.command or ("(parse error)" if s.parse_error else "(none)")
            exit_text = "timeout" if s.timed_out else ("-" if s.exit_code is None else str(s.exit_code))
            table.add_row(str(i + 1), one_line(command, 40), exit_text, f"{s.duration_s + s.generation_s:.2f}s")
        lines = [f"{'[green]✓[/]' if c.status == 'passed' else '[red]✗[/]'} {escape(c.name)}" for c in checks]
        if episode.error:
            lines.append(f"[red]{escape(episode.error)}[/]")
        self.query_one("#final", Static).update("Final checks: " + ("  ".join(lines) or "none reported"))
        self.show_step(0)
        table.focus()

    def show_step(self, index: int) -> None:
        detail = self.query_one("#step-detail", Static)
        if not self.steps:
            detail.update("[dim]This episode took no steps.[/]")
            return
        self.index = max(0, min(index, len(self.steps) - 1))
        s = self.steps[self.index]
        parts = [f"[b]Step {self.index + 1} of {len(self.steps)}[/]"]
        timing = f"command {s.duration_s:.2f}s"
        if s.generation_s:
            timing = (
                f"generation {s.generation_s:.2f}s ({len(s.token_ids)} tokens, prompt {s.prompt_tokens})  " + timing
            )
        parts.append(f"[dim]{timing}[/]")
        if s.action_text:
            parts += ["[b $accent]Model reply[/]", escape(s.action_text)]
        if s.parse_error:
            parts += [f"[b red]Parse error[/] {escape(s.parse_error)}"]
        if s.command:
            parts += ["[b $accent]Command[/]", "$ " + escape(s.command)]
        exit_text = (
            "timed out"
            if s.timed_out
            else f"exit {s.exit_code}"
            if s.exit_code is not None
            else "no command ran; this is the harness's feedback"
        )
        parts += [f"[b $accent]Observation[/] [dim]({exit_text})[/]", escape(s.output) or "[dim](no output)[/]"]
        detail.update("\n".join(parts))
        table = self.query_one("#steps", DataTable)
        if table.cursor_row != self.index:
            table.move_cursor(row=self.index)

    def action_step(self, delta: int) -> None:
        self.show_step(self.index + delta)

    @on(DataTable.RowHighlighted, "#steps")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row != self.index:
            self.show_step(event.cursor_row)
