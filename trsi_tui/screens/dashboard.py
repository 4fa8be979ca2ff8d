"""Dashboard: the pipeline's stages as stored, what is running now, and recent runs."""

from __future__ import annotations

import time

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Header, Static
from textual_plotext import PlotextPlot

from engine.api import DashboardView, RolloutCurve
from trsi_tui.loading import LiveStoreView
from trsi_tui.messages import JobChanged
from trsi_tui.render import RUN_COLUMNS, SEED_COLUMNS, STAGE_COLUMNS, cluster_line, run_row, seed_rows, stage_rows
from trsi_tui.safe_text import markup as escape
from trsi_tui.widgets.footer import SteadyFooter
from trsi_tui.widgets.table import Table

CLUSTER_EVERY_S = 5.0


class DashboardScreen(LiveStoreView, Screen):
    CSS_PATH = "dashboard.tcss"
    reward_title = ""
    BINDINGS = [Binding("r", "refresh", "Refresh", id="dashboard.refresh")]

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="body"):
            yield Static("Pipeline", classes="title")
            yield Table(id="stages", cursor_type="none", zebra_stripes=True)
            yield Static("Over training seeds (paired: same eval tasks and sampling seeds)", id="seeds-title")
            yield Table(id="seeds", cursor_type="none", zebra_stripes=True)
            yield PlotextPlot(id="reward")
            yield Static("", id="job")
            yield Static("", id="now")
            yield Static("", id="cluster")
            yield Static("Recent runs  (enter: browse its trajectories)", classes="title")
            yield Table(id="runs", cursor_type="row", zebra_stripes=True)
        yield SteadyFooter(compact=True)

    def on_mount(self) -> None:
        stages = self.query_one("#stages", DataTable)
        stages.can_focus = False  # read-only; keys go to the runs table
        stages.add_columns(*STAGE_COLUMNS)
        seeds = self.query_one("#seeds", DataTable)
        seeds.can_focus = False
        seeds.add_columns(*SEED_COLUMNS)
        seeds.display = self.query_one("#seeds-title").display = False  # until a second training seed exists
        self.query_one("#cluster", Static).display = False  # until a cluster reports
        self.query_one("#job", Static).display = False  # until the app follows a detached job
        self.query_one("#runs", DataTable).add_columns(*RUN_COLUMNS)
        self.action_refresh()
        self.query_one("#runs", DataTable).focus()

    def action_refresh(self) -> None:
        self.load("dashboard", self.app.engine.dashboard)
        self._refresh_cluster()
        self._show_now()

    def _refresh_cluster(self) -> None:
        """The cluster's one line, when episodes run on one: asked on a worker thread (each node
        answers over the network), at most every CLUSTER_EVERY_S."""
        engine = self.app.engine
        if not engine.uses_cluster:
            return
        now = time.monotonic()
        if now - self.__dict__.get("_cluster_asked", -CLUSTER_EVERY_S) < CLUSTER_EVERY_S:
            return
        self._cluster_asked = now
        self.load("cluster", lambda: cluster_line(engine.cluster_status()))

    def show_cluster(self, line: str) -> None:
        widget = self.query_one("#cluster", Static)
        widget.update(line)
        widget.display = True

    def show_dashboard(self, data: DashboardView) -> None:
        if data == self.__dict__.get("_shown"):
            self._show_now()
            return  # the store has not changed: keep the tables and the plot
        self._shown = data
        table = self.query_one("#stages", DataTable)
        table.clear()
        # The plain stage names are training seed 0's lineage; other seeds show in the table below.
        for row in stage_rows(data.stages, missing="not run", short=True):
            table.add_row(*row)
        over_seeds = self.query_one("#seeds", DataTable)
        over_seeds.clear()
        for row in seed_rows(data.over_seeds):
            over_seeds.add_row(*row)
        over_seeds.display = self.query_one("#seeds-title").display = bool(data.over_seeds)
        self._plot_reward(data.rollouts)
        runs = self.query_one("#runs", DataTable)
        cursor = runs.cursor_row
        runs.clear()
        for r in data.runs:
            runs.add_row(*run_row(r), key=r.id)
        if runs.row_count:
            runs.move_cursor(row=min(cursor, runs.row_count - 1))
        self._show_now()

    def _plot_reward(self, curve: RolloutCurve) -> None:
        plot = self.query_one("#reward", PlotextPlot)
        plt = plot.plt
        plt.clear_data()
        plt.clear_figure()
        if curve.rounds:
            plt.plot(list(curve.rounds), list(curve.reward), label="reward", marker="braille")
            plt.plot(list(curve.rounds), list(curve.success), label="success", marker="braille")
            if curve.probe_rounds:  # the same tasks and seeds every time: this one shows the actor improving
                plt.plot(list(curve.probe_rounds), list(curve.probe_success), label="probe success", marker="braille")
            plt.ylim(0, 1)
        self.reward_title = (
            f"RPR rollouts: mean reward and success, {len(curve.rounds)} round(s)"
            if curve.rounds
            else "RPR rollouts: no rounds yet"
        )
        plt.title(self.reward_title)
        plot.refresh()

    @on(JobChanged)
    def _job_changed(self) -> None:
        self._show_now()

    def _show_job(self) -> None:
        lines = self.app.job_lines()
        widget = self.query_one("#job", Static)
        widget.update(escape("\n".join(lines)))
        widget.display = bool(lines)

    def _show_now(self) -> None:
        self._show_job()
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
                "The job has reported no progress yet."
                if self.app.job is not None
                else "Nothing running. Press P to run the pipeline, n to start a run, R for an RSR round."
            )
            return
        if active:
            lines.append(f"Running: {len(live.running)} episode(s) in {len(active)} run(s)")
        for r in active:
            lines.append(f"  {r.run_id} ({r.kind}): {r.done}/{r.total} done, {r.successes} passed")
        self.query_one("#now", Static).update("\n".join(lines))

    @on(DataTable.RowSelected, "#runs")
    async def _run_selected(self, event: DataTable.RowSelected) -> None:
        await self.app.show_trajectories(event.row_key.value)
