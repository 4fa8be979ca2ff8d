"""The base of every keyed, resumable stage: RSR rounds, RPR stages, pipeline evaluations.

A stage runs episode jobs that each carry a key and records each finished episode under that
key in the store's jobs table, the moment it is stored. After a kill, jobs whose keys are
recorded are simply not run again: nothing is lost and nothing is repeated. Stopping (`cancel`,
or `should_stop` turning true between episodes) raises InterruptedError once the running
episodes are shut down.

`StageContext` is what every stage works with; `KeyedStage` gives them one way to load the
policy, build the model agent, run keyed jobs, derive seeds and pick a split's tasks.
"""

from __future__ import annotations

import threading
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from engine.config import Config
from engine.events import EventBus
from engine.results import EpisodeResult
from engine.rollout.agent_spec import AgentSpec, SpecAgentFactory
from engine.rollout.harnesses import WorkedExample, get_harness
from engine.rollout.runner import EpisodeExecutor, EpisodeJob, EpisodeRunner
from engine.store import Store
from engine.store.records import JobRecord
from engine.tasks import Task, load_suite


def _never() -> bool:
    return False


@dataclass
class StageContext:
    config: Config
    store: Store
    bus: EventBus
    backend: str
    checkpoints_dir: Path
    tasks: Path  # the suite the stage draws its tasks from
    concurrency: int = 2
    seed: int = 0
    should_stop: Callable[[], bool] = field(default=_never)
    # Loads the policy behind a model spec (tests inject scripted ones); None: engine.policy.load_policy.
    policy_loader: Callable[[str], object] | None = None
    # Where episodes run (engine/cluster/'s Ray executor); None: threads of this process.
    executor: EpisodeExecutor | None = None

    def load_policy(self, spec: str):
        if self.policy_loader is not None:
            return self.policy_loader(spec)
        from engine.policy import load_configured_policy

        return load_configured_policy(spec, self.config.policy, instances=self.concurrency)

    def rollout_policy(self, spec: str):
        """The policy episodes of `spec` sample from here; None when they run on cluster workers,
        which load their own replicas (a copy here would only take memory)."""
        return None if self.executor is not None else self.load_policy(spec)


def task_seed(seed: int, task: str) -> int:
    """`seed` made the task's own. Episodes of different tasks sampled with one seed draw the same
    random numbers, and a small model's replies to similar prompts then come out the same: with
    one seed for every task, the bundled model wrote the identical reply to most instances of a
    kind of task, so 16 explore attempts of a kind were worth about 2."""
    return (seed * 1_000_003 + zlib.crc32(task.encode("utf-8"))) % 2**31


def round_seed(seed: int, round: int, offset: int) -> int:
    """A sampling seed for one job of round `round` of a stage run with training seed `seed`:
    distinct per (seed, round, offset) and stable across resumes."""
    return (seed * 7919 + round * 104729 + offset) % 2**31


class KeyedStage:
    """Shared plumbing of the stages; subclasses implement `run()`."""

    error = RuntimeError  # what the stage raises for bad input (subclasses name their own)

    def __init__(self, ctx: StageContext) -> None:
        self.ctx = ctx
        self.config, self.store, self.bus = ctx.config, ctx.store, ctx.bus
        self._runner: KeyedRunner | None = None

    @property
    def should_stop(self) -> Callable[[], bool]:
        return self.ctx.should_stop

    def cancel(self) -> None:
        if self._runner is not None:
            self._runner.cancel()

    def split_tasks(self, split: str, label: str = "split") -> list[Task]:
        """The suite's tasks of `split` (all of them for ''), by name."""
        suite = load_suite(self.ctx.tasks)
        chosen = sorted((t for t in suite.tasks if not split or t.split == split), key=lambda t: t.name)
        if not chosen:
            raise self.error(f"no tasks in {label} {split!r} of {self.ctx.tasks}")
        return chosen

    @staticmethod
    def agent_factory(
        model: str,
        policy,
        harness: str,
        *,
        temperature: float,
        seed: int,
        max_turns: int,
        guidance: str | None = None,
        examples: tuple[WorkedExample, ...] = (),
        max_reply_tokens: int = 512,
    ) -> SpecAgentFactory:
        """Model agents of `policy` (loaded from the spec `model`); the factory carries the spec,
        so a cluster worker can build the same agent on its own replica."""
        get_harness(harness)  # fail fast on an unknown harness
        spec = AgentSpec(
            "model",
            model=model,
            harness=harness,
            temperature=temperature,
            seed=seed,
            max_turns=max_turns,
            max_reply_tokens=max_reply_tokens,
            guidance=guidance,
            examples=tuple(examples),
        )
        return SpecAgentFactory(spec, policy)

    def finished(self, scope: str) -> dict[str, JobRecord]:
        return self.store.jobs.finished(scope)

    def run_keyed(self, scope: str, jobs: list[tuple[str, EpisodeJob]], *, kind: str, what: str) -> str:
        """Run keyed jobs, each finished episode recorded under `scope`/key as it is stored; returns
        the run id. `what` names the work in the InterruptedError ("RPR stage 1 round 2")."""
        self._runner = KeyedRunner(
            config=self.config,
            backend=self.ctx.backend,
            store=self.store,
            bus=self.bus,
            should_stop=self.should_stop,
            executor=self.ctx.executor,
        )
        return self._runner.run(
            jobs,
            record=lambda key, r: self.store.jobs.done(scope, key, r.run_id, r.episode_id, r.success),
            kind=kind,
            tasks_path=str(self.ctx.tasks),
            concurrency=self.ctx.concurrency,
            what=what,
        )


class KeyedRunner:
    """Runs (key, job) pairs through an EpisodeRunner; `record(key, result)` is called the moment
    each episode is stored, and a stop request cancels the run between episodes."""

    def __init__(
        self,
        *,
        config: Config,
        backend: str,
        store: Store | None,
        bus: EventBus,
        should_stop: Callable[[], bool] = _never,
        executor: EpisodeExecutor | None = None,
    ) -> None:
        self.config, self.backend, self.store, self.bus = config, backend, store, bus
        self.should_stop = should_stop
        self.executor = executor
        self._runner: EpisodeRunner | None = None
        self._lock = threading.Lock()

    def cancel(self) -> None:
        with self._lock:
            runner = self._runner
        if runner is not None:
            runner.cancel()

    def run(
        self,
        jobs: list[tuple[str, EpisodeJob]],
        *,
        record: Callable[[str, EpisodeResult], None],
        kind: str,
        tasks_path: str,
        concurrency: int,
        what: str,
    ) -> str:
        keys = {id(job): key for key, job in jobs}

        def finished(job: EpisodeJob, result: EpisodeResult) -> None:
            record(keys[id(job)], result)
            if self.should_stop():
                runner.cancel()

        runner = EpisodeRunner(
            config=self.config,
            backend=self.backend,
            store=self.store,
            bus=self.bus,
            on_finished=finished,
            executor=self.executor,
        )
        with self._lock:
            self._runner = runner
        run_id, _ = runner.run(
            [job for _, job in jobs], kind=kind, agent_label="model", tasks_path=tasks_path, concurrency=concurrency
        )
        if runner.cancelled:
            raise InterruptedError(f"{what} stopped")
        return run_id
