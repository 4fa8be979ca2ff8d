"""Fresh task instances for RPR: every round draws tasks the actor has never seen.

On a curriculum suite (engine/tasks/curriculum.py: families that generate any number of
instances), a round does not replay the suite's train tasks, which a PPO actor would memorize
round after round, and whose groups soon all succeed. It takes the families whose rewards for
the current actor are expected to vary most (sampling.choose_tasks over families: a family the
actor always solves, or never gets anywhere with, has nothing to teach by PPO), and draws one new
instance of each from the curriculum's train pools with a seed of its own (engine/keys.py:
fresh_instance_seed). The probe is drawn the same way, once per stage, so it too measures the
kind of task rather than tasks trained on.

The instances are written under the stage's checkpoint directory (`tasks/`), so a resumed stage,
a cluster worker (which gets them shipped like any task) and a person reading the checkpoint
find the very tasks that were trained on. Held-out families (`heldout` in a task's metadata) are
never drawn: they measure transfer.

Reads: the suite's train tasks (for their families), the evidence the planner gathered.
Writes: task folders under `<stage dir>/tasks/`. Returns: `Task`s.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from engine.keys import fresh_instance_seed
from engine.tasks import Task, load_task
from engine.tasks.curriculum import family_of_name

__all__ = ["FreshInstances", "curriculum_families", "family_of_name"]


def curriculum_families(tasks: list[Task]) -> list[str]:
    """The trainable curriculum families of `tasks` in their first-seen order; [] when any task is
    not a curriculum instance (an imported or built-in suite has no generator to draw from)."""
    from engine.tasks.curriculum import FAMILIES

    found: list[str] = []
    for task in tasks:
        family = str(task.metadata.get("family") or "")
        if task.metadata.get("category") not in (None, "curriculum") or family not in FAMILIES:
            return []
        if not task.metadata.get("heldout") and family not in found:
            found.append(family)
    return found


class FreshInstances:
    """Draws and writes the fresh instances of one RPR stage."""

    def __init__(self, root: Path, families: list[str], *, seed: int, number: int) -> None:
        self.root, self.families, self.seed, self.number = Path(root), list(families), seed, number

    def draw(self, families: list[str], iteration: int | None) -> list[Task]:
        """One new instance of each of `families` (a family named twice gets two) for round
        `iteration` (None: the probe); the same arguments give the same tasks."""
        return [
            self._task(family, fresh_instance_seed(self.seed, self.number, iteration, slot))
            for slot, family in enumerate(families)
        ]

    def _task(self, family: str, seed: int) -> Task:
        from engine.tasks.curriculum import generate, instance

        name = instance(family, "train", seed, 0).name
        folder = self.root / "train" / name
        if not folder.is_dir():
            # Written aside and renamed: a kill never leaves a half-written task to be loaded.
            self.root.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".fresh.", dir=self.root))
            try:
                generate([family], 1, "train", seed, tmp)
                folder.parent.mkdir(parents=True, exist_ok=True)
                (tmp / "train" / name).rename(folder)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        return load_task(folder, "train")
