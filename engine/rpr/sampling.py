"""Which tasks and rollouts an RPR round spends its compute and its update on.

A round samples tasks at the frontier: one whose rollouts all succeed, or all earn nothing,
has nothing left to teach by PPO (DAPO's and prime-rl's dynamic sampling). So a round takes the
tasks whose rewards for the current actor are expected to vary most, judged from the stage's
rollouts so far (of the task and of similar tasks) and, as a weaker prior, from the parent RSR
round's explore attempts. The measure is the variance of the rewards, not the chance that two
differ: with the success-first reward a task that sometimes succeeds varies far more than one
whose rollouts only earn different partial credit, and an RPR-1 that ranked by the chance of a
difference spent its last six rounds on tasks it expected to solve 1 to 4% of the time (it
solved none). And a group of one task's rollouts whose rewards are all equal carries no
preference between replies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from engine.rpr.rollouts import Rollout

Outcome = tuple[bool, float]  # (passed every check, reward)


def settled_tasks(outcomes: dict[str, list[tuple[bool, float]]], need: int) -> set[str]:
    """Tasks with at least `need` scored rollouts that all succeeded or all earned 0."""
    return {
        name
        for name, got in outcomes.items()
        if len(got) >= need and (all(ok for ok, _ in got) or all(reward == 0 for _, reward in got))
    }


def informative(keyed: list[tuple[str, Rollout]]) -> list[Rollout]:
    """All rollouts but those of groups of two or more whose rewards are all equal; a group is one
    task's rollouts of a round, their keys differing only in the last field (`phase|task|m|k`).
    A lone rollout stays: the critic's baseline, not its group, gives its advantage."""
    groups: dict[str, list[Rollout]] = {}
    for key, rollout in keyed:
        groups.setdefault(key.rsplit("|", 1)[0], []).append(rollout)
    return [r for group in groups.values() if len(group) == 1 or len({r.reward for r in group}) > 1 for r in group]


# Pseudo-outcomes every estimate starts from: a reward of 0 and one of 1, a quarter of a rollout
# each, so that a task nothing is known about looks as informative as any.
PSEUDO = ((0.0, 0.25), (1.0, 0.25))


def reward_variance(outcomes: list[tuple[float, float]]) -> float:
    """The variance of a rollout's reward, from (reward, weight) pairs plus the pseudo-outcomes:
    0 when every rollout ends the same way, so that a group of them would carry no preference
    between replies; 0.25 at most, for a task that succeeds half the time. A group's advantages
    (reward minus its baseline) scale with its rewards' spread, so this is what a round learns from."""
    pairs = (*PSEUDO, *outcomes)
    total = sum(w for _, w in pairs)
    mean = sum(r * w for r, w in pairs) / total
    return max(0.0, sum(w * (r - mean) ** 2 for r, w in pairs) / total)


@dataclass(frozen=True)
class Evidence:
    """What is known of the current actor on each task: the stage's own rollouts of it (weight 1
    each), of similar tasks (weight similarity**kin_power: a kind of task the actor always solves,
    or never gets anywhere with, is settled for its other instances too), and a prior's outcomes
    (an earlier model's, `prior_weight` each)."""

    seen: dict[str, list[Outcome]]
    prior: dict[str, list[Outcome]]
    similarity: Callable[[str, str], float] | None = None
    prior_weight: float = 0.5
    kin_power: float = 4.0

    def of(self, name: str) -> list[tuple[bool, float, float]]:
        """(success, reward, weight) of every outcome that bears on `name`."""
        found = [(ok, r, 1.0) for ok, r in self.seen.get(name, [])]
        found += [(ok, r, self.prior_weight) for ok, r in self.prior.get(name, [])]
        if self.similarity is not None:
            for other, outcomes in self.seen.items():
                w = self.similarity(name, other) ** self.kin_power if other != name else 0.0
                if w > 1e-3:
                    found += [(ok, r, w) for ok, r in outcomes]
        return found

    def informative(self, name: str) -> float:
        """How much the rewards of the task's rollouts are expected to vary."""
        return reward_variance([(r, w) for _, r, w in self.of(name)])

    def expected_success(self, name: str) -> float:
        """The task's pass rate as the evidence has it (with the pseudo-outcomes: 0.5 on none)."""
        found = self.of(name)
        return (sum(w for ok, _, w in found if ok) + PSEUDO[1][1]) / (sum(w for *_, w in found) + 2 * PSEUDO[1][1])


def choose_tasks(tasks: list, evidence: Evidence, k: int, *, settled_after: int, name=lambda t: t.name) -> list:
    """The `k` tasks (of `tasks`, in their seeded order) a round samples: those whose rollouts for
    the current actor are expected to vary most in reward (a group PPO can learn from), then the
    least tried, then by order. A task is not used up by a round: one that went both ways stays
    first until the actor settles it. A task settled by its own rollouts (at least `settled_after`,
    all succeeded or all earned nothing) comes only when nothing else is left. `name` gives an
    item's name in the evidence (families are ranked the same way: engine/rpr/fresh.py)."""
    seen = evidence.seen
    settled = settled_tasks(seen, settled_after) if settled_after else set()
    names = [name(t) for t in tasks]
    ranked = sorted(
        range(len(tasks)),
        key=lambda i: (names[i] in settled, -round(evidence.informative(names[i]), 9), len(seen.get(names[i], [])), i),
    )
    return [tasks[i] for i in ranked[:k]]


def mixed_fraction(keyed: list[tuple[str, Rollout]]) -> float:
    """The fraction of a round's groups (one task's rollouts, two or more of them scored) whose
    rewards differ: the groups PPO can learn a preference from. NaN when there is no such group."""
    groups: dict[str, list[float]] = {}
    for key, rollout in keyed:
        if rollout.reward is not None:
            groups.setdefault(key.rsplit("|", 1)[0], []).append(rollout.reward)
    eligible = [rewards for rewards in groups.values() if len(rewards) > 1]
    return sum(len(set(r)) > 1 for r in eligible) / len(eligible) if eligible else float("nan")
