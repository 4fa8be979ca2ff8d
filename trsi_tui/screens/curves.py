"""Curves: reward and pass rate per episode of a run, training metrics, and pass@1 per pipeline stage.

Everything is read from the store, so curves of runs started elsewhere (headless, another
process) show too; the screen re-reads on live events and every few seconds.
"""

from __future__ import annotations

from collections import defaultdict

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header
from textual_plotext import PlotextPlot

from engine.store.records import PIPELINE_STAGES
from trsi_tui.messages import LiveChanged

REFRESH_S = 3.0


# Of what training logs, the curves a person watches: the rest (timings, counts) is in the store.
PLOTTED = ("sft/loss", "rpr/reward", "ppo/kl", "ppo/value_loss", "ppo/explained_variance", "ppo/entropy")


class CurvesScreen(Screen):
    CSS_PATH = "curves.tcss"
    BINDINGS = [Binding("r", "refresh", "Refresh", id="curves.refresh")]

    def __init__(self) -> None:
        super().__init__()
        self.run_id: str | None = None
        self.titles: dict[str, str] = {}  # plot id -> its current title, as drawn

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="split"):
            yield DataTable(id="runs", cursor_type="row", zebra_stripes=True)
            with Vertical(id="plots"):
                yield PlotextPlot(id="reward")
                yield PlotextPlot(id="training")
                yield PlotextPlot(id="stages")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.query_one("#runs", DataTable).add_columns("run", "kind", "agent")
        self.action_refresh()
        self.set_interval(REFRESH_S, self._tick)

    def on_screen_resume(self) -> None:
        self.action_refresh()

    def _tick(self) -> None:
        if self.is_current:
            self.replot()

    @on(LiveChanged)
    def _live_changed(self, message: LiveChanged) -> None:
        if message.structural:
            self.action_refresh()

    def action_refresh(self) -> None:
        store = self.app.store
        table = self.query_one("#runs", DataTable)
        runs = store.runs.list(100)
        known = {r.id for r in runs}
        table.clear()
        for r in runs:
            table.add_row(r.id, r.kind, r.agent, key=r.id)
        for run_id in store.metrics.runs():  # training runs that log metrics but hold no episodes
            if run_id not in known:
                table.add_row(run_id, "training", "-", key=run_id)
                known.add(run_id)
        if self.run_id not in known:
            self.run_id = runs[0].id if runs else next(iter(known), None)
        if self.run_id is not None:
            table.move_cursor(row=table.get_row_index(self.run_id))
        self.replot()

    @on(DataTable.RowHighlighted, "#runs")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value != self.run_id:
            self.run_id = str(event.row_key.value)
            self.replot()

    def replot(self) -> None:
        store = self.app.store
        reward = self.query_one("#reward", PlotextPlot)
        plt = reward.plt
        plt.clear_data()
        plt.clear_figure()
        episodes = store.runs.episodes(run_id=self.run_id) if self.run_id else []
        scored = [e for e in episodes if e.reward is not None]
        if scored:
            xs = list(range(1, len(scored) + 1))
            passed, rate = 0, []
            for i, e in enumerate(scored, 1):
                passed += int(e.success)
                rate.append(passed / i)
            plt.scatter(xs, [e.reward for e in scored], label="reward", marker="dot")
            plt.plot(xs, rate, label="pass rate (running)")
            plt.ylim(-0.05, 1.05)
            plt.xlabel("scored episode")
        self.titles["reward"] = f"Reward per episode: {self.run_id or 'no runs'} ({len(scored)} scored)"
        plt.title(self.titles["reward"])
        reward.refresh()

        training = self.query_one("#training", PlotextPlot)
        plt = training.plt
        plt.clear_data()
        plt.clear_figure()
        series: dict[str, list[tuple[int, float]]] = defaultdict(list)
        for p in store.metrics.points(self.run_id) if self.run_id else []:
            if p.name in PLOTTED:
                series[p.name].append((p.step, p.value))
        for name, points in series.items():
            plt.plot([s for s, _ in points], [v for _, v in points], label=name)
        self.titles["training"] = "Training metrics: " + (", ".join(series) or "none logged for this run")
        plt.title(self.titles["training"])
        if series:
            plt.xlabel("step")
        training.refresh()

        stages_plot = self.query_one("#stages", PlotextPlot)
        stages = store.stages.all()
        done = [(name, stages[name]) for name in PIPELINE_STAGES if name in stages and stages[name].pass_at_1 is not None]
        stages_plot.display = bool(done)
        if done:
            plt = stages_plot.plt
            plt.clear_data()
            plt.clear_figure()
            plt.bar([n for n, _ in done], [s.pass_at_1 for _, s in done], width=0.3)
            plt.ylim(0, 1)
            plt.title("pass@1 by pipeline stage (held-out eval)")
            stages_plot.refresh()
