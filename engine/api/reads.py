"""The engine's reads and small writes of what is stored: runs, stages, curves, tasks, runbooks.

`Engine` inherits them; they are here so the engine module keeps to running work. Each call is
one or a few SQLite queries: a TUI screen calls them on a worker thread (`trsi_tui.loading`),
never on the UI thread. Which metrics, stages and episodes a view needs is decided here, so no
front end writes a metric name or a query.
"""

from __future__ import annotations

from pathlib import Path

from engine.api.views import (
    PLOTTED_METRICS,
    CurveRun,
    DashboardView,
    EpisodeDetail,
    RolloutCurve,
    RunCurvesUpdate,
    StagePass,
    StagePasses,
    SuiteOverview,
    TaskDetail,
    TaskStatus,
)
from engine.pipeline.families import FamilyRow, family_rows, tier_summaries
from engine.pipeline.lineage import Lineage, stored_seeds
from engine.pipeline.summary import StageOverSeeds, summarize
from engine.rsr.frontier import PassEstimate
from engine.stats import RunComparison, compare_runs
from engine.store import Store
from engine.store.records import PIPELINE_STAGES, EpisodeRecord, Runbook, RunRecord, StageRecord
from engine.tasks import load_suite

RPR_RUN_PREFIX = "rpr-"  # an RPR stage logs its metrics under run "rpr-N"


