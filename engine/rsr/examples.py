"""The round's own verified successes as worked examples for similar tasks (RSR explore).

A small model solves a task far more often when its prompt holds a worked example of a similar
one: the bundled 135M model went from 5 to 22 of 68 attempts on held-out train instances with
one example of the same kind of task (docs/results.md). So after the unaided attempts that
estimate each task's pass rate, explore attempts show the model up to `[rsr] examples` of the
round's verified successes on the most similar *other* tasks (engine/tasks/similarity.py). The
only source of these examples is the model itself (its own commands, each re-checked by the
verifier), never a reference solution; and an SFT sample is rebuilt with the harness's own
prompt, so the trained model has to act without them, as a runbook is removed.
"""

from __future__ import annotations

from engine.rollout.harnesses import WorkedExample
from engine.tasks.similarity import TaskSimilarity


class ExampleIndex:
    """Nearest solved tasks by instruction, over a fixed set of tasks (the split the round explores)."""

    def __init__(self, instructions: dict[str, str]) -> None:
        self.similarity = TaskSimilarity(instructions)

    def nearest(self, task: str, pool: dict[str, WorkedExample], k: int) -> tuple[WorkedExample, ...]:
        """Up to `k` examples of the pool (task name -> example) from the tasks most similar to
        `task`, never its own; the most similar last, nearest the task message."""
        return tuple(pool[name] for name in reversed(self.similarity.nearest(task, pool, k)))
