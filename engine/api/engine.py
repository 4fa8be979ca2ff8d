"""The engine facade the CLI and the TUI call: config + store + event bus + the operations that
run work (its reads of what is stored are in `engine.api.reads`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from engine.api.jobs import RunnerJobs
from engine.api.reads import StoreReads
from engine.api.requests import EvalRequest, PipelineRequest, RprRequest, RsrRequest
from engine.cluster.access import Access as ClusterAccess
from engine.cluster.access import cluster_access
from engine.config import AgentSettings, Config, load_config
from engine.config.logs import setup_logging
from engine.config.paths import Paths, builtin_tasks_dir, resolve_paths
from engine.events import EventBus
from engine.pipeline.lineage import parse_seeds
from engine.results import EpisodeResult
from engine.resumable import WorkContext
from engine.rollout.runner import EpisodeJob, EpisodeRunner, summarize
from engine.rollout.validation import TaskCheck, check_suites
from engine.stats import TaskAggregate, per_task
from engine.store import Store
from engine.store.records import StageRecord
from engine.tasks import Suite, load_suite
from sandboxes import preflight

if TYPE_CHECKING:  # for annotations only: each stage is imported where it is built
    from engine.rpr.stage import RprReport
    from engine.rsr.report import RoundReport


@dataclass
class EvalReport:
    run_id: str
    results: list[EpisodeResult]
    summary: dict[str, object] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {"run_id": self.run_id, "results": [r.summary() for r in self.results], "summary": self.summary}

    def per_task(self) -> list[TaskAggregate]:
        """Each task's episodes, successes and pass@1 (the mean over its scored episodes)."""
        return per_task((r.task, r.success, r.scored) for r in self.results)


