"""Pass rates with honest uncertainty (pure functions).

- pass@1: the mean success over all episodes (tasks x attempts x seeds), with a 95% interval
  from a bootstrap that resamples *tasks* (episodes of one task are not independent).
- pass@k: the unbiased estimator of Chen et al. (2021), 1 - C(n-c, k) / C(n, k) per task,
  averaged over tasks (n episodes of a task, c of them successes).
- A paired comparison of two runs on the tasks they share, with a bootstrap interval for the
  difference in pass@1.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float

    def as_list(self) -> list[float]:
        return [round(self.low, 4), round(self.high, 4)]


def interval_text(estimate: float | None, low: float | None = None, high: float | None = None) -> str:
    """pass@1 with its 95% interval, as every table shows it: "0.500 [0.250, 0.750]"; "-" for none."""
    if estimate is None:
        return "-"
    if low is None or high is None:
        return f"{estimate:.3f}"
    return f"{estimate:.3f} [{low:.3f}, {high:.3f}]"


def by_task(outcomes: Iterable[tuple[str, bool]]) -> dict[str, list[bool]]:
    grouped: dict[str, list[bool]] = defaultdict(list)
    for task, success in outcomes:
        grouped[task].append(bool(success))
    return dict(grouped)


def pass_at_k_task(n: int, c: int, k: int) -> float:
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} episodes per task, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_at_k(groups: dict[str, list[bool]], k: int) -> float:
    if not groups:
        raise ValueError("no episodes")
    return sum(pass_at_k_task(len(v), sum(v), k) for v in groups.values()) / len(groups)


def pass_at_1(groups: dict[str, list[bool]]) -> float:
    """Mean over tasks of each task's success rate (tasks weigh equally)."""
    return pass_at_k(groups, 1)


def bootstrap_pass_at_1(
    groups: dict[str, list[bool]], *, samples: int = 2000, seed: int = 0, level: float = 0.95
) -> Interval:
    if not groups:
        raise ValueError("no episodes")
    rates = [sum(v) / len(v) for v in groups.values()]
    rng = random.Random(seed)
    n = len(rates)
    means = sorted(sum(rates[rng.randrange(n)] for _ in range(n)) / n for _ in range(samples))
    lo = means[int((1 - level) / 2 * (samples - 1))]
    hi = means[int((1 + level) / 2 * (samples - 1))]
    return Interval(sum(rates) / n, lo, hi)


def compare(a: dict[str, list[bool]], b: dict[str, list[bool]], *, samples: int = 2000, seed: int = 0) -> Interval:
    """pass@1(b) - pass@1(a) on shared tasks, with a paired bootstrap interval."""
    shared = sorted(set(a) & set(b))
    if not shared:
        raise ValueError("the two runs share no task")
    diffs = [sum(b[t]) / len(b[t]) - sum(a[t]) / len(a[t]) for t in shared]
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(samples))
    return Interval(sum(diffs) / n, means[int(0.025 * (samples - 1))], means[int(0.975 * (samples - 1))])


@dataclass(frozen=True)
class RunComparison:
    """Run B against run A on the tasks both scored."""

    shared_tasks: int
    pass_a: float
    pass_b: float
    difference: Interval  # pass@1(b) - pass@1(a), paired task bootstrap


def compare_runs(a: Iterable[tuple[str, bool]], b: Iterable[tuple[str, bool]]) -> RunComparison:
    """(task, success) of each run's scored episodes -> the paired comparison; ValueError when
    the runs share no task."""
    groups_a, groups_b = by_task(a), by_task(b)
    diff = compare(groups_a, groups_b)
    shared = sorted(set(groups_a) & set(groups_b))
    return RunComparison(
        len(shared), pass_at_1({t: groups_a[t] for t in shared}), pass_at_1({t: groups_b[t] for t in shared}), diff
    )


@dataclass(frozen=True)
class TaskAggregate:
    task: str
    episodes: int
    successes: int
    scored: int

    @property
    def success_rate(self) -> float | None:
        return None if not self.scored else self.successes / self.scored

    @property
    def infra_errors(self) -> int:
        return self.episodes - self.scored


def per_task(outcomes: Iterable[tuple[str, bool, bool]]) -> list[TaskAggregate]:
    """(task, success, scored) per episode -> one aggregate per task, in first-seen order."""
    tally: dict[str, list[int]] = {}
    for task, success, scored in outcomes:
        t = tally.setdefault(task, [0, 0, 0])
        t[0] += 1
        t[1] += int(bool(success) and bool(scored))
        t[2] += int(bool(scored))
    return [TaskAggregate(task, n, wins, scored) for task, (n, wins, scored) in tally.items()]


def bootstrap_over_seeds(
    per_seed: list[dict[str, float]], *, samples: int = 2000, seed: int = 0, level: float = 0.95
) -> Interval:
    """The mean over seeds of the mean over tasks of a per-task value (a pass rate, or a paired
    difference of pass rates), with an interval from resampling both the seeds and the tasks.

    Seeds are independent training runs; tasks are shared by all of them, so one draw of tasks is
    used for every seed of a bootstrap sample. With one seed this is the task bootstrap."""
    tables = [t for t in per_seed if t]
    if not tables:
        raise ValueError("no values")
    tasks = sorted(set.intersection(*(set(t) for t in tables)))
    if not tasks:
        raise ValueError("the seeds share no task")

    def mean(chosen_seeds: list[dict[str, float]], chosen_tasks: list[str]) -> float:
        return sum(sum(t[k] for k in chosen_tasks) / len(chosen_tasks) for t in chosen_seeds) / len(chosen_seeds)

    rng = random.Random(seed)
    draws = sorted(
        mean([tables[rng.randrange(len(tables))] for _ in tables], [tasks[rng.randrange(len(tasks))] for _ in tasks])
        for _ in range(samples)
    )
    return Interval(
        mean(tables, tasks), draws[int((1 - level) / 2 * (samples - 1))], draws[int((1 + level) / 2 * (samples - 1))]
    )
