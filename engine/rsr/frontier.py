"""Frontier-aware exploration: where another attempt can still find a verified success.

Self-improvement on a small model works only on tasks it can sometimes solve: a task it never
gets anywhere near teaches nothing, and one it always solves needs no more attempts. These pure
functions decide, from a task's stored attempts, whether it gets another one, and estimate its
pass rate for the current model.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.config import RsrConfig

Attempt = tuple[bool, float]  # (passed every check, reward)


@dataclass(frozen=True)
class PassEstimate:
    """How often the model solves a task: successes over attempts, the Laplace estimate
    (s + 1) / (n + 2) that stays strictly between 0 and 1, and the mean reward (partial credit)."""

    attempts: int
    successes: int
    mean_reward: float

    @classmethod
    def of(cls, tried: list[tuple[bool, float]]) -> PassEstimate:
        n = len(tried)
        return cls(n, sum(ok for ok, _ in tried), sum(r for _, r in tried) / n if n else 0.0)

    @property
    def rate(self) -> float:
        return (self.successes + 1) / (self.attempts + 2)


def wants_attempt(
    tried: list[Attempt],
    settings: RsrConfig,
    floor: float = 0.0,
    examples: bool = False,
    unsolved: bool = False,
    followups: int = 0,
) -> bool:
    """Another attempt for a (task, harness) pair? Every pair gets `min_attempts`; then pairs that
    can be shown worked examples (verified successes on similar tasks: `examples`) continue, and
    so do pairs that showed they can get somewhere (a success, or partial credit above `floor`,
    what doing nothing earns on the task), until `target_successes` or `attempts`. A pair whose
    task's family has no success in the round yet (`unsolved`) goes on unaided up to
    `unsolved_family_attempts`: a first success there is worth more than another anywhere else.
    A pair with no success of its own that is owed `followups` (attempts shown its family's
    success, which came after it had used its own) goes on, shown worked examples, past any cap."""
    successes = sum(ok for ok, _ in tried)
    if followups > 0 and examples and successes == 0:
        return True
    cap = max(settings.attempts, settings.unsolved_family_attempts) if unsolved else settings.attempts
    if len(tried) >= cap or successes >= settings.target_successes:
        return False
    if unsolved and len(tried) < settings.unsolved_family_attempts:
        return True
    if len(tried) >= settings.attempts:
        return False
    if len(tried) < settings.min_attempts or examples:
        return True
    return successes > 0 or any(reward > floor + 1e-9 for _, reward in tried)
