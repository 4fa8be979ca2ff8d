"""The engine facade the CLI and the TUI call: config + store + event bus + the operations."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from engine.config import Config, load_config
from engine.events import EventBus
from engine.logs import setup_logging
from engine.paths import Paths, builtin_tasks_dir, resolve_paths
from engine.results import EpisodeResult
from engine.rollout.agent_spec import AgentSpec, SpecAgentFactory
from engine.rollout.agents import make_agent
from engine.rollout.runner import EpisodeJob, EpisodeRunner, summarize
from engine.rollout.validation import TaskCheck, check_suites
from engine.stage import StageContext
from engine.stats import RunComparison, compare_runs
from engine.store import Store
from engine.store.records import RunRecord, StageRecord
from engine.tasks import Suite, load_suite
from sandboxes import preflight


@dataclass
class EvalReport:
    run_id: str
    results: list[EpisodeResult]
    summary: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {"run_id": self.run_id, "results": [r.summary() for r in self.results], "summary": self.summary}


@dataclass(frozen=True)
class EvalRequest:
    """What the TUI's start-run form (or any caller) asks `Engine.evaluate` to run."""

    agent: str = "oracle"
    tasks: str | None = None
    split: str | None = None
    only: tuple[str, ...] = ()
    model: str | None = None
    harness: str = "fenced-bash-primed"
    backend: str | None = None
    concurrency: int | None = None
    seeds: int = 1
    attempts: int = 1


@dataclass(frozen=True)
class RsrRequest:
    """What the TUI's RSR form asks `Engine.rsr_round` to run."""

    round: int
    model: str
    tasks: str | None = None
    approval: str | None = None
    attempts: int | None = None
    backend: str | None = None
    concurrency: int | None = None


