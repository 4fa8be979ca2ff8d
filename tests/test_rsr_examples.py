"""RSR explore's worked examples: the round's own successes on the most similar other tasks."""

from __future__ import annotations

from engine.rollout.harnesses import WorkedExample
from engine.rsr.examples import ExampleIndex
from engine.tasks.curriculum import FAMILIES, instance


def _example(instruction: str) -> WorkedExample:
    return WorkedExample(instruction, (("true", "Output: (nothing)"),))


def test_the_nearest_solved_tasks_are_of_the_same_kind_and_never_the_task_itself():
    tasks = {spec.name: spec.instruction for f in FAMILIES for spec in (instance(f, "train", 0, i) for i in range(4))}
    index = ExampleIndex(tasks)
    pool = {name: _example(text) for name, text in tasks.items() if name.endswith("-0000") or name.endswith("-0001")}
    for family in FAMILIES:
        target = instance(family, "train", 0, 2).name
        shown = index.nearest(target, pool, 2)
        # Both examples are of the task's own family, whatever its file names and words.
        assert sorted(e.instruction for e in shown) == sorted(tasks[f"{family}-train-s0-000{i}"] for i in (0, 1)), (
            family
        )
    solved = instance("copy-file", "train", 0, 0).name
    assert all(e.instruction != tasks[solved] for e in index.nearest(solved, pool, 3))


def test_examples_are_chosen_deterministically_and_the_most_similar_comes_last():
    index = ExampleIndex(
        {"a": "Copy /app/x to /app/y.", "b": "Copy /app/p to /app/q.", "c": "Rename /app/p to /app/q."}
    )
    pool = {"b": _example("Copy /app/p to /app/q."), "c": _example("Rename /app/p to /app/q.")}
    shown = index.nearest("a", pool, 2)
    assert [e.instruction for e in shown] == ["Rename /app/p to /app/q.", "Copy /app/p to /app/q."]
    assert index.nearest("a", pool, 2) == shown and index.nearest("a", {}, 2) == ()
