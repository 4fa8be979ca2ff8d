"""A curriculum at the bundled model's frontier: families that generate any number of instances.

The families (`engine/tasks/families/one_command.py`) are one-command (or one short pipeline)
tasks. An instance is drawn from the family's split pool with its own seed, deterministically:
the same (family, split, seed, index) always gives the same task. Train and eval instances never
share parameters.

    trsi-tui tasks generate --family all --instances 20 --split train --seed 0 DEST

This module draws instances, writes them, and writes the suite a `curriculum[:TRAIN,EVAL]` spec
names into the engine's cache.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from engine.tasks.families.one_command import EXTENSIONS, FAMILIES, NUMBER_RANGES, SPLITS, WORD_POOLS, Pool
from engine.tasks.spec import TaskSpec, write_task

__all__ = [
    "DEFAULT_SUITE",
    "EVAL_SEED",
    "EXTENSIONS",
    "FAMILIES",
    "NUMBER_RANGES",
    "SPLITS",
    "SUITE_PREFIX",
    "TRAIN_SEED",
    "WORD_POOLS",
    "CurriculumError",
    "Pool",
    "generate",
    "instance",
    "materialize",
    "parse_suite_spec",
]


class CurriculumError(ValueError):
    pass


def instance(family: str, split: str, seed: int, index: int) -> TaskSpec:
    """One task of `family`, drawn from the `split` pool; the same arguments give the same task."""
    if family not in FAMILIES:
        raise CurriculumError(f"unknown family {family!r}; families: {', '.join(FAMILIES)}")
    if split not in SPLITS:
        raise CurriculumError(f"unknown split {split!r}; splits: {', '.join(SPLITS)}")
    name = f"{family}-{split}-s{seed}-{index:04d}"
    return FAMILIES.instance(family, f"{family}/{split}/{seed}/{index}", name=name, split=split, index=index)


def generate(families: list[str], instances: int, split: str, seed: int, dest: Path) -> list[Path]:
    """Write `instances` tasks of each family into dest/<split>/<name>; returns their directories."""
    written = []
    for family in families:
        for index in range(instances):
            spec = instance(family, split, seed, index)
            if (Path(dest) / split / spec.name).exists():
                raise CurriculumError(f"{Path(dest) / split / spec.name} already exists")
            write_task(spec, family, split, Path(dest))
            written.append(Path(dest) / split / spec.name)
    return written


# `tasks = "curriculum"` (or `--tasks curriculum:TRAIN,EVAL`): the engine writes the suite itself,
# deterministically, into its cache; a clone needs no committed task folders.
SUITE_PREFIX = "curriculum"
DEFAULT_SUITE = (8, 4)  # instances per family: train (seed 0), eval (seed 1): 136 and 68 tasks
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
    root = Path(cache_dir) / "curriculum" / f"train{train}-s{TRAIN_SEED}-eval{evaluation}-s{EVAL_SEED}"
    if root.is_dir():
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=root.name + ".", dir=root.parent))
    try:
        generate(list(FAMILIES), train, "train", TRAIN_SEED, tmp)
        generate(list(FAMILIES), evaluation, "eval", EVAL_SEED, tmp)
        tmp.rename(root)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not root.is_dir():  # another process may have won the rename
            raise
    return root
