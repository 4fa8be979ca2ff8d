"""Independent training seeds: each one is its own lineage Base -> RSR-1 -> ... -> RPR-2, in one store.

Base is the same model whatever the training seed, so its stage record and evaluation are shared.
Every other stage, RSR/RPR round number and checkpoint directory belongs to one lineage:

- seed 0 keeps the plain names ("RSR-1", round 1, checkpoints/rsr-1), so a single-seed store reads
  as it always has and a later multi-seed run continues it instead of starting over;
- seed s > 0 adds " seed s" to its stage names and 100 x s to its round numbers ("RSR-1 seed 2",
  round 201, checkpoints/rsr-201).

All lineages are evaluated on the same eval tasks with the same sampling seeds (those follow
`[pipeline] seed`, never the training seed), so a stage can be compared with its parent task by
task, and one seed's stage with another's.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.store.records import PIPELINE_STAGES, StageRecord

MAX_SEED = 99
ROUND_STRIDE = 100  # round numbers per lineage; a lineage has rounds 1 and 2
SHARED_STAGES = ("Base",)


def parse_seeds(text: str) -> list[int]:
    """'0,1,2' or '0-2' -> [0, 1, 2]; ValueError with the reason otherwise."""
    seeds: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        low, sep, high = part.partition("-")
        try:
            values = range(int(low), int(high) + 1) if sep else [int(part)]
        except ValueError:
            raise ValueError(f"{part!r} is not a seed or a range of seeds (like 0,1,2 or 0-2)") from None
        seeds += [v for v in values if v not in seeds]
    if not seeds:
        raise ValueError("no training seed given (like 0,1,2)")
    bad = [s for s in seeds if not 0 <= s <= MAX_SEED]
    if bad:
        raise ValueError(f"training seeds go from 0 to {MAX_SEED}; got {', '.join(map(str, bad))}")
    return seeds


@dataclass(frozen=True)
class Lineage:
    seed: int

    def __post_init__(self) -> None:
        if not 0 <= self.seed <= MAX_SEED:
            raise ValueError(f"training seeds go from 0 to {MAX_SEED}; got {self.seed}")

    def stage_key(self, name: str) -> str:
        """The name this lineage's stage is stored under."""
        return name if self.seed == 0 or name in SHARED_STAGES else f"{name} seed {self.seed}"

    def round_id(self, round_: int) -> int:
        """The RSR/RPR round number this lineage's round is stored and checkpointed under."""
        if not 1 <= round_ < ROUND_STRIDE:
            raise ValueError(f"a lineage has rounds 1 to {ROUND_STRIDE - 1}, not {round_}")
        return self.seed * ROUND_STRIDE + round_

    def records(self, stored: dict[str, StageRecord]) -> dict[str, StageRecord]:
        """This lineage's stage records, under the plain stage names."""
        return {name: stored[self.stage_key(name)] for name in PIPELINE_STAGES if self.stage_key(name) in stored}


def parse_stage_key(key: str) -> tuple[str, int] | None:
    """A stored stage name -> (pipeline stage, training seed), the inverse of `Lineage.stage_key`:
    "RSR-1 seed 2" -> ("RSR-1", 2), "RSR-1" -> ("RSR-1", 0); None for any other name."""
    name, _, seed = key.partition(" seed ")
    if name not in PIPELINE_STAGES or not (seed.isdigit() or key == name):
        return None
    return name, int(seed or 0)


def stored_seeds(stored: dict[str, StageRecord]) -> list[int]:
    """The training seeds with at least one stage of their own in the store."""
    parsed = [parse_stage_key(key) for key in stored]
    return sorted({seed for name, seed in filter(None, parsed) if name not in SHARED_STAGES})
