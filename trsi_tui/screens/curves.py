"""Curves: reward and pass rate per episode of a run, training metrics, and pass@1 per pipeline stage.

Everything is read from the store, so curves of runs started elsewhere (headless, another
process) show too. The screen reads on live events and every few seconds, off the UI thread,
and incrementally: only the episodes and metric points stored since its last read of the run.
"""

from __future__ import annotations

from collections import defaultdict

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Header
from textual_plotext import PlotextPlot

from engine.api import CurveRun, RunCurvesUpdate, StagePasses
from trsi_tui.loading import LiveStoreView
from trsi_tui.widgets.footer import SteadyFooter
from trsi_tui.widgets.table import Table

REFRESH_S = 3.0


class CurvesScreen(LiveStoreView, Screen):
    CSS_PATH = "curves.tcss"
    BINDINGS = [Binding("r", "refresh", "Refresh", id="curves.refresh")]

    def __init__(self) -> None:
        super().__init__()
        self.run_id: str | None = None
        self.titles: dict[str, str] = {}  # plot id -> its current title, as drawn
        self._cache = RunCurves("")  # what has been read of the shown run so far
        self._stages: StagePasses | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="split"):
            yield Table(id="runs", cursor_type="row", zebra_stripes=True)
            with Vertical(id="plots"):
                yield PlotextPlot(id="reward")
                yield PlotextPlot(id="training")
                yield PlotextPlot(id="stages")
        yield SteadyFooter(compact=True)

    def on_mount(self) -> None:
        self.query_one("#runs", DataTable).add_columns("run", "kind", "agent")
        self.action_refresh()
        self.set_interval(REFRESH_S, self._tick)

    def _tick(self) -> None:
        if self.is_current:
            self.replot()  # only what was stored since the last read

    def action_refresh(self) -> None:
        self.load("runs", self.app.engine.curve_runs)

    def show_runs(self, runs: list[CurveRun]) -> None:
        table = self.query_one("#runs", DataTable)
        table.clear()
        for r in runs:
            table.add_row(r.id, r.kind, r.agent, key=r.id)
        if self.run_id not in {r.id for r in runs}:
            self.run_id = runs[0].id if runs else None
        if self.run_id is not None:
            table.move_cursor(row=table.get_row_index(self.run_id))
        self.replot()

    @on(DataTable.RowHighlighted, "#runs")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value != self.run_id:
            self.run_id = str(event.row_key.value)
            self.replot()

    def replot(self) -> None:
        """Read what is new for the shown run (everything, when the run changed), then draw."""
        engine, run_id = self.app.engine, self.run_id
        cache = self._cache if self._cache.run_id == run_id else RunCurves(run_id or "")
        after_episode, after_point = cache.last_episode, cache.last_point

        def fetch() -> tuple[RunCurves, RunCurvesUpdate | None, StagePasses]:
            update = engine.run_curves(run_id, after_episode, after_point) if run_id else None
            return cache, update, engine.stage_passes()

        self.load("curves", fetch)

    def show_curves(self, data: tuple[RunCurves, RunCurvesUpdate | None, StagePasses]) -> None:
        cache, update, stages = data
        if cache.run_id != (self.run_id or ""):
            return  # read for a run no longer shown
        new = update is not None and (update.outcomes or update.points)
        if cache is self._cache and cache.drawn and not new and stages == self._stages:
            return  # nothing new since the last draw
        self._stages = stages
        if update is not None:
            cache.add(update)
        cache.drawn = True
        self._cache = cache
        self._draw_reward(cache)
        self._draw_training(cache)
        self._draw_stages(stages)

    def _draw_reward(self, cache: RunCurves) -> None:
        reward = self.query_one("#reward", PlotextPlot)
        plt = reward.plt
        plt.clear_data()
        plt.clear_figure()
        scored = [(success, value) for success, value in cache.episodes if value is not None]
        if scored:
            xs = list(range(1, len(scored) + 1))
            passed, rate = 0, []
            for i, (success, _) in enumerate(scored, 1):
                passed += int(success)
                rate.append(passed / i)
            plt.scatter(xs, [value for _, value in scored], label="reward", marker="dot")
            plt.plot(xs, rate, label="pass rate (running)")
            plt.ylim(-0.05, 1.05)
            plt.xlabel("scored episode")
        self.titles["reward"] = f"Reward per episode: {self.run_id or 'no runs'} ({len(scored)} scored)"
        plt.title(self.titles["reward"])
        reward.refresh()

    def _draw_training(self, cache: RunCurves) -> None:
        training = self.query_one("#training", PlotextPlot)
        plt = training.plt
        plt.clear_data()
        plt.clear_figure()
        for name, steps in cache.series.items():
            ordered = sorted(steps.items())
            plt.plot([s for s, _ in ordered], [v for _, v in ordered], label=name)
        self.titles["training"] = "Training metrics: " + (", ".join(cache.series) or "none logged for this run")
        plt.title(self.titles["training"])
        if cache.series:
            plt.xlabel("step")
        training.refresh()

    def _draw_stages(self, passes: StagePasses) -> None:
        """pass@1 per stage with its 95% interval: over training seeds when there are several."""
        stages_plot = self.query_one("#stages", PlotextPlot)
        if passes.over_seeds:
            title = (
                f"pass@1 by pipeline stage: mean over {passes.over_seeds} training seeds, 95% interval (held-out eval)"
            )
        else:
            title = "pass@1 by pipeline stage, 95% interval (held-out eval)"
        rows = [(s.stage, s.pass_at_1, s.low, s.high) for s in passes.stages]
        stages_plot.display = bool(rows)
        if rows:
            plt = stages_plot.plt
            plt.clear_data()
            plt.clear_figure()
            xs = list(range(1, len(rows) + 1))
            plt.plot(xs, [r[1] for r in rows], label="pass@1", marker="braille")
            for index, name in ((2, "low"), (3, "high")):
                plt.plot(xs, [r[index] if r[index] is not None else r[1] for r in rows], label=name, marker="dot")
            plt.xticks(xs, [r[0] for r in rows])
            plt.ylim(0, 1)
            self.titles["stages"] = title
            plt.title(title)
            stages_plot.refresh()


class RunCurves:
    """What has been read of one run: its episodes' outcomes and its metric series, with where
    the next read starts."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.episodes: list[tuple[bool, float | None]] = []  # (success, reward) in store order
        self.series: dict[str, dict[int, float]] = defaultdict(dict)  # name -> step -> value
        self.last_episode = 0
        self.last_point = 0
        self.drawn = False

    def add(self, update: RunCurvesUpdate) -> None:
        self.episodes += [(o.success, o.reward) for o in update.outcomes]
        for p in update.points:
            self.series[p.name][p.step] = p.value  # a resumed step overwrites its value
        self.last_episode, self.last_point = update.next_episode, update.next_point
