"""Run many episodes concurrently, store each as it finishes, and emit events.

Used by `eval`, `tasks check` and every stage. Where an episode runs is the executor's business:
`LocalExecutor` runs it on a thread of this process, the Ray executor (engine/cluster/) on a
worker of a cluster; either way the episode is stored and announced here, on the head.
Cancellation (Ctrl-C, the TUI's stop) stops every live sandbox, which ends its running command
at once; episodes not yet started are skipped.
"""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Callable, Protocol

from engine.config import Config
from engine.events import EpisodeFinished, EpisodeStarted, EventBus, RunFinished, RunStarted
from engine.results import EpisodeResult
from engine.rollout.agent_spec import AgentSpec, spec_of
from engine.rollout.agents import Agent
from engine.rollout.episode import run_episode
from engine.stats import bootstrap_pass_at_1, by_task, pass_at_k
from engine.store import Store
from engine.tasks import Task
from sandboxes import Sandbox


@dataclass(frozen=True)
class EpisodeJob:
    task: Task
    make_agent: Callable[[], Agent]
    attempt: int = 0

    @property
    def agent_spec(self) -> AgentSpec | None:
        """The agent as plain data (what a cluster worker builds), None for a bare closure."""
        return spec_of(self.make_agent)


@dataclass(frozen=True)
class Placement:
    """Where an episode runs: told to the runner before the episode starts."""

    agent: str
    node: str = ""


class EpisodeExecutor(Protocol):
    def slots(self, requested: int) -> int:
        """How many episodes to keep in flight when the caller asks for `requested`."""
        ...

    def run(
        self,
        job: EpisodeJob,
        *,
        config: Config,
        backend: str,
        run_id: str,
        episode_id: str,
        bus: EventBus,
        placed: Callable[[Placement], None],
        on_sandbox: Callable[[Sandbox | None], None],
    ) -> EpisodeResult:
        """Run one episode to its result (never raising for the episode's own failures)."""
        ...

    def cancel(self) -> None:
        """Stop every episode this executor runs (local sandboxes are stopped by the runner)."""
        ...


class LocalExecutor:
    """Episodes on threads of this process."""

    def slots(self, requested: int) -> int:
        return max(1, requested)

    def run(self, job, *, config, backend, run_id, episode_id, bus, placed, on_sandbox) -> EpisodeResult:
        agent = job.make_agent()
        placed(Placement(agent.name))
        return run_episode(
            job.task,
            agent,
            config=config,
            backend=backend,
            run_id=run_id,
            attempt=job.attempt,
            bus=bus,
            episode_id=episode_id,
            on_sandbox=on_sandbox,
        )

    def cancel(self) -> None:
        pass


def summarize(results: list[EpisodeResult]) -> dict[str, object]:
    """Success rate over scored episodes; infrastructure failures are counted, never scored.

    pass@1 weighs tasks equally and carries a task-bootstrap 95% interval; pass@k is the
    unbiased estimator for every k up to the smallest number of scored episodes per task.
    """
    scored = [r for r in results if r.scored]
    successes = sum(1 for r in scored if r.success)
    passes: dict[str, object] = {"pass_at_1": None, "ci95": None, "pass_at_k": {}}
    groups = by_task((r.task, r.success) for r in scored)
    if groups:
        interval = bootstrap_pass_at_1(groups)
        passes = {
            "pass_at_1": round(interval.estimate, 4),
            "ci95": interval.as_list(),
            "pass_at_k": {
                str(k): round(pass_at_k(groups, k), 4) for k in range(1, min(len(v) for v in groups.values()) + 1)
            },
        }
    return {
        **passes,
        "episodes": len(results),
        "scored": len(scored),
        "successes": successes,
        "success_rate": (successes / len(scored)) if scored else None,
        "mean_reward": (sum(r.reward or 0.0 for r in scored) / len(scored)) if scored else None,
        "infra_errors": len(results) - len(scored),
    }


class EpisodeRunner:
    def __init__(
        self,
        *,
        config: Config,
        backend: str,
        store: Store | None,
        bus: EventBus | None,
        on_finished: Callable[[EpisodeJob, EpisodeResult], None] | None = None,
        executor: EpisodeExecutor | None = None,
    ) -> None:
        self.config = config
        self.executor = executor or LocalExecutor()
        # Told about each stored episode with the job that produced it (RSR links episodes to its jobs).
        self.on_finished = on_finished
        self.backend = backend
        self.store = store
        self.bus = bus or EventBus()
        self._cancel = threading.Event()
        self._live: dict[str, Sandbox] = {}
        self._live_lock = threading.Lock()

    def cancel(self) -> None:
        self._cancel.set()
        with self._live_lock:
            live = list(self._live.values())
        for sandbox in live:
            sandbox.stop()
        self.executor.cancel()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def _one(self, run_id: str, job: EpisodeJob, index: int) -> EpisodeResult | None:
        if self._cancel.is_set():
            return None
        episode_id = f"{run_id}-{index:04d}"

        def placed(where: Placement) -> None:
            self.bus.emit(EpisodeStarted(run_id, episode_id, job.task.name, where.agent, where.node))

        def track(sandbox: Sandbox | None) -> None:
            with self._live_lock:
                if sandbox is None:
                    self._live.pop(episode_id, None)
                else:
                    self._live[episode_id] = sandbox
            if sandbox is not None and self._cancel.is_set():
                sandbox.stop()

        result = self.executor.run(
            job,
            config=self.config,
            backend=self.backend,
            run_id=run_id,
            episode_id=episode_id,
            bus=self.bus,
            placed=placed,
            on_sandbox=track,
        )
        if self._cancel.is_set():
            return None  # stopped mid-way: not a real outcome, so not stored
        if self.store is not None:
            self.store.runs.record_episode(result)
        if self.on_finished is not None:
            self.on_finished(job, result)
        self.bus.emit(EpisodeFinished(run_id, result))
        return result

    def run(
        self, jobs: list[EpisodeJob], *, kind: str, agent_label: str, tasks_path: str, concurrency: int
    ) -> tuple[str, list[EpisodeResult]]:
        run_id = uuid.uuid4().hex[:12]
        if self.store is not None:
            run_id = self.store.runs.create(
                kind,
                backend=self.backend,
                agent=agent_label,
                tasks_path=tasks_path,
                total=len(jobs),
                config=self.config.model_dump(),
            )
        self.bus.emit(RunStarted(run_id, kind, len(jobs)))
        results: list[EpisodeResult] = []
        status = "finished"
        pool = ThreadPoolExecutor(max_workers=self.executor.slots(concurrency), thread_name_prefix="episode")
        try:
            futures: dict[Future, int] = {pool.submit(self._one, run_id, job, i): i for i, job in enumerate(jobs)}
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                for f in done:
                    r = f.result()
                    if r is not None:
                        results.append(r)
        except KeyboardInterrupt:
            status = "interrupted"
            self.cancel()
            raise
        finally:
            if self._cancel.is_set():
                status = "interrupted"
            pool.shutdown(wait=True, cancel_futures=True)
            results.sort(key=lambda r: r.episode_id)
            summary = summarize(results)
            if self.store is not None:
                self.store.runs.finish(run_id, status, summary)
            self.bus.emit(RunFinished(run_id, float(summary["success_rate"] or 0.0), len(results)))
        return run_id, results
