"""Frontier-aware sampling: RSR explores where a success can still be found, RPR trains where
rewards differ, and the RSR funnel says where successes were lost."""

from __future__ import annotations

from pathlib import Path

from engine.config import RsrConfig
from engine.rpr.rollouts import Rollout
from engine.rpr.sampling import informative, settled_tasks
from engine.rsr.frontier import PassEstimate, wants_attempt
from engine.rsr.report import FUNNEL, funnel, funnel_notes
from engine.store import Store
from engine.store.records import LeakReport, Provenance, ReviewVerdict, RunbookDraft, Sample
from tests.tui_data import _checks, _episode

SETTINGS = RsrConfig(attempts=6, min_attempts=2, target_successes=2)


def test_every_pair_gets_its_minimum_then_only_pairs_that_get_somewhere_continue():
    assert wants_attempt([], SETTINGS) and wants_attempt([(False, 0.0)], SETTINGS)
    assert not wants_attempt([(False, 0.0), (False, 0.0)], SETTINGS)  # nothing at all after the minimum
    assert wants_attempt([(False, 0.0), (False, 0.25)], SETTINGS)  # partial credit: worth another try
    assert wants_attempt([(False, 0.0), (True, 1.0)], SETTINGS)  # sometimes right: the frontier
    assert not wants_attempt([(True, 1.0), (True, 1.0)], SETTINGS)  # enough verified successes
    assert not wants_attempt([(False, 0.25)] * 6, SETTINGS)  # the budget is a cap
    # Partial credit that doing nothing also earns (an "input unchanged" check) is no progress.
    assert not wants_attempt([(False, 0.25), (False, 0.25)], SETTINGS, floor=0.25)
    assert wants_attempt([(False, 0.25), (False, 0.375)], SETTINGS, floor=0.25)


def test_pass_estimate_stays_strictly_between_0_and_1():
    none, half, all_ = (
        PassEstimate.of([]),
        PassEstimate.of([(True, 1.0), (False, 0.5)]),
        PassEstimate.of([(True, 1.0)] * 4),
    )
    assert none.rate == 0.5 and half.rate == 0.5 and 0 < all_.rate < 1 and all_.rate == 5 / 6
    assert half.mean_reward == 0.75 and (half.attempts, half.successes) == (2, 1)


def rollout(task: str, reward: float) -> Rollout:
    return Rollout("e", task, (1, 2), (0, 1), (-0.1,), reward, reward == 1.0, 0.1, 1.0)


def test_rpr_leaves_settled_tasks_and_uniform_groups_out():
    outcomes = {
        "solved": [(True, 1.0)] * 4,
        "hopeless": [(False, 0.0)] * 5,
        "frontier": [(True, 1.0), (False, 0.0)] * 2,
        "partial": [(False, 0.25)] * 4,
        "young": [(True, 1.0)] * 2,
    }
    assert settled_tasks(outcomes, 4) == {"solved", "hopeless"}
    keyed = [
        ("joint0|a|0|0", rollout("a", 1.0)),
        ("joint0|a|0|1", rollout("a", 0.0)),
        ("joint0|b|1|0", rollout("b", 0.0)),
        ("joint0|b|1|1", rollout("b", 0.0)),
    ]
    assert [r.task for r in informative(keyed)] == ["a", "a"]


