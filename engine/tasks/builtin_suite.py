"""The built-in task suite (assets/tasks/{train,eval}/): three instances of each of its families.

The families are in `engine/tasks/families/builtin_trivial_easy.py` and `builtin_medium_hard.py`;
train and eval instances never share parameters. Every verifier runs several checks, writes one
CTRF test per check plus reward.txt, and carries the canary string. `assets/generate.py`
rewrites or checks the committed suite.
"""

from __future__ import annotations

import filecmp
from pathlib import Path

from engine.tasks.families import builtin_medium_hard, builtin_trivial_easy
from engine.tasks.families.registry import Families
from engine.tasks.spec import write_task

# The order is part of every instance's seed: a family added at the end changes no other task.
FAMILIES = Families.joined(builtin_trivial_easy.FAMILIES, builtin_medium_hard.FAMILIES)
INSTANCES = 3
# Instances 0 and 1 of each family go to train, instance 2 to eval.
SPLIT_OF = {0: "train", 1: "train", 2: "eval"}


def generate(dest: Path) -> int:
    """Write every instance of every family into dest/<split>/<name>; returns how many."""
    count = 0
    for fam_index, family in enumerate(FAMILIES):
        for k in range(INSTANCES):
            # A per-(family, instance) seed: regenerating never reshuffles other tasks.
            spec = FAMILIES.instance(family, 1000 * fam_index + k, name=f"{family}-{k + 1}", split=SPLIT_OF[k], index=k)
            write_task(spec, family, SPLIT_OF[k], dest)
            count += 1
    return count


def same_tree(a: Path, b: Path) -> bool:
    """Whether the directories hold the same files with the same bytes."""
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.diff_files or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    if mismatch or errors:
        return False
    return all(same_tree(a / s, b / s) for s in cmp.common_dirs)