class Engine:
    def __init__(self, config: Config, store: Store, paths: Paths | None = None, bus: EventBus | None = None) -> None:
        self.config = config
        self.store = store
        self.paths = paths
        self.bus = bus or EventBus()
        self._runner: EpisodeRunner | None = None
        self._work = None  # the RSR round, RPR stage or pipeline in progress, if any (for cancel)
        self._stop_requested = False
        self._executor = None  # the cluster's, once joined; kept so workers keep their replicas

    # -- where episodes run -----------------------------------------------------------------------
    def use_cluster(self, address: str) -> None:
        """Run episodes on the Ray cluster at `address` (the `--cluster` option)."""
        from engine.config import ClusterConfig

        cluster = self.config.cluster.model_copy(update={"engine": "ray", "address": address})
        self.config = self.config.model_copy(update={"cluster": ClusterConfig.model_validate(cluster.model_dump())})
        self._executor = None

    def executor(self):
        """The cluster's episode executor when `[cluster] engine = "ray"`, else None (threads here).
        Joined on first use; ClusterError when the cluster cannot be reached."""
        if self._executor is None and self.config.cluster.engine == "ray":
            from engine.cluster import make_executor

            self._executor = make_executor(self.config.cluster)
        return self._executor

    def cluster_status(self):
        """Each live node with its rollout worker's report (`engine.cluster.status`)."""
        from engine.cluster.status import cluster_status

        return cluster_status(self.config.cluster, self._executor)

    @classmethod
    def open(cls, home: str | None = None) -> "Engine":
        paths = resolve_paths(home).ensure()
        setup_logging(paths.logs_dir)
        return cls(load_config(paths.config_file), Store(paths.database), paths)

    # -- tasks -----------------------------------------------------------------------------
    def suite_path(self, path: str | Path | None) -> Path:
        """A suite directory: `path`, else the config's `tasks`, else the built-in suite. "curriculum"
        or "curriculum:TRAIN,EVAL" names the generated curriculum, written into the cache on first use."""
        from engine.tasks.curriculum import materialize

        chosen = str(path or self.config.tasks or "")
        if not chosen:
            return builtin_tasks_dir()
        cache = self.paths.cache_dir if self.paths is not None else resolve_paths(None).cache_dir
        return materialize(chosen, cache) or Path(chosen).expanduser()

    def load_suite(self, path: str | Path | None = None) -> Suite:
        return load_suite(self.suite_path(path))

    def check_tasks(
        self,
        paths: list[str | Path],
        *,
        backend: str | None = None,
        concurrency: int | None = None,
        only: tuple[str, ...] = (),
    ) -> tuple[str, list[TaskCheck]]:
        suites = [self.load_suite(p) for p in (paths or [None])]
        if only:
            suites = [Suite(s.root, [t for t in s.tasks if t.name in only], s.errors) for s in suites]
        self._runner = self._new_runner(backend)
        return check_suites(suites, self._runner, concurrency=concurrency or self.config.eval.concurrency)

    def evaluate(
        self,
        tasks: str | Path | None,
        *,
        agent: str,
        backend: str | None = None,
        concurrency: int | None = None,
        attempts: int = 1,
        split: str | None = None,
        model: str | None = None,
        harness: str = "fenced-bash-primed",
        temperature: float = 0.7,
        seed: int = 0,
        seeds: int = 1,
        max_turns: int = 20,
        only: tuple[str, ...] | list[str] = (),
    ) -> tuple[EvalReport, Suite]:
        """Every chosen task runs `attempts` x `seeds` episodes; seed s samples with seed+s.

        `only` narrows the suite to the named tasks; an unknown name is an error, not a silent skip.
        """
        suite = self.load_suite(tasks)
        chosen = suite.split(split) if split else suite.tasks
        if only:
            names = {t.name for t in chosen}
            unknown = sorted(set(only) - names)
            if unknown:
                raise ValueError(
                    f"unknown task(s) {', '.join(unknown)} in {suite.root}" + (f" (split {split})" if split else "")
                )
            chosen = [t for t in chosen if t.name in set(only)]
        if agent == "model":
            from engine.policy import PolicyError, load_configured_policy, parse_model_spec
            from engine.stage import KeyedStage, task_seed

            if not model:
                raise PolicyError("--agent model needs --model SPEC")
            parse_model_spec(model)
            policy = None
            if self.executor() is None:
                # Loaded once and shared by every episode (GGUF: one sequence per concurrent episode);
                # on a cluster each worker loads its own replica instead.
                policy = load_configured_policy(
                    model, self.config.policy, instances=concurrency or self.config.eval.concurrency
                )

            def factory(t, s: int, a: int):
                return KeyedStage.agent_factory(
                    model,
                    policy,
                    harness,
                    temperature=temperature,
                    seed=task_seed((seed + s) * 1000 + a, t.name),
                    max_turns=max_turns,
                    max_reply_tokens=self.config.policy.max_reply_tokens,
                )
        else:
            make_agent(agent)  # fail fast on an unknown agent name

            def factory(t, s: int, a: int):
                return SpecAgentFactory(AgentSpec(agent))

        jobs = [
            EpisodeJob(t, factory(t, s, a), attempt=s * attempts + a)
            for t in chosen
            for s in range(seeds)
            for a in range(attempts)
        ]
        self._runner = self._new_runner(backend)
        run_id, results = self._runner.run(
            jobs,
            kind="eval",
            agent_label=agent,
            tasks_path=str(suite.root),
            concurrency=concurrency or self.config.eval.concurrency,
        )
        return EvalReport(run_id, results, summarize(results)), suite

    def stage_context(
        self, *, tasks: str | Path | None, backend: str | None, concurrency: int | None, seed: int = 0
    ) -> StageContext:
        """What the stages built here work with; the one place they are given a store, bus and paths."""
        return StageContext(
            config=self.config,
            store=self.store,
            bus=self.bus,
            backend=backend or self.config.sandbox.backend,
            checkpoints_dir=(self.paths or resolve_paths(None)).checkpoints_dir,
            tasks=self.suite_path(tasks),
            concurrency=concurrency or self.config.eval.concurrency,
            seed=seed,
            should_stop=lambda: self._stop_requested,
            executor=self.executor(),
        )

    def rsr_round(self, round: int, *, model: str, **options):
        """Run (or resume) RSR round `round`. `options`: tasks, backend, concurrency, seed (see
        `stage_context`); every other key replaces that key of the config's [rsr] section."""
        from engine.rsr.round import RsrRound

        ctx, settings = self._stage_setup(self.config.rsr, options)
        return self._run_work(lambda: RsrRound(ctx, round=round, model=model, settings=settings), ctx.backend)

    def rpr_stage(self, round: int, *, model: str, critic_from: str | Path | None = None, **options):
        """Run (or resume) RPR stage `round`, inheriting the critic of the checkpoint `critic_from`.
        `options` as for `rsr_round`, the rest replacing keys of the config's [rpr] section."""
        from engine.rpr.stage import RprStage

        ctx, settings = self._stage_setup(self.config.rpr, options)
        critic = Path(critic_from) if critic_from else None
        return self._run_work(
            lambda: RprStage(ctx, round=round, model=model, settings=settings, critic_from=critic), ctx.backend
        )

    def _stage_setup(self, section, options: dict):
        """The stage context from the run options, and the config section with the other options
        (those not None) applied."""
        run = {k: options.pop(k, None) for k in ("tasks", "backend", "concurrency", "seed")}
        ctx = self.stage_context(
            tasks=run["tasks"], backend=run["backend"], concurrency=run["concurrency"], seed=run["seed"] or 0
        )
        return ctx, section.model_copy(update={k: v for k, v in options.items() if v is not None})

    def pipeline(
        self,
        *,
        tasks: str | Path | None = None,
        backend: str | None = None,
        concurrency: int | None = None,
        stop_after: str | None = None,
        seeds: list[int] | None = None,
    ) -> dict[int, dict[str, StageRecord]]:
        """Run (or resume) Base -> RSR-1 -> RPR-1 -> RSR-2 -> RPR-2 with this engine's config, once
        per training seed (`seeds`, default `[pipeline] seeds` or `[seed]`); each seed's stage
        records come back under the plain stage names."""
        from engine.pipeline.pipeline import SeededPipelines

        ctx = self.stage_context(tasks=tasks, backend=backend, concurrency=concurrency)
        chosen = seeds or self.config.pipeline.training_seeds()
        return self._run_work(lambda: SeededPipelines(ctx, chosen, stop_after=stop_after), ctx.backend)

    def _run_work(self, build, backend: str):
        """Build long, resumable work with `build()`, run it, and keep it reachable by `cancel`."""
        self._preflight(backend)
        self._stop_requested = False
        self._work = build()
        try:
            return self._work.run()
        finally:
            self._work = None

    # -- what is stored ------------------------------------------------------------------------
    def stages(self) -> dict[str, StageRecord]:
        """The pipeline's stage table as stored (every lineage's stages, under their stored names)."""
        return self.store.stages.all()

    def stages_over_seeds(self, seeds: list[int] | None = None):
        """Each stage's pass@1 over training seeds, and its paired gain over its parent
        (every seed with a stage in the store, unless `seeds` says which)."""
        from engine.pipeline.lineage import stored_seeds
        from engine.pipeline.summary import summarize

        return summarize(self.store, seeds if seeds is not None else stored_seeds(self.store.stages.all()))

    def runs(self, limit: int = 50) -> list[RunRecord]:
        """Stored runs, newest first."""
        return self.store.runs.list(limit)

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

    def run_request(self, req: EvalRequest) -> tuple[EvalReport, Suite]:
        return self.evaluate(
            req.tasks,
            agent=req.agent,
            backend=req.backend,
            concurrency=req.concurrency,
            attempts=req.attempts,
            split=req.split,
            model=req.model,
            harness=req.harness,
            seeds=req.seeds,
            only=req.only,
        )

    def _preflight(self, backend: str) -> None:
        """The sandbox backend must work here, unless the episodes run on cluster workers (each
        worker checks its own node)."""
        if self.config.cluster.engine == "local":
            preflight(backend)

    def _new_runner(self, backend: str | None) -> EpisodeRunner:
        self._preflight(backend or self.config.sandbox.backend)
        return EpisodeRunner(
            config=self.config,
            backend=backend or self.config.sandbox.backend,
            store=self.store,
            bus=self.bus,
            executor=self.executor(),
        )

    def cancel(self) -> None:
        self._stop_requested = True
        if self._runner is not None:
            self._runner.cancel()
        if self._work is not None:
            self._work.cancel()
