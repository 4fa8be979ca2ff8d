"""RPR on a curriculum draws fresh instances of the families at the frontier (engine/rpr/fresh.py):
the actor never sees a round's task twice, and never a suite task it could have memorized."""

from __future__ import annotations

from pathlib import Path

from engine.config import RprConfig
from engine.rpr.fresh import FreshInstances, curriculum_families, family_of_name
from engine.rpr.plan import Planner, Round
from engine.rpr.sampling import Evidence, choose_tasks, mixed_fraction
from engine.store import Store
from engine.tasks import load_suite
from engine.tasks.curriculum import generate
from tests.test_frontier import rollout


def suite(tmp_path: Path, families: list[str]):
    generate(families, 2, "train", 0, tmp_path / "suite")
    return load_suite(tmp_path / "suite").split("train")


def test_each_round_draws_new_instances_that_no_suite_task_or_other_round_shares(tmp_path: Path):
    tasks = suite(tmp_path, ["count-lines", "sort-file", "copy-file"])
    settings = RprConfig(tasks_per_round=4, episodes_per_task=2, critic_warmup_rounds=1, rounds=2, probe_tasks=3)
    planner = Planner(Store(tmp_path / "db.sqlite"), number=1, seed=0, settings=settings)
    planner.fresh = FreshInstances(tmp_path / "stage" / "tasks", curriculum_families(tasks), seed=0, number=1)
    rounds = [planner.round(tasks, Round(i, 3, 1)) for i in range(3)]
    names = [t.name for r in rounds for t in r.tasks]
    suite_names = {t.name for t in tasks}
    assert len(names) == 12 and len(set(names)) == 12 and not set(names) & suite_names
    # Four slots over three families: every family gets one before any gets a second.
    assert {family_of_name(t.name) for t in rounds[0].tasks} == {"count-lines", "sort-file", "copy-file"}
    # Each is a real, loadable task of its family, written under the stage's directory.
    first = rounds[0].tasks[0]
    assert first.path.is_relative_to(tmp_path / "stage" / "tasks") and (first.path / "tests" / "test.sh").is_file()
    assert first.metadata["family"] == family_of_name(first.name)
    # A resumed stage plans exactly the same round (same names, same keys, same seeds).
    again = Planner(Store(tmp_path / "db.sqlite"), number=1, seed=0, settings=settings)
    again.fresh = FreshInstances(tmp_path / "stage" / "tasks", curriculum_families(tasks), seed=0, number=1)
    assert again.round(tasks, Round(1, 3, 1)).plan.jobs == rounds[1].plan.jobs
    # The probe is fresh too, and the same for every probe of the stage.
    probe = planner.probe_set(tasks)
    assert len(probe) == 3 and not {t.name for t in probe} & (suite_names | set(names))
    assert planner.probe_jobs(tasks) == again.probe_jobs(tasks)


def test_families_at_the_frontier_go_first_and_held_out_or_foreign_suites_are_never_drawn(tmp_path: Path):
    families = ["always", "never", "coin", "untried"]
    seen = {"always": [(True, 1.0)] * 4, "never": [(False, 0.0)] * 4, "coin": [(True, 1.0), (False, 0.0)] * 2}
    ranked = choose_tasks(families, Evidence(seen, {}), 4, settled_after=4, name=str)
    # A family that went both ways is as uncertain as an untried one; settled ones come last.
    assert set(ranked[:2]) == {"coin", "untried"} and set(ranked[2:]) == {"always", "never"}
    tasks = suite(tmp_path, ["count-lines", "sort-file"])
    object.__setattr__(tasks[0], "metadata", {**tasks[0].metadata, "heldout": True})
    assert curriculum_families(tasks) == ["count-lines", "sort-file"]  # the other instance keeps its family
    held = [t for t in tasks if family_of_name(t.name) == "count-lines"]
    for t in held:
        object.__setattr__(t, "metadata", {**t.metadata, "heldout": True})
    assert curriculum_families(tasks) == ["sort-file"]
    foreign = tasks[0].__class__(**{**tasks[0].__dict__, "metadata": {"category": "files"}})
    assert curriculum_families([*tasks, foreign]) == []  # an imported task: no generator to draw from


def test_the_mixed_group_fraction_counts_groups_whose_rewards_differ():
    keyed = [
        ("joint0|a|0|0", rollout("a", 1.0)),
        ("joint0|a|0|1", rollout("a", 0.0)),
        ("joint0|b|1|0", rollout("b", 0.0)),
        ("joint0|b|1|1", rollout("b", 0.0)),
        ("joint0|c|2|0", rollout("c", 1.0)),  # a lone rollout is no group
    ]
    assert mixed_fraction(keyed) == 0.5
    assert mixed_fraction(keyed[4:]) != mixed_fraction(keyed[4:])  # NaN: nothing to say
