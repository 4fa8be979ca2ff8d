"""A curriculum at the bundled model's frontier: families that generate any number of instances.

Two tiers of families: one-step (`engine/tasks/families/one_command.py`: one command or one
short pipeline; `counting.py`: those whose answer is a number) and multi-step (`multi_step.py`:
read something in the sandbox, then act on it). Some families of each tier are held out
(`heldout.py`): never trained on, only evaluated, to measure transfer. An instance is drawn
from the family's split pool with its own seed, deterministically: the same (family, split,
seed, index) always gives the same task, worded in one of several phrasings (`phrasing.py`).
Train and eval instances never share parameters.

    trsi-tui tasks generate --family all --instances 20 --split train --seed 0 DEST

This module draws instances, writes them, and writes the suite a `curriculum[:TRAIN,EVAL]` spec
names into the engine's cache: train instances of the trained families, eval instances of all.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from engine.tasks.families import counting, heldout, multi_step, one_command
from engine.tasks.families.folders import folder_for, moved
from engine.tasks.families.pools import EXTENSIONS, NUMBER_RANGES, SPLITS, WORD_POOLS, Pool
from engine.tasks.families.registry import Families
from engine.tasks.spec import TaskSpec, write_task

__all__ = [
    "family_of_name",
    "DEFAULT_SUITE",
    "EVAL_SEED",
    "EXTENSIONS",
    "FAMILIES",
    "GROUPS",
    "HELDOUT_FAMILIES",
    "NUMBER_RANGES",
    "SPLITS",
    "SUITE_PREFIX",
    "TIERS",
    "TRAINED_FAMILIES",
    "TRAIN_SEED",
    "WORD_POOLS",
    "CurriculumError",
    "FamilyInfo",
    "Pool",
    "family_info",
    "generate",
    "instance",
    "materialize",
    "parse_suite_spec",
    "select",
]


@dataclass(frozen=True)
class FamilyInfo:
    name: str
    tier: str  # "one-step" or "multi-step"
    heldout: bool  # evaluated only: no train instance in the curriculum suite


TIERS = ("one-step", "multi-step")
# (set, tier, held out), in the order FAMILIES lists them.
_SETS = (
    (one_command.FAMILIES, "one-step", False),
    (counting.FAMILIES, "one-step", False),
    (heldout.ONE_STEP, "one-step", True),
    (multi_step.FAMILIES, "multi-step", False),
    (heldout.MULTI_STEP, "multi-step", True),
)
FAMILIES = Families.joined(*(families for families, _, _ in _SETS))
_INFO = {name: FamilyInfo(name, tier, held) for families, tier, held in _SETS for name in families}
TRAINED_FAMILIES = [name for name in FAMILIES if not _INFO[name].heldout]
HELDOUT_FAMILIES = [name for name in FAMILIES if _INFO[name].heldout]
# What `trsi-tui tasks generate --family` takes besides a family's name.
GROUPS = {
    "all": list(FAMILIES),
    **{tier: [name for name in FAMILIES if _INFO[name].tier == tier] for tier in TIERS},
    "trained": TRAINED_FAMILIES,
    "heldout": HELDOUT_FAMILIES,
}


class CurriculumError(ValueError):
    pass


def family_info(name: str) -> FamilyInfo:
    """The tier of family `name` and whether it is held out."""
    if name not in _INFO:
        raise CurriculumError(f"unknown family {name!r}; families: {', '.join(FAMILIES)}")
    return _INFO[name]


def family_of_name(name: str) -> str:
    """The family of a task named as `instance` names it (`<family>-<split>-s<seed>-<index>`); for
    any other name, the name without its last `-` part."""
    for split in SPLITS:
        head, mark, _ = name.rpartition(f"-{split}-s")
        if mark:
            return head
    return name.rsplit("-", 1)[0]


def instance(family: str, split: str, seed: int, index: int) -> TaskSpec:
    """One task of `family`, drawn from the `split` pool; the same arguments give the same task."""
    if family not in FAMILIES:
        raise CurriculumError(f"unknown family {family!r}; families: {', '.join(FAMILIES)}")
    if split not in SPLITS:
        raise CurriculumError(f"unknown split {split!r}; splits: {', '.join(SPLITS)}")
    name = f"{family}-{split}-s{seed}-{index:04d}"
    return FAMILIES.instance(family, f"{family}/{split}/{seed}/{index}", name=name, split=split, index=index)


def select(names: list[str]) -> list[str]:
    """Families by name or by group ("all", a tier, "trained", "heldout"), each once, in
    FAMILIES order."""
    chosen: set[str] = set()
    for name in names:
        if name in GROUPS:
            chosen.update(GROUPS[name])
        elif name in FAMILIES:
            chosen.add(name)
        else:
            raise CurriculumError(
                f"unknown family {name!r}; families: {', '.join(FAMILIES)}; groups: {', '.join(GROUPS)}"
            )
    return [name for name in FAMILIES if name in chosen]


def generate(
    families: list[str], instances: int, split: str, seed: int, dest: Path, *, elsewhere: bool = False
) -> list[Path]:
    """Write `instances` tasks of each family into dest/<split>/<name>; returns their directories.
    `families` may name groups (`select`). `elsewhere`: each task moved out of /app
    (`families/folders.py`)."""
    written = []
    for family in select(families):
        for index in range(instances):
            spec = instance(family, split, seed, index)
            if elsewhere:
                spec = moved(spec, folder_for(spec.name, split))
            if (Path(dest) / split / spec.name).exists():
                raise CurriculumError(f"{Path(dest) / split / spec.name} already exists")
            info = family_info(family)
            write_task(spec, family, split, Path(dest), tier=info.tier, heldout=info.heldout)
            written.append(Path(dest) / split / spec.name)
    return written


# `tasks = "curriculum"` (or `--tasks curriculum:TRAIN,EVAL`): the engine writes the suite itself,
# deterministically, into its cache; a clone needs no committed task folders.
SUITE_PREFIX = "curriculum"
# Instances per family: train (seed 0) of the 26 trained families, eval (seed 1) of all 32: 208
# and 128 tasks.
DEFAULT_SUITE = (8, 4)
TRAIN_SEED, EVAL_SEED = 0, 1


def parse_suite_spec(spec: str) -> tuple[int, int] | None:
    """ "curriculum" -> DEFAULT_SUITE, "curriculum:8,4" -> (8, 4); None for anything else (a path)."""
    name, sep, counts = spec.strip().partition(":")
    if name != SUITE_PREFIX:
        return None
    if not sep:
        return DEFAULT_SUITE
    try:
        train, evaluation = (int(c) for c in counts.split(","))
    except ValueError:
        raise CurriculumError(
            f"{spec!r}: write curriculum:TRAIN,EVAL (instances per family, like curriculum:8,4)"
        ) from None
    if not (1 <= train <= 1000 and 1 <= evaluation <= 1000):
        raise CurriculumError(f"{spec!r}: instances per family go from 1 to 1000")
    return train, evaluation


def materialize(spec: str, cache_dir: Path) -> Path | None:
    """The suite a curriculum spec names, written into `cache_dir` on first use; None when `spec`
    is not a curriculum spec. Written to a temporary directory and renamed, so a half-written
    suite is never used."""
    counts = parse_suite_spec(spec)
    if counts is None:
        return None
    train, evaluation = counts
    # v2: multi-step and held-out families, phrasings; v3: the larger train word pool; v4:
    # note-to-folder and exec-listed checks that a destructive command no longer passes; v5:
    # checks that compare whole files (inputs kept, outputs, moved files), refuse a link for a
    # copy and a write permission nobody asked for; v6: counts drawn from ranges no fixed guess
    # passes often in (grep-count, count-files, count-lines). A suite cached before a change is
    # never reused.
    root = Path(cache_dir) / "curriculum" / f"v6-train{train}-s{TRAIN_SEED}-eval{evaluation}-s{EVAL_SEED}"
    if root.is_dir():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=root.name + ".", dir=root.parent))
    try:
        generate(TRAINED_FAMILIES, train, "train", TRAIN_SEED, tmp)
        generate(list(FAMILIES), evaluation, "eval", EVAL_SEED, tmp)
        tmp.rename(root)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not root.is_dir():  # another process may have won the rename
            raise
    return root
