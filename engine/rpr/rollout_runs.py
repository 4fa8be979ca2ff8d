"""Rollouts: run a plan's missing keyed jobs, then read back every planned rollout.

Reads the plan's finished jobs (store.rpr.finished) and, for each, the stored episode
(rollouts.load_rollout). Writes the episodes of the jobs not yet finished, each linked to its key
the moment it is stored (Resumable.run_keyed). Returns a `RolloutBatch`: the planned rollouts
found stored, in plan order, with their keys.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from engine.config import AgentSettings
from engine.rollout.agent_spec import model_agents
from engine.rollout.runner import EpisodeJob
from engine.rpr.plan import Plan
from engine.rpr.rollouts import Rollout, load_rollout
from engine.store import Store

RunKeyed = Callable[..., str]  # Resumable.run_keyed(scope, jobs, *, kind, what)


@dataclass(frozen=True)
class RolloutBatch:
    keyed: tuple[tuple[str, Rollout], ...]
    seconds: float  # running the missing jobs and reading every rollout back

    @property
    def rollouts(self) -> list[Rollout]:
        return [r for _, r in self.keyed]


class RolloutRunner:
    """Runs plans for one stage, with the rollout policy of the actor being served."""

    def __init__(
        self, store: Store, run_keyed: RunKeyed, load_policy: Callable[[str], object], agent: AgentSettings
    ) -> None:
        self.store, self.run_keyed, self.load_policy, self.agent = store, run_keyed, load_policy, agent
        self._policy, self._policy_spec = None, ""

    def _rollout_policy(self, spec: str):
        """Reloaded only when the served actor changed (called on the stage's own thread, before
        episode threads start)."""
        if self._policy_spec != spec:
            self._policy = self.load_policy(spec)
            self._policy_spec = spec
        return self._policy

    def run(self, plan: Plan, spec: str) -> RolloutBatch:
        done = self.store.rpr.finished(plan.scope)
        todo = [job for job in plan.jobs if job.key not in done]
        started = time.monotonic()
        if todo:
            policy = self._rollout_policy(spec)
            jobs = [
                (
                    job.key,
                    EpisodeJob(job.task, model_agents(spec, policy, self.agent, seed=job.seed), attempt=plan.attempt),
                )
                for job in todo
            ]
            self.run_keyed(plan.scope, jobs, kind=plan.kind, what=plan.what)
        done = self.store.rpr.finished(plan.scope)
        keyed = tuple((job.key, load_rollout(self.store, done[job.key])) for job in plan.jobs if job.key in done)
        return RolloutBatch(keyed, time.monotonic() - started)