class StoreReads:
    store: Store

    # -- runs and episodes ---------------------------------------------------------------------
    def runs(self, limit: int = 50) -> list[RunRecord]:
        """Stored runs, newest first."""
        return self.store.runs.list(limit)

    def run(self, run_id: str) -> RunRecord:
        """One stored run; KeyError for an unknown one."""
        return self.store.runs.get(run_id)

    def episodes(self, run_id: str | None = None) -> list[EpisodeRecord]:
        """Stored episodes, of one run or of all."""
        return self.store.runs.episodes(run_id=run_id)

    def episode_detail(self, episode_id: str) -> EpisodeDetail:
        runs = self.store.runs
        return EpisodeDetail(
            runs.episode(episode_id),
            runs.episode_model(episode_id),
            tuple(runs.steps(episode_id)),
            tuple(runs.checks(episode_id)),
        )

    def export_run(self, run_id: str, fmt: str, file: Path) -> int:
        """A run's episodes written to `file` as JSON Lines or ATIF; KeyError for an unknown run."""
        from engine.store.export import export_run

        self.store.runs.get(run_id)
        return export_run(self.store, run_id, fmt, file)

    def compare_runs(self, run_a: str, run_b: str) -> RunComparison:
        """pass@1 of run B against run A on their shared tasks; KeyError for an unknown run,
        ValueError when they share no scored task."""
        outcomes = []
        for run_id in (run_a, run_b):
            self.store.runs.get(run_id)
            outcomes.append([(e.task, e.success) for e in self.store.runs.episodes(run_id) if e.reward is not None])
        return compare_runs(*outcomes)

    # -- the pipeline's stages -------------------------------------------------------------------
    def stages(self) -> dict[str, StageRecord]:
        """The pipeline's stage table as stored (every lineage's stages, under their stored names)."""
        return self.store.stages.all()

    def stored_seeds(self) -> list[int]:
        """The training seeds with at least one stage of their own in the store."""
        return stored_seeds(self.store.stages.all())

    def stored_lineages(self) -> dict[int, dict[str, StageRecord]]:
        """Each stored training seed's stages under the plain stage names (seed 0 alone when none is stored)."""
        stored = self.store.stages.all()
        return {seed: Lineage(seed).records(stored) for seed in stored_seeds(stored) or [0]}

    def stages_over_seeds(self, seeds: list[int] | None = None) -> list[StageOverSeeds]:
        """Each stage's pass@1 over training seeds, and its paired gain over its parent
        (every seed with a stage in the store, unless `seeds` says which)."""
        return summarize(self.store, seeds if seeds is not None else self.stored_seeds())

    def by_tier(self, seeds: list[int] | None = None) -> dict[str, list[StageOverSeeds]]:
        """The stage table over each curriculum tier's eval tasks (one-step, multi-step, held-out
        families; "other" for tasks of no curriculum family), every stored seed unless `seeds`."""
        return tier_summaries(self.store, seeds if seeds is not None else self.stored_seeds() or [0])

    def by_family(self, seeds: list[int] | None = None) -> list[FamilyRow]:
        """Each task family's eval successes per stage and seed, and its RSR explore successes."""
        return family_rows(self.store, seeds if seeds is not None else self.stored_seeds() or [0])

    def over_seeds(self, seeds: list[int] | None = None) -> list[StageOverSeeds]:
        """`stages_over_seeds`, or nothing with fewer than two training seeds (nothing to compare):
        the table the CLI and the dashboard show under the stage table."""
        chosen = seeds if seeds is not None else self.stored_seeds()
        return self.stages_over_seeds(chosen) if len(chosen) > 1 else []

    def stage_passes(self) -> StagePasses:
        over_seeds = self.over_seeds()
        if over_seeds:
            means = [(r.stage, r.mean) for r in over_seeds if r.mean is not None]
            rows = [StagePass(stage, mean.estimate, mean.low, mean.high) for stage, mean in means]
            return StagePasses(tuple(rows), max(len(r.seeds) for r in over_seeds))
        stages = self.store.stages.all()
        rows = [
            StagePass(name, stages[name].pass_at_1, stages[name].ci_low, stages[name].ci_high)
            for name in PIPELINE_STAGES
            if name in stages and stages[name].pass_at_1 is not None
        ]
        return StagePasses(tuple(rows), 0)

    # -- the dashboard and the curves --------------------------------------------------------------
    def dashboard(self) -> DashboardView:
        return DashboardView(
            self.store.stages.all(), tuple(self.store.runs.list(50)), self.rollout_curve(), tuple(self.over_seeds())
        )

    def rollout_curve(self) -> RolloutCurve:
        metrics = self.store.metrics
        rounds, reward, success, probe_rounds, probe_success = [], [], [], [], []
        offset = 0
        for run in (r for r in metrics.runs() if r.startswith(RPR_RUN_PREFIX)):
            rewards = {p.step: p.value for p in metrics.points(run, "rpr/reward")}
            wins = {p.step: p.value for p in metrics.points(run, "rpr/success")}
            for step in sorted(rewards):
                rounds.append(offset + step)
                reward.append(rewards[step])
                success.append(wins.get(step, 0.0))
            for p in metrics.points(run, "rpr/probe_success"):
                probe_rounds.append(offset + p.step)
                probe_success.append(p.value)
            offset += max(rewards, default=0)
        return RolloutCurve(tuple(rounds), tuple(reward), tuple(success), tuple(probe_rounds), tuple(probe_success))

    def curve_runs(self, limit: int = 100) -> list[CurveRun]:
        """Stored runs, newest first, then training runs that log metrics but hold no episodes."""
        listed = [CurveRun(r.id, r.kind, r.agent) for r in self.store.runs.list(limit)]
        known = {r.id for r in listed}
        for run_id in self.store.metrics.runs():
            if run_id not in known:
                listed.append(CurveRun(run_id, "training", "-"))
                known.add(run_id)
        return listed

    def run_curves(self, run_id: str, after_episode: int = 0, after_point: int = 0) -> RunCurvesUpdate:
        """What `run_id` stored since an earlier update's `next_episode` and `next_point`."""
        outcomes = self.store.runs.outcomes(run_id, after=after_episode)
        points = self.store.metrics.points(run_id, after_rowid=after_point)
        return RunCurvesUpdate(
            run_id,
            tuple(outcomes),
            tuple(p for p in points if p.name in PLOTTED_METRICS),
            max((o.seq for o in outcomes), default=after_episode),
            max((p.seq for p in points), default=after_point),
        )

    # -- tasks ----------------------------------------------------------------------------------
    def stored_suites(self, limit: int = 200) -> list[Path]:
        """The task suites of the newest stored runs, newest first (some may be gone since)."""
        return [Path(r.tasks_path) for r in self.store.runs.list(limit) if r.tasks_path]

    def suite_overview(self, root: Path) -> SuiteOverview:
        suite = load_suite(root)
        explored = self.store.rsr.latest_explore_outcomes()
        tasks = {}
        for task in suite.tasks:
            round_, attempts = explored.get(task.name, (None, None))
            estimate = PassEstimate.of(attempts) if attempts is not None else None
            tasks[task.name] = TaskStatus(self._valid(task.name), estimate, round_)
        return SuiteOverview(suite, tasks)

    def _valid(self, task: str) -> bool | None:
        oracle = self.store.runs.latest_episode(task, "oracle", "tasks-check")
        nop = self.store.runs.latest_episode(task, "nop", "tasks-check")
        if oracle is None or nop is None:
            return None
        return bool(oracle.success and not nop.success and nop.reward is not None)

    def task_detail(self, task: str) -> TaskDetail:
        runs = self.store.runs
        oracle = runs.latest_episode(task, "oracle")
        return TaskDetail(
            task,
            oracle,
            tuple(runs.checks(oracle.id)) if oracle is not None else (),
            runs.latest_episode(task, "oracle", "tasks-check"),
            runs.latest_episode(task, "nop", "tasks-check"),
        )

    def next_rsr_round(self) -> int:
        """The first RSR round number not in the store."""
        return self.store.rsr.next_round()

    # -- runbooks -------------------------------------------------------------------------------
    def runbooks(self, status: str = "pending") -> list[Runbook]:
        """The runbook queue: drafts with `status` ("all": every status)."""
        return self.store.runbooks.list(status=None if status == "all" else status)

    def edit_runbook(self, runbook_id: str, text: str) -> Runbook:
        """A person's edit; the original text stays stored beside it."""
        return self.store.runbooks.edit(runbook_id, text)

    def decide_runbook(self, runbook_id: str, status: str, *, note: str = "", edited: str | None = None) -> Runbook:
        """A person approves or rejects a draft (an RSR round waiting on manual approval reads it
        from the store); `edited` text is saved first, so approving an edit keeps the edit."""
        if edited is not None:
            self.store.runbooks.edit(runbook_id, edited)
        return self.store.runbooks.decide(runbook_id, status, by="human", note=note)
