"""Which tasks and rollouts an RPR round spends its compute and its update on.

A round samples tasks at the frontier: one whose rollouts all succeed, or all earn nothing,
has nothing left to teach by PPO (DAPO's and prime-rl's dynamic sampling). Each task's pass rate
for the current actor is estimated from the stage's rollouts so far and, as a weaker prior, from
the latest RSR round that explored it; a round takes the tasks whose estimate is most uncertain
(largest p(1 - p)), so rounds go where the outcome can still go either way. And a group of one
task's rollouts whose rewards are all equal carries no preference between replies.
"""

from __future__ import annotations

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


def frontier_priority(seen: list[Outcome], prior: list[Outcome], prior_weight: float) -> float:
    """p(1 - p) of the task's pass rate p, the mean of a Beta(1, 1) posterior over the stage's own
    rollouts and the prior's outcomes counted `prior_weight` each (an earlier model's attempts)."""
    successes = sum(ok for ok, _ in seen) + prior_weight * sum(ok for ok, _ in prior)
    attempts = len(seen) + prior_weight * len(prior)
    p = (successes + 1) / (attempts + 2)
    return p * (1 - p)


def choose_tasks(
    tasks: list,
    seen: dict[str, list[Outcome]],
    prior: dict[str, list[Outcome]],
    k: int,
    *,
    settled_after: int,
    prior_weight: float = 0.5,
) -> list:
    """The `k` tasks (of `tasks`, in their seeded order) a round samples: the most uncertain first,
    then the least tried, then by order; a task settled by the stage's own rollouts (at least
    `settled_after` of them all succeeded or all earned nothing) only when nothing else is left."""
    settled = settled_tasks(seen, settled_after) if settled_after else set()
    ranked = sorted(
        range(len(tasks)),
        key=lambda i: (
            tasks[i].name in settled,
            -round(frontier_priority(seen.get(tasks[i].name, []), prior.get(tasks[i].name, []), prior_weight), 9),
            len(seen.get(tasks[i].name, [])),
            i,
        ),
    )
    return [tasks[i] for i in ranked[:k]]
