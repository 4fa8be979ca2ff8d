"""Pass@1 intervals, unbiased pass@k and run comparison against hand-computed values."""

from __future__ import annotations

import math

import pytest

from engine.stats import bootstrap_pass_at_1, by_task, compare, pass_at_1, pass_at_k, pass_at_k_task


def test_pass_at_k_matches_the_closed_form():
    # n=5 episodes, c=2 successes: pass@1 = 2/5; pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10.
    assert pass_at_k_task(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k_task(5, 2, 2) == pytest.approx(0.7)
    assert pass_at_k_task(5, 4, 2) == 1.0  # fewer than k failures: some k-subset always succeeds
    assert pass_at_k_task(3, 0, 3) == 0.0
    with pytest.raises(ValueError):
        pass_at_k_task(2, 1, 3)


def test_pass_at_1_weighs_tasks_equally():
    groups = by_task([("a", True), ("a", False), ("b", False), ("b", False), ("b", False), ("b", True)])
    assert pass_at_1(groups) == pytest.approx((0.5 + 0.25) / 2)
    assert pass_at_k(groups, 2) == pytest.approx(((1 - 0 / 1) + (1 - math.comb(3, 2) / math.comb(4, 2))) / 2)


def test_bootstrap_interval_brackets_the_estimate_and_shrinks_with_more_tasks():
    few = by_task([(f"t{i}", i % 2 == 0) for i in range(6)])
    many = by_task([(f"t{i}", i % 2 == 0) for i in range(200)])
    a, b = bootstrap_pass_at_1(few), bootstrap_pass_at_1(many)
    assert a.low <= a.estimate <= a.high and b.low <= b.estimate <= b.high
    assert (b.high - b.low) < (a.high - a.low)
    assert bootstrap_pass_at_1(by_task([("x", True)] * 3)).as_list() == [1.0, 1.0]


def test_paired_comparison():
    a = by_task([("t1", False), ("t2", False), ("t3", True)])
    b = by_task([("t1", True), ("t2", True), ("t3", True), ("t4", True)])  # t4 is not shared
    d = compare(a, b)
    assert d.estimate == pytest.approx(2 / 3) and d.low <= d.estimate <= d.high
    with pytest.raises(ValueError, match="share no task"):
        compare(a, by_task([("zz", True)]))


def test_the_interval_over_seeds_covers_seed_to_seed_spread_as_well_as_tasks():
    from engine.stats import bootstrap_over_seeds

    tasks = [f"t{i}" for i in range(40)]
    one_seed = {t: (1.0 if i % 4 == 0 else 0.0) for i, t in enumerate(tasks)}
    alone = bootstrap_over_seeds([one_seed])
    assert alone.estimate == 0.25 and alone.low < 0.25 < alone.high
    # Three seeds that agree give the same estimate; three that disagree widen the interval.
    agree = bootstrap_over_seeds([one_seed] * 3)
    spread = bootstrap_over_seeds([one_seed, {t: 0.0 for t in tasks}, {t: 0.5 for t in tasks}])
    assert agree.estimate == 0.25 and spread.estimate == pytest.approx(0.25)
    assert spread.high - spread.low > agree.high - agree.low
    with pytest.raises(ValueError, match="share no task"):
        bootstrap_over_seeds([{"a": 1.0}, {"b": 1.0}])