def test_the_funnel_counts_each_step_and_says_when_the_model_was_too_small(tmp_path: Path):
    store = Store(tmp_path / "db.sqlite")
    run_id = store.runs.create("rsr-explore", backend="local", agent="model", tasks_path="", total=3, config={})
    for i, ok in enumerate((True, True, False)):
        store.runs.record_episode(_episode(run_id, i, "t", "model", success=ok, checks=_checks(("a", ok))))
        store.jobs.done("rsr/1/explore", f"t|fenced-bash|{i}", run_id, f"{run_id}-{i:04d}", ok)
    unreadable = ReviewVerdict(True, True, False, True, ("reviewer reply was not a JSON verdict after 3 tries",))
    store.runbooks.add(
        RunbookDraft("t", 1, f"{run_id}-0000", "# Goal", "fenced-bash", LeakReport(0.0), unreadable, author="template"),
        status="approved",
        decided_by="auto",
    )
    store.runbooks.add(
        RunbookDraft("t", 1, f"{run_id}-0001", "# Goal", "fenced-bash", LeakReport(0.9, ("x",)), unreadable),
        status="rejected",
        decided_by="auto",
    )
    store.jobs.done("rsr/1/replay", "rb|0", run_id, f"{run_id}-0000", True)
    store.rsr.add_samples(1, [Sample((1, 2), (0, 1), Provenance("t", "fenced-bash", "s", "r"))])
    counts = funnel(store, 1)
    assert list(counts) == list(FUNNEL) and list(counts.values()) == [2, 2, 1, 1, 1, 1]
    notes = funnel_notes(store, 1, RsrConfig())
    assert any("1 of 2 runbook(s) were built from the commands by the template" in n for n in notes)
    assert any("unreadable for 2 runbook(s)" in n and "abstain" in n for n in notes)


def test_rpr_rounds_take_the_tasks_whose_outcome_is_most_uncertain():
    from types import SimpleNamespace

    from engine.rpr.sampling import Evidence, choose_tasks

    tasks = [SimpleNamespace(name=n) for n in ("never", "always", "solved-once", "fresh", "coin")]
    prior = {"never": [(False, 0.0)] * 6, "always": [(True, 1.0)] * 4, "solved-once": [(False, 0.0), (True, 1.0)]}
    # Nothing seen yet in the stage: the prior decides; a task never solved comes last.
    assert [t.name for t in choose_tasks(tasks, Evidence({}, prior), 5, settled_after=4)] == [
        "solved-once",
        "fresh",
        "coin",
        "always",
        "never",
    ]
    # The stage's own rollouts outweigh the prior: "coin" went both ways (as uncertain as the
    # untried "fresh", which goes first), "solved-once" always failed for this actor (settled at
    # 4 rollouts), so it drops behind every task that is not settled.
    seen = {"coin": [(True, 1.0), (False, 0.0)], "solved-once": [(False, 0.0)] * 4}
    chosen = [t.name for t in choose_tasks(tasks, Evidence(seen, prior), 5, settled_after=4)]
    assert chosen == ["fresh", "coin", "always", "never", "solved-once"]
    assert [t.name for t in choose_tasks(tasks, Evidence(seen, prior), 2, settled_after=4)] == chosen[:2]


def test_a_task_that_sometimes_succeeds_goes_before_one_that_only_earns_varied_partial_credit():
    from types import SimpleNamespace

    from engine.rpr.sampling import Evidence, choose_tasks

    # As seen in an RPR-1 on the curriculum: rollouts that earn 0, 1/8 or 1/4 of the checks differ
    # more often than rollouts that succeed once in four, but they teach PPO far less.
    tasks = [SimpleNamespace(name=n) for n in ("partial", "sometimes", "often")]
    seen = {
        "partial": [(False, 0.0), (False, 0.125), (False, 0.25), (False, 0.125)],
        "sometimes": [(True, 1.0), (False, 0.0), (False, 0.125), (False, 0.0)],
        "often": [(True, 1.0), (True, 1.0), (False, 0.25), (True, 1.0)],
    }
    evidence = Evidence(seen, {})
    assert [t.name for t in choose_tasks(tasks, evidence, 3, settled_after=4)] == ["sometimes", "often", "partial"]
    # A round does not use a task up: after a round that went both ways it is still first.
    seen["sometimes"] += [(True, 1.0), (False, 0.0), (True, 1.0), (False, 0.0)]
    assert choose_tasks(tasks, Evidence(seen, {}), 1, settled_after=4)[0].name == "sometimes"


