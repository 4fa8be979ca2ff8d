"""The base of every keyed, resumable stage: RSR rounds, RPR stages, pipeline evaluations.

A stage runs episode jobs that each carry a key and records each finished episode under that
key in the store's jobs table, the moment it is stored. After a kill, jobs whose keys are
recorded are simply not run again: nothing is lost and nothing is repeated. Stopping (`cancel`,
or `should_stop` turning true between episodes) raises InterruptedError once the running
episodes are shut down.

`WorkContext` is what every stage works with; `Resumable` gives them one way to load the
policy, run keyed jobs and pick a split's tasks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from engine.config import Config
from engine.events import EventBus
from engine.results import EpisodeResult
from engine.rollout.runner import EpisodeExecutor, EpisodeJob, EpisodeRunner
from engine.store import Store
from engine.store.records import JobRecord
from engine.tasks import Task, load_suite


def _never() -> bool:
    return False


@dataclass
class WorkContext:
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


class Resumable:
    """Shared plumbing of the stages; subclasses implement `run()`."""

    error = RuntimeError  # what the stage raises for bad input (subclasses name their own)

    def __init__(self, ctx: WorkContext) -> None:
        self.ctx = ctx
        self.config, self.store, self.bus = ctx.config, ctx.store, ctx.bus
        self._runner: EpisodeRunner | None = None

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

    def finished(self, scope: str) -> dict[str, JobRecord]:
        return self.store.jobs.finished(scope)

    def run_keyed(self, scope: str, jobs: list[tuple[str, EpisodeJob]], *, kind: str, what: str) -> str:
        """Run keyed jobs, each finished episode recorded under `scope`/key as it is stored; returns
        the run id. `what` names the work in the InterruptedError ("RPR stage 1 round 2")."""
        keys = {id(job): key for key, job in jobs}

        def finished(job: EpisodeJob, result: EpisodeResult) -> None:
            self.store.jobs.done(scope, keys[id(job)], result.run_id, result.episode_id, result.success)
            if self.should_stop():
                runner.cancel()

        runner = EpisodeRunner(
            config=self.config,
            backend=self.ctx.backend,
            store=self.store,
            bus=self.bus,
            on_finished=finished,
            executor=self.ctx.executor,
        )
        self._runner = runner  # for `cancel`, from another thread
        if self.should_stop():  # asked before this runner existed, so `cancel` never reached it
            raise InterruptedError(f"{what} stopped")
        run_id, _ = runner.run(
            [job for _, job in jobs],
            kind=kind,
            agent_label="model",
            tasks_path=str(self.ctx.tasks),
            concurrency=self.ctx.concurrency,
        )
        if runner.cancelled:
            raise InterruptedError(f"{what} stopped")
        return run_id