class Engine(StoreReads, RunnerJobs):
    """Config + store + event bus, and every operation a front end starts: the one door into the engine."""

    def __init__(self, config: Config, store: Store, paths: Paths | None = None, bus: EventBus | None = None) -> None:
        self.config = config
        self.store = store
        self.paths = paths
        self.bus = bus or EventBus()
        self._runner: EpisodeRunner | None = None
        self._work = None  # the RSR round, RPR stage or pipeline in progress, if any (for cancel)
        self._stop_requested = False
        self._executor = None  # the cluster's, once joined; kept so workers keep their replicas
        self.job_id: str | None = None  # the detached runner job this process runs as (`as_runner_job`)

    # -- configuration ---------------------------------------------------------------------------
    def use_config(self, config: Config, *, keep_tui: bool = False) -> None:
        """Work with `config` from now on (`pipeline run --config`); `keep_tui` keeps this engine's
        [tui] section (the home's keymap) instead of the new one's."""
        if keep_tui:
            config = config.model_copy(update={"tui": self.config.tui})
        self.config = config
        self._executor = None

    def training_seeds(self, text: str | None = None) -> list[int]:
        """The training seeds `text` names ("0,1,2" or "0-2"; ValueError with the reason), else the config's."""
        return parse_seeds(text) if text else self.config.pipeline.training_seeds()

    # -- where episodes run -----------------------------------------------------------------------
    @property
    def uses_cluster(self) -> bool:
        """Whether episodes run on a Ray cluster (`[cluster] engine = "ray"`, or `use_cluster`)."""
        return self.config.cluster.engine == "ray"

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

    def cluster_access(self) -> ClusterAccess:
        """Who can use the configured cluster: token authentication, and where its head listens."""
        return cluster_access(self.config.cluster)

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
        harness: str | None = None,
        temperature: float | None = None,
        seed: int = 0,
        seeds: int = 1,
        max_turns: int | None = None,
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
        from engine.pipeline.evaluation import EvalAgents, eval_episodes

        settings = policy = None
        if agent == "model":
            from engine.policy import PolicyError, parse_model_spec

            if not model:
                raise PolicyError("--agent model needs --model SPEC")
            parse_model_spec(model)
            settings = AgentSettings.for_eval(self.config)
            settings = replace(
                settings.with_harness(harness or settings.harness),
                temperature=settings.temperature if temperature is None else temperature,
                max_turns=max_turns or settings.max_turns,
            )
            # Loaded once and shared by every episode (GGUF: one sequence per concurrent episode);
            # on a cluster each worker loads its own replica instead.
            work = self.stage_context(tasks=suite.root, backend=backend, concurrency=concurrency)
            policy = work.rollout_policy(model)
        agents = EvalAgents(agent, model=model or "", policy=policy, settings=settings, seed=seed)
        jobs = [
            EpisodeJob(e.task, agents(e), attempt=e.sampling_seed * attempts + e.attempt)
            for e in eval_episodes(chosen, seeds=seeds, attempts=attempts)
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
    ) -> WorkContext:
        """What the stages built here work with; the one place they are given a store, bus and paths."""
        return WorkContext(
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

    def rsr_round(self, round: int, *, model: str, **options) -> RoundReport:
        """Run (or resume) RSR round `round`. `options`: tasks, backend, concurrency, seed (see
        `stage_context`); every other key replaces that key of the config's [rsr] section."""
        from engine.rsr.round import RsrRound

        ctx, settings = self._stage_setup(self.config.rsr, options)
        return self._run_work(
            f"RSR round {round}", lambda: RsrRound(ctx, round=round, model=model, settings=settings), ctx.backend
        )

    def rpr_stage(self, number: int, *, model: str, critic_from: str | Path | None = None, **options) -> RprReport:
        """Run (or resume) RPR stage `number` (RPR-N), inheriting the critic of the checkpoint `critic_from`.
        `options` as for `rsr_round`, the rest replacing keys of the config's [rpr] section."""
        from engine.rpr.stage import RprStage

        ctx, settings = self._stage_setup(self.config.rpr, options)
        critic = Path(critic_from) if critic_from else None
        return self._run_work(
            f"RPR stage {number}",
            lambda: RprStage(ctx, number=number, model=model, settings=settings, critic_from=critic),
            ctx.backend,
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
        return self._run_work("the pipeline", lambda: SeededPipelines(ctx, chosen, stop_after=stop_after), ctx.backend)

    def _run_work(self, what: str, build, backend: str):
        """Build long, resumable work with `build()`, run it, and keep it reachable by `cancel`.
        It holds the store's work lock while it runs (WorkBusy when another process holds it)."""
        from engine.store.work_lock import hold_work_lock

        self._preflight(backend)
        self._stop_requested = False
        with hold_work_lock(self.store.path, what, job=self.job_id):
            self._work = build()
            try:
                return self._work.run()
            finally:
                self._work = None

    # -- requests from the front ends ------------------------------------------------------------
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

    def run_rsr(self, req: RsrRequest) -> RoundReport:
        """Run (or resume) the RSR round `req` asks for."""
        return self.rsr_round(
            req.round,
            model=req.model,
            tasks=req.tasks,
            backend=req.backend,
            concurrency=req.concurrency,
            seed=req.seed,
            approval=req.approval,
            attempts=req.attempts,
            harnesses=list(req.harnesses) or None,
            split=req.split,
        )

    def run_rpr(self, req: RprRequest) -> RprReport:
        """Run (or resume) the RPR stage `req` asks for."""
        return self.rpr_stage(
            req.number,
            model=req.model,
            critic_from=req.critic_from,
            tasks=req.tasks,
            backend=req.backend,
            concurrency=req.concurrency,
            seed=req.seed,
            rounds=req.rounds,
            critic_warmup_rounds=req.critic_warmup_rounds,
            harness=req.harness,
        )

    def run_pipeline(self, req: PipelineRequest) -> dict[int, dict[str, StageRecord]]:
        """Run (or resume) the pipeline as `req` asks; each training seed's stages, as `pipeline` returns them."""
        return self.pipeline(
            tasks=req.tasks,
            backend=req.backend,
            concurrency=req.concurrency,
            stop_after=req.stop_after,
            seeds=list(req.seeds) or None,
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