def test_what_a_round_saw_of_one_task_settles_the_tasks_most_like_it():
    from types import SimpleNamespace

    from engine.rpr.sampling import Evidence, choose_tasks
    from engine.tasks.similarity import TaskSimilarity

    instructions = {
        "copy-1": "Copy /app/a.txt to /app/b.txt.",
        "copy-2": "Copy /app/c.log to /app/d.log.",
        "sort-1": "Sort the lines of /app/e.txt alphabetically and write them to /app/f.txt.",
        "sort-2": "Sort the lines of /app/g.txt alphabetically and write them to /app/h.txt.",
    }
    tasks = [SimpleNamespace(name=n) for n in instructions]
    similar = TaskSimilarity(instructions)
    assert similar("copy-1", "copy-2") > 0.9 > 0.2 > similar("copy-1", "sort-1")
    # The actor solved copy-1 every time and got nothing on sort-1 but some partial credit, once.
    seen = {"copy-1": [(True, 1.0)] * 4, "sort-1": [(False, 0.0), (False, 0.25), (False, 0.0), (False, 0.0)]}
    chosen = [t.name for t in choose_tasks(tasks, Evidence(seen, {}, similar), 4, settled_after=4)]
    # sort-2 is still uncertain (its kind earned varied rewards); copy-2 is as settled as copy-1.
    assert chosen.index("sort-2") < chosen.index("copy-2") and chosen[-1] == "copy-1"
    without = [t.name for t in choose_tasks(tasks, Evidence(seen, {}), 4, settled_after=4)]
    assert without[0] == "copy-2"  # on its own evidence alone an unseen task looks the most uncertain
    # And what the evidence expects of each: copy-2 is expected to pass, sort-2 not.
    evidence = Evidence(seen, {}, similar)
    assert evidence.expected_success("copy-2") > 0.9 and evidence.expected_success("sort-2") < 0.1
    assert Evidence({}, {}).expected_success("anything") == 0.5


def test_a_family_with_no_success_yet_gets_more_unaided_attempts():
    settings = RsrConfig(attempts=6, min_attempts=2, target_successes=2, unsolved_family_attempts=4)
    nothing = [(False, 0.0), (False, 0.0)]
    assert not wants_attempt(nothing, settings)  # a family solved elsewhere: nothing here, stop
    assert wants_attempt(nothing, settings, unsolved=True)  # nobody solved its family yet: go on
    assert not wants_attempt(nothing * 2, settings, unsolved=True)  # up to unsolved_family_attempts
    big = RsrConfig(attempts=3, min_attempts=2, target_successes=2, unsolved_family_attempts=8)
    assert wants_attempt([(False, 0.0)] * 7, big, unsolved=True) and not wants_attempt([(False, 0.0)] * 8, big, True)
    assert not wants_attempt([(True, 1.0)] * 2, big, unsolved=True)  # target reached


def test_only_explore_attempts_end_at_a_runaway_reply(tmp_path: Path):
    """[rsr] end_on_runaway_reply reaches explore's agents and no replay's: a replay is shown a
    runbook and may still recover, and its successes are the round's scarcest samples."""
    from types import SimpleNamespace

    from engine.rsr.examples import ExampleIndex
    from engine.rsr.explore import wave_jobs
    from engine.rsr.replay import replay
    from engine.tasks import load_task
    from tests.conftest import write_task

    task = load_task(write_task(tmp_path, "hello"))
    asked: list[dict] = []

    def agents(harness, seed, guidance=None, examples=(), max_turns=0, end_on_runaway=False):
        asked.append({"guidance": guidance, "end_on_runaway": end_on_runaway})
        return lambda: None

    for on in (True, False):
        asked.clear()
        work = SimpleNamespace(settings=RsrConfig(end_on_runaway_reply=on), seed=0, round=1, agents=agents)
        jobs, _ = wave_jobs(work, {"hello": task}, [], {}, {}, ExampleIndex({"hello": task.instruction}))
        assert jobs and all(a["end_on_runaway"] is on for a in asked)

    asked.clear()
    runbooks = [SimpleNamespace(id="rb1", task="hello", harness="fenced-bash-turns", text="1. echo hello")]
    ran = []
    work = SimpleNamespace(
        settings=RsrConfig(end_on_runaway_reply=True),
        seed=0,
        round=1,
        agents=agents,
        records=SimpleNamespace(finished=lambda phase: set(), runbooks=lambda status: runbooks),
        progress=lambda *a: None,
        run_jobs=lambda phase, jobs: ran.extend(jobs),
    )
    replay(work, {"hello": task})
    assert ran and asked == [{"guidance": "1. echo hello", "end_on_runaway": False}]


