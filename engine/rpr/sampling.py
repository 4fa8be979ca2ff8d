"""Which tasks and rollouts an RPR round spends its compute and its update on.

A round samples tasks at the frontier: one whose rollouts all succeed, or all earn nothing,
has nothing left to teach by PPO (DAPO's and prime-rl's dynamic sampling). And a group of one
task's rollouts whose rewards are all equal carries no preference between replies.
"""

from __future__ import annotations

from engine.rpr.rollouts import Rollout


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
