"""The pipeline's results by kind of task: each curriculum tier and each family, stage by stage.

A stage's pass@1 over all eval tasks hides where it comes from. On the curriculum every eval task
belongs to a family of one tier (one-step, multi-step) or to a held-out family (never trained on,
there to measure transfer), so the stage table is also given per tier (`tiers`: the same paired
statistics as `summary.summarize`, over that tier's tasks), and per family (`families`: each
family's eval successes per training seed, and how often RSR's exploration succeeded on its train
tasks: a family exploration never solved is one nothing was learned on).

A task that is not a curriculum instance counts as tier "other", its family its name without
the last part.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.pipeline.lineage import SHARED_STAGES, Lineage
from engine.pipeline.summary import Outcomes, StageOverSeeds, summarize, task_outcomes
from engine.store import Store
from engine.store.records import PIPELINE_STAGES
from engine.tasks.curriculum import family_of_name

TIERS = ("one-step", "multi-step", "held-out")
RSR_ROUNDS = {"RSR-1": 1, "RSR-2": 2}
LEARNED = 0.5  # a family is learned in a seed when some trained stage passes half its eval episodes


def tier_of_family(family: str) -> str:
    """ "one-step", "multi-step", "held-out" (a family never trained on) or "other"."""
    from engine.tasks.curriculum import FAMILIES, family_info

    if family not in FAMILIES:
        return "other"
    info = family_info(family)
    return "held-out" if info.heldout else info.tier


def tier_of(task: str) -> str:
    return tier_of_family(family_of_name(task))


@dataclass(frozen=True)
class FamilyCell:
    """One family in one stage: (successes, scored episodes) per training seed, in `seeds` order,
    and, for an RSR stage, its explore attempts' (successes, attempts) summed over the seeds."""

    per_seed: tuple[tuple[int, int], ...]
    explore: tuple[int, int] | None = None

    @property
    def rate(self) -> float | None:
        rates = [s / n for s, n in self.per_seed if n]
        return sum(rates) / len(rates) if rates else None


@dataclass(frozen=True)
class FamilyRow:
    family: str
    tier: str
    stages: dict[str, FamilyCell]  # stage name -> its cell, for the stages done in some seed
    learned_in: tuple[int, ...]  # training seeds in which a trained stage passed >= LEARNED of its episodes


def tier_summaries(store: Store, seeds: list[int]) -> dict[str, list[StageOverSeeds]]:
    """tier -> the stage table over that tier's eval tasks (tiers with no eval task left out)."""
    read: dict[str, Outcomes] = {}
    found = {}
    for tier in (*TIERS, "other"):
        rows = summarize(store, seeds, keep=lambda task, t=tier: tier_of(task) == t, read=read)
        if any(r.mean is not None for r in rows):
            found[tier] = rows
    return found


def family_rows(store: Store, seeds: list[int]) -> list[FamilyRow]:
    """Every family with eval episodes in some stage, by tier then name."""
    stored = store.stages.all()
    counts: dict[str, dict[str, dict[int, tuple[int, int]]]] = {}  # family -> stage -> seed -> (s, n)
    for name in PIPELINE_STAGES:
        for seed in seeds[:1] if name in SHARED_STAGES else seeds:  # Base: one evaluation for every seed
            key = Lineage(seed).stage_key(name)
            record = stored.get(key)
            if record is None or record.status != "done":
                continue
            for task, by_seed in task_outcomes(store, key).items():
                cell = counts.setdefault(family_of_name(task), {}).setdefault(name, {})
                s, n = cell.get(seed, (0, 0))
                cell[seed] = (s + sum(by_seed.values()), n + len(by_seed))
    explore = _explore_counts(store, seeds)
    rows = []
    for family, stages in counts.items():
        cells = {}
        for name in PIPELINE_STAGES:
            if name in stages:
                per_seed = tuple(stages[name].get(seed, (0, 0)) for seed in seeds if seed in stages[name])
                cells[name] = FamilyCell(per_seed, explore.get((family, name)))
        learned = tuple(
            seed
            for seed in seeds
            if any(
                n and s / n >= LEARNED
                for stage, by_seed in stages.items()
                if stage != "Base"
                for s, n in [by_seed.get(seed, (0, 0))]
            )
        )
        rows.append(FamilyRow(family, tier_of_family(family), cells, learned))
    order = {t: i for i, t in enumerate((*TIERS, "other"))}
    return sorted(rows, key=lambda r: (order[r.tier], r.family))


def _explore_counts(store: Store, seeds: list[int]) -> dict[tuple[str, str], tuple[int, int]]:
    """(family, RSR stage) -> explore (successes, attempts) on its train tasks, over `seeds`."""
    found: dict[tuple[str, str], tuple[int, int]] = {}
    for stage, number in RSR_ROUNDS.items():
        for seed in seeds:
            for task, outcomes in store.rsr.explore_outcomes(Lineage(seed).round_id(number)).items():
                s, n = found.get((family_of_name(task), stage), (0, 0))
                found[(family_of_name(task), stage)] = (s + sum(ok for ok, _ in outcomes), n + len(outcomes))
    return found