def test_a_family_first_solved_on_its_last_attempt_is_shown_to_its_other_tasks(tmp_path: Path):
    """[rsr] family_followup_attempts: a family's first success often comes on the last attempt
    its tasks get, after which no other task of it was ever shown that success. With follow-ups
    each of them gets that many more attempts, shown worked examples, past its cap; then stops."""
    from types import SimpleNamespace

    from engine.keys import ExploreKey
    from engine.rollout.harnesses import WorkedExample
    from engine.rsr.examples import ExampleIndex
    from engine.rsr.explore import wave_jobs
    from engine.rsr.records import ExploreAttempt
    from engine.tasks import load_task
    from tests.conftest import write_task

    tasks = {n: load_task(write_task(tmp_path, n)) for n in ("count-1", "count-2", "count-3")}
    index = ExampleIndex({n: t.instruction for n, t in tasks.items()})
    pool = {"count-1": WorkedExample(tasks["count-1"].instruction, (("echo hello > /app/out.txt", ""),))}
    shown: list[tuple] = []

    def agents(harness, seed, guidance=None, examples=(), max_turns=0, end_on_runaway=False):
        shown.append(examples)
        return lambda: None

    def stored(name: str, n: int, ok: bool = False) -> ExploreAttempt:
        key = ExploreKey(name, "h", n, aided=n >= 2)
        return ExploreAttempt(str(key), key, f"e-{name}-{n}", ok, 1.0 if ok else 0.0)

    # Every task of the family used its 4 attempts (2 unaided, then 2 shown other families'
    # successes); count-1's last one passed.
    attempts = [stored(n, i, ok=(n, i) == ("count-1", 3)) for n in tasks for i in range(4)]

    def wave(followups: int, tried: list[ExploreAttempt]) -> list[ExploreKey]:
        settings = RsrConfig(
            attempts=3, min_attempts=2, target_successes=2, unsolved_family_attempts=4, harnesses=["h"]
        ).model_copy(update={"family_followup_attempts": followups})
        work = SimpleNamespace(settings=settings, seed=0, round=1, agents=agents)
        jobs, _ = wave_jobs(work, tasks, tried, {}, pool, index)
        return [ExploreKey.parse(key) for key, _ in jobs]

    assert wave(0, attempts) == []  # without follow-ups nobody is ever shown count-1's success
    shown.clear()
    first = wave(2, attempts)
    assert sorted((k.task, k.attempt, k.aided) for k in first) == [("count-2", 4, True), ("count-3", 4, True)]
    assert all(examples and examples[-1].instruction == tasks["count-1"].instruction for examples in shown)
    second = wave(2, attempts + [stored(k.task, k.attempt) for k in first])
    assert sorted((k.task, k.attempt) for k in second) == [("count-2", 5), ("count-3", 5)]
    done = attempts + [stored(k.task, k.attempt) for k in first + second]
    assert wave(2, done) == []  # owed two, given two
    # A task that passed on a follow-up has its own success: it is owed nothing more.
    passed = attempts + [stored("count-2", 4, ok=True), stored("count-3", 4)]
    assert [(k.task, k.attempt) for k in wave(2, passed)] == [("count-3", 5)]


def test_follow_ups_go_past_the_cap_only_for_a_pair_without_a_success_that_is_shown_examples():
    settings = RsrConfig(attempts=3, min_attempts=2, target_successes=2)
    used = [(False, 0.0)] * 3
    assert not wants_attempt(used, settings, examples=True)
    assert wants_attempt(used, settings, examples=True, followups=1)
    assert not wants_attempt(used, settings, examples=False, followups=1)  # nothing to show it
    assert not wants_attempt(used + [(True, 1.0)], settings, examples=True, followups=1)  # it has one
