"""Dashboard: the pipeline's stages as stored, what is running now, and recent runs."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static
from textual_plotext import PlotextPlot

from engine.store.records import PIPELINE_STAGES
from trsi_tui.messages import LiveChanged


class DashboardScreen(Screen):
    CSS_PATH = "dashboard.tcss"
    reward_title = ""
    BINDINGS = [
        Binding("r", "refresh", "Refresh", id="dashboard.refresh"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="body"):
            yield Static("Pipeline", classes="title")
            yield DataTable(id="stages", cursor_type="none", zebra_stripes=True)
            yield PlotextPlot(id="reward")
            yield Static("", id="now")
            yield Static("Recent runs  (enter: browse its trajectories)", classes="title")
            yield DataTable(id="runs", cursor_type="row", zebra_stripes=True)
        yield Footer(compact=True)

    def on_mount(self) -> None:
        stages = self.query_one("#stages", DataTable)
        stages.can_focus = False  # read-only; keys go to the runs table
        stages.add_columns("stage", "status", "pass@1 [95% CI]", "checkpoint", "detail")
        self.query_one("#runs", DataTable).add_columns("run", "kind", "agent", "status", "episodes", "success",
                                                       "pass@1 [95% CI]", "started")
        self.action_refresh()
        self.query_one("#runs", DataTable).focus()

    def on_screen_resume(self) -> None:
        self.action_refresh()

    @on(LiveChanged)
    def _live_changed(self, message: LiveChanged) -> None:
        if message.structural:
            self.action_refresh()

    def action_refresh(self) -> None:
        store = self.app.store
        stages = store.stages.all()
        table = self.query_one("#stages", DataTable)
        table.clear()
        for name in PIPELINE_STAGES:
            s = stages.get(name)
            if s is None:
                table.add_row(name, "not run", "-", "-", "")
            else:
                table.add_row(name, s.status, s.pass_text, _short(s.checkpoint), s.detail or "")
        self._plot_reward()
        runs = self.query_one("#runs", DataTable)
        cursor = runs.cursor_row
        runs.clear()
        for r in store.runs.list(50):
            s = r.summary
            rate = "-" if r.success_rate is None else f"{r.success_rate:.1%}"
            p1 = "-"
            if s.get("pass_at_1") is not None:
                lo, hi = s.get("ci95") or (None, None)
                p1 = f"{s['pass_at_1']:.3f}" + (f" [{lo:.3f}, {hi:.3f}]" if lo is not None else "")
            runs.add_row(r.id, r.kind, r.agent, r.status, str(s.get("episodes", r.total)), rate, p1,
                         r.created_at.replace("T", " ")[:19], key=r.id)
        if runs.row_count:
            runs.move_cursor(row=min(cursor, runs.row_count - 1))
        self._show_now()

    def _plot_reward(self) -> None:
        """RPR rollout reward and success per round, stage after stage."""
        plot = self.query_one("#reward", PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        store = self.app.store
        xs, rewards, success, offset = [], [], [], 0
        for run in (r for r in store.metrics.runs() if r.startswith("rpr-")):
            points = {p.step: p.value for p in store.metrics.points(run, "rpr/reward")}
            wins = {p.step: p.value for p in store.metrics.points(run, "rpr/success")}
            for step in sorted(points):
                xs.append(offset + step)
                rewards.append(points[step])
                success.append(wins.get(step, 0.0))
            offset += max(points, default=0)
        if xs:
            plt.plot(xs, rewards, label="reward", marker="braille")
            plt.plot(xs, success, label="success", marker="braille")
            plt.ylim(0, 1)
        self.reward_title = (f"RPR rollouts: mean reward and success, {len(xs)} round(s)" if xs
                             else "RPR rollouts: no rounds yet")
        plt.title(self.reward_title)
        plot.refresh()

    def _show_now(self) -> None:
        live = self.app.live
        active = [r for r in live.runs.values() if not r.finished]
        lines = []
        if live.pipeline is not None:
            stage, status, detail = live.pipeline
            lines.append(f"Pipeline: {stage} {status}: {detail}")
        lines += [f"RSR round {n}: {stage}: {detail}" for n, (stage, detail) in sorted(live.rsr.items())]
        lines += [f"RPR stage {n}: {detail}" for n, detail in sorted(live.rpr.items())]
        lines += [f"Training {run}: step {step}, loss {loss:.4f}" for run, (step, loss) in live.training.items()]
        if not active and not lines:
            self.query_one("#now", Static).update(
                "Nothing running. Press P to run the pipeline, n to start a run, R for an RSR round.")
            return
        if active:
            lines.append(f"Running: {len(live.running)} episode(s) in {len(active)} run(s)")
        for r in active:
            lines.append(f"  {r.run_id} ({r.kind}): {r.done}/{r.total} done, {r.successes} passed")
        self.query_one("#now", Static).update("\n".join(lines))

    @on(DataTable.RowSelected, "#runs")
    async def _run_selected(self, event: DataTable.RowSelected) -> None:
        await self.app.show_trajectories(event.row_key.value)


def _short(checkpoint: str) -> str:
    """A checkpoint spec without the long directory part of its adapter path."""
    if not checkpoint:
        return "-"
    head, sep, path = checkpoint.partition("=")
    if not sep:
        return checkpoint
    parts = path.split("/")
    return head + sep + ".../" + "/".join(parts[-3:]) if len(parts) > 3 else checkpoint
