"""The probe's score: how the actor after some joint rounds does on the stage's fixed probe jobs.

Reads a probe's rollouts (a RolloutBatch of Planner.probe's plan). Writes nothing. Returns a
`ProbeResult` (None when no rollout was scored) with its metrics and its progress line.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.rpr.rollout_runs import RolloutBatch


@dataclass(frozen=True)
class ProbeResult:
    index: int  # joint rounds before the probe
    success: float
    reward: float
    tasks: int
    episodes: int  # per task

    def metrics(self) -> dict[str, float]:
        return {"rpr/probe_success": self.success, "rpr/probe_reward": self.reward}

    def progress(self, first_success: float | None) -> str:
        """`first_success`: the stage's first probe's success rate, for comparison (None: unknown)."""
        since = f" (before joint round 1: {first_success:.2f})" if self.index and first_success is not None else ""
        return (
            f"probe after {self.index} joint round(s): success {self.success:.2f}, reward {self.reward:.3f} on "
            f"{self.tasks} fixed train task(s) x {self.episodes}{since}"
        )


def score(batch: RolloutBatch, *, index: int, tasks: int, episodes: int) -> ProbeResult | None:
    scored = [r for _, r in batch.keyed if r.reward is not None]
    if not scored:
        return None
    success = sum(r.success for r in scored) / len(scored)
    reward = sum(r.reward for r in scored) / len(scored)
    return ProbeResult(index, success, reward, tasks, episodes)
