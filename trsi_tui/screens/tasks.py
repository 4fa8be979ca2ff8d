"""Tasks: browse a suite, read a task's instruction and checks, and see its stored validation.

Checks are listed as the verifier last reported them (from the newest stored oracle episode);
validation is the newest `tasks check` outcome: the oracle must pass every check, nop must fail.
The pass estimate is the current model's, from the newest RSR round that explored the task
(successes / attempts, and the Laplace estimate RSR plans with).
"""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Header, Select, Static

from engine.api import EvalRequest, Suite, SuiteOverview, Task, TaskDetail, TaskStatus, builtin_tasks_dir
from trsi_tui.loading import StoreLoader
from trsi_tui.safe_text import markup, one_line, plain
from trsi_tui.widgets.footer import SteadyFooter
from trsi_tui.widgets.table import Table


class TasksScreen(StoreLoader, Screen):
    CSS_PATH = "tasks.tcss"
    BINDINGS = [
        Binding("v", "validate", "Validate task", id="tasks.validate"),
        Binding("o", "run_oracle", "Run oracle", id="tasks.oracle"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.suite: Suite | None = None
        self.selected: Task | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        # The built-in and the configured suite now; suites of stored runs join once read (on_mount).
        self.suites = _existing([builtin_tasks_dir(), self.app.engine.suite_path(None)])
        yield Select(
            [(_suite_label(p), str(p)) for p in self.suites], value=str(self.suites[0]), allow_blank=False, id="suite"
        )
        with Horizontal(id="split"):
            yield Table(id="tasks", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="detail"):
                yield Static("", id="task-title")
                # The instruction as the agent receives it, not rendered: Markdown would hide an
                # HTML comment or a link reference, which the model still reads.
                yield Static("", id="instruction")
                yield Static("Checks", classes="title")
                yield Static("", id="checks")
                yield Static("Validation", classes="title")
                yield Static("", id="validation")
        yield Static("", id="suite-errors")
        yield SteadyFooter(compact=True)

    def on_mount(self) -> None:
        self.query_one("#tasks", DataTable).add_columns("task", "split", "difficulty", "valid", "pass est.")
        self.open_suite(self.suites[0])
        engine, shown = self.app.engine, self.suites
        self.load("suites", lambda: _existing([*shown, *engine.stored_suites(200)]))

    def show_suites(self, suites: list[Path]) -> None:
        self.suites = suites
        select = self.query_one("#suite", Select)
        current = select.value
        with self.prevent(Select.Changed):
            select.set_options([(_suite_label(p), str(p)) for p in suites])
            select.value = current
        self.query_one("#tasks", DataTable).focus()

    @on(Select.Changed, "#suite")
    def _suite_changed(self, event: Select.Changed) -> None:
        if event.value and (self.suite is None or str(self.suite.root) != event.value):
            self.open_suite(Path(str(event.value)))

    def open_suite(self, root: Path) -> None:
        engine = self.app.engine
        self.load("suite", lambda: engine.suite_overview(root))

    def show_suite(self, overview: SuiteOverview) -> None:
        self.suite = overview.suite
        table = self.query_one("#tasks", DataTable)
        table.clear()
        for task in self.suite.tasks:
            status = overview.tasks[task.name]
            valid, estimate = _valid_text(status), _estimate_text(status)
            table.add_row(task.name, task.split or "-", task.difficulty, valid, estimate, key=task.name)
        errors = self.query_one("#suite-errors", Static)
        errors.update("\n".join(f"malformed: {markup(str(e.path))}: {markup(e.reason)}" for e in self.suite.errors))
        errors.display = bool(self.suite.errors)
        if self.suite.tasks:
            self.show(self.suite.tasks[0])

    @on(DataTable.RowHighlighted, "#tasks")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if self.suite and event.row_key is not None:
            task = next((t for t in self.suite.tasks if t.name == event.row_key.value), None)
            if task:
                self.show(task)

    def show(self, task: Task) -> None:
        self.selected = task
        self.query_one("#task-title", Static).update(
            f"[b]{markup(task.name)}[/]  split {markup(task.split or '-')} · {markup(task.difficulty)} · agent timeout "
            f"{task.agent_timeout_sec:.0f}s · {task.environment.memory_mb} MB · "
            f"{'internet' if task.environment.allow_internet else 'no network'}\n"
            f"[dim]{markup(_suite_label(self.suite.root))}: {markup(str(task.path.relative_to(self.suite.root)))}[/]"
        )
        self.query_one("#instruction", Static).update(plain(task.instruction))
        engine = self.app.engine
        self.load("task", lambda: engine.task_detail(task.name))

    def show_task(self, detail: TaskDetail) -> None:
        oracle = detail.oracle
        if self.selected is None or self.selected.name != detail.task:
            return
        if oracle is None:
            checks = "[dim]No stored oracle run yet: press o to run the oracle, or v to validate.[/]"
        else:
            rows = [
                f"{'[green]✓[/]' if c.status == 'passed' else '[red]✗[/]'} {markup(c.name)}"
                + (f"  [dim]{markup(one_line(c.message, 80))}[/]" if c.message else "")
                for c in detail.checks
            ]
            checks = "\n".join(rows) or "[dim]The verifier reported no named checks.[/]"
            checks += f"\n[dim](as reported for the oracle in run {oracle.run_id})[/]"
        self.query_one("#checks", Static).update(checks)
        lines = []
        for agent, want, ep in (
            ("oracle", "passes every check", detail.checked_oracle),
            ("nop", "must not succeed", detail.checked_nop),
        ):
            if ep is None:
                lines.append(f"{agent}: not checked ({agent} {want})")
            else:
                lines.append(
                    f"{agent}: {'success' if ep.success else 'no success'} "
                    f"({ep.checks_passed}/{ep.checks_total} checks, {ep.status}) in run {ep.run_id}"
                )
        self.query_one("#validation", Static).update("\n".join(lines))

    def action_validate(self) -> None:
        self._run_on_selected("oracle+nop")

    def action_run_oracle(self) -> None:
        self._run_on_selected("oracle")

    def _run_on_selected(self, what: str) -> None:
        if self.selected is None or self.suite is None:
            return
        if what == "oracle":
            self.app.start_run(EvalRequest(agent="oracle", tasks=str(self.suite.root), only=(self.selected.name,)))
        else:
            self.app.start_check(str(self.suite.root), self.selected.name)


def _suite_label(path: Path) -> str:
    return "built-in suite" if path == builtin_tasks_dir() else str(path)


def _existing(candidates) -> list[Path]:
    """The directories among `candidates`, each once, in order."""
    seen: list[Path] = []
    for path in candidates:
        if path.is_dir() and path not in seen:
            seen.append(path)
    return seen


def _valid_text(status: TaskStatus) -> str:
    return "unchecked" if status.valid is None else ("yes" if status.valid else "NO")


def _estimate_text(status: TaskStatus) -> str:
    """`2/6 0.38 r1`: successes/attempts, the Laplace pass estimate, the RSR round; `-` if never explored."""
    estimate = status.estimate
    if estimate is None:
        return "-"
    return f"{estimate.successes}/{estimate.attempts} {estimate.rate:.2f} r{status.round}"
