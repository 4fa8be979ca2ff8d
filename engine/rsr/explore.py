"""The explore phase of an RSR round: attempts in waves, spent where they can still find a success.

First one nop episode per task (with `nop_floor`) measures what doing nothing earns. Then every
task and harness gets `min_attempts` unaided attempts: they estimate the model's pass rate.
After that, a wave gives one more attempt to each pair that has neither reached
`target_successes` nor `attempts`, shown up to `examples` of the round's verified successes on
the most similar other tasks (engine/rsr/examples.py); without any, a pair continues only if it
showed it can get somewhere (a success, or partial credit above the nop floor). While a family
has no success in the round, its tasks go on unaided up to `unsolved_family_attempts`, with
`unsolved_family_turns` turns after the first `min_attempts`: where nothing works yet, a first
success is worth the most, and a model that may look around first finds more. Once a family
has a success, each of its tasks without one is shown it on `family_followup_attempts`
attempts, past its cap if it had used its attempts before: a first success that came on a
family's last attempt would otherwise never reach its other tasks. Each wave is
planned from the stored outcomes alone, so a resumed round plans exactly what an uninterrupted
one would have.

Reads: the round's nop, explore and prefix jobs and their episodes.
Writes: nop, explore (and prefix) episodes and their job records; progress lines.
Returns: an `ExploreResult` (counts and each task's unaided pass-rate estimate).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.config import RsrConfig
from engine.keys import ExploreKey, explore_seed
from engine.rollout.harnesses import WorkedExample
from engine.rollout.runner import EpisodeJob
from engine.rsr.dataset import family_of
from engine.rsr.examples import ExampleIndex
from engine.rsr.frontier import PassEstimate, wants_attempt
from engine.rsr.leak import protected_for
from engine.rsr.prefixes import VerifiedPrefixes
from engine.rsr.records import ExploreAttempt
from engine.rsr.work import Jobs, RoundWork
from engine.tasks import Task

Pair = tuple[str, str]  # (task, harness)


@dataclass(frozen=True)
class ExploreResult:
    attempts: int
    successes: int
    aided_successes: int  # successes of attempts shown worked examples
    solved: int  # tasks with at least one success
    frontier: int  # tasks the model solved sometimes but not always, unaided
    estimates: dict[str, PassEstimate]  # task -> its unaided pass rate


def explore(work: RoundWork, prefixes: VerifiedPrefixes, tasks: dict[str, Task]) -> ExploreResult:
    floors = nop_floors(work, tasks)
    index = ExampleIndex({name: task.instruction for name, task in tasks.items()})
    wave = 0
    while True:
        attempts = work.records.explore_attempts()
        pool = example_pool(work, prefixes, tasks, attempts) if work.settings.examples else {}
        jobs, aided = wave_jobs(work, tasks, attempts, floors, pool, index)
        if not jobs:
            break
        wave += 1
        work.progress(
            "explore",
            f"wave {wave}: {len(attempts)} attempts stored, {len(jobs)} to run"
            + (f" ({aided} shown worked examples from {len(pool)} solved task(s))" if aided else ""),
        )
        work.run_jobs("explore", jobs)
    attempts = work.records.explore_attempts()
    estimates = pass_estimates(attempts, tasks)
    result = ExploreResult(
        attempts=len(attempts),
        successes=sum(a.success for a in attempts),
        aided_successes=sum(a.success for a in attempts if a.key.aided),
        solved=len({a.key.task for a in attempts if a.success}),
        frontier=sum(1 for e in estimates.values() if 0 < e.successes < e.attempts),
        estimates=estimates,
    )
    work.progress(
        "explore",
        f"{result.successes} attempt(s) passed every check ({result.aided_successes} shown worked examples), "
        f"on {result.solved} task(s); {result.frontier} task(s) at the frontier unaided",
    )
    return result


def wave_jobs(
    work: RoundWork,
    tasks: dict[str, Task],
    attempts: list[ExploreAttempt],
    floors: dict[str, float],
    pool: dict[str, WorkedExample],
    index: ExampleIndex,
) -> tuple[Jobs, int]:
    """The next wave's jobs, task by task and harness by harness, and how many of them are aided."""
    settings = work.settings
    pairs = by_pair(attempts)
    outcomes = {pair: [(a.success, a.reward) for a in tried] for pair, tried in pairs.items()}
    unsolved = unsolved_families(tasks, attempts) if settings.unsolved_family_attempts else set()
    firsts = first_successes(tasks, attempts) if settings.family_followup_attempts else {}
    jobs, aided = [], 0
    for name, task in tasks.items():
        shown = index.nearest(name, pool, settings.examples) if pool else ()
        cold = family_of(task) in unsolved
        for h_index, harness in enumerate(settings.harnesses):
            tried = outcomes.get((name, harness), [])
            owed = followups_owed(pairs.get((name, harness), []), firsts.get(family_of(task)), settings)
            floor = floors.get(name, 0.0)
            if not wants_attempt(tried, settings, floor, examples=bool(shown), unsolved=cold, followups=owed):
                continue
            key = ExploreKey(name, harness, len(tried), len(tried) >= settings.min_attempts and bool(shown))
            seed = explore_seed(work.seed, work.round, h_index, key.attempt, name)
            turns = settings.unsolved_family_turns if cold and len(tried) >= settings.min_attempts else 0
            agent = work.agents(
                harness,
                seed,
                examples=shown if key.aided else (),
                max_turns=turns,
                end_on_runaway=settings.end_on_runaway_reply,
            )
            jobs.append((str(key), EpisodeJob(task, agent, attempt=key.attempt)))
            aided += key.aided
    return jobs, aided


def unsolved_families(tasks: dict[str, Task], attempts: list[ExploreAttempt]) -> set[str]:
    """The families of `tasks` none of whose tasks has an explore success in the round yet."""
    solved = {family_of(tasks[a.key.task]) for a in attempts if a.success and a.key.task in tasks}
    return {family_of(task) for task in tasks.values()} - solved


def first_successes(tasks: dict[str, Task], attempts: list[ExploreAttempt]) -> dict[str, int]:
    """family -> the lowest attempt number at which one of its tasks passed in the round. Pairs
    take their attempts a wave at a time and in step, so a pair's attempts numbered above it ran
    in a later wave, and were shown it where aided. (A pair that sat out waves and resumed may
    number an earlier attempt above it: it is then owed one follow-up less, never one more.)"""
    firsts: dict[str, int] = {}
    for a in attempts:
        if a.success and a.key.task in tasks:
            family = family_of(tasks[a.key.task])
            firsts[family] = min(firsts.get(family, a.key.attempt), a.key.attempt)
    return firsts


def followups_owed(tried: list[ExploreAttempt], first: int | None, settings: RsrConfig) -> int:
    """How many more attempts a pair is owed, shown worked examples, now that its family has a
    success (first found at attempt `first`): `family_followup_attempts`, less its aided attempts
    numbered after that one. A family's first success often comes on the last attempt its tasks
    had, so without this no other task of the family is ever shown it."""
    if first is None or not settings.family_followup_attempts:
        return 0
    shown = sum(1 for a in tried if a.key.aided and a.key.attempt > first)
    return max(0, settings.family_followup_attempts - shown)


def nop_floors(work: RoundWork, tasks: dict[str, Task]) -> dict[str, float]:
    """What doing nothing earns on each task (a nop episode's reward; checks such as "the input
    is unchanged" pass untouched): partial credit at or below it is no sign of progress, so it
    earns a task no more explore attempts. One nop episode per task and round, keyed."""
    if not work.settings.nop_floor:
        return {}
    from engine.rollout.agents import NopAgent

    done = work.records.finished("nop")
    jobs = [(name, EpisodeJob(task, NopAgent)) for name, task in tasks.items() if name not in done]
    if jobs:
        work.progress("explore", f"measuring what doing nothing earns on {len(jobs)} task(s)")
        work.run_jobs("nop", jobs)
    return work.records.nop_rewards()


def example_pool(
    work: RoundWork, prefixes: VerifiedPrefixes, tasks: dict[str, Task], attempts: list[ExploreAttempt]
) -> dict[str, WorkedExample]:
    """task -> its first verified explore success as a worked example: the commands of the
    shortest prefix that passes when re-run in a fresh sandbox (keyed prefix jobs, which the
    dataset phase reuses), with what the model saw after each. A success whose commands hold
    a canary of its task is never shown."""
    firsts: dict[str, ExploreAttempt] = {}
    for a in sorted(attempts, key=lambda a: (a.key.attempt, a.job_key)):
        if a.success:
            firsts.setdefault(a.key.task, a)
    steps = prefixes.cut({a.job_key: work.records.steps(a.episode_id) for a in firsts.values()})
    pool = {}
    for name, first in firsts.items():
        kept = [s for s in steps[first.job_key] if s.command]
        text = "\n".join(s.command for s in kept)
        if kept and not any(c in text for c in protected_for(tasks[name].path).canaries):
            pool[name] = WorkedExample(tasks[name].instruction, tuple((s.command, s.output) for s in kept))
    return pool


def by_pair(attempts: list[ExploreAttempt]) -> dict[Pair, list[ExploreAttempt]]:
    """(task, harness) -> its attempts, aided or not, in attempt order."""
    found: dict[Pair, list[ExploreAttempt]] = {}
    for a in attempts:
        found.setdefault((a.key.task, a.key.harness), []).append(a)
    return {pair: sorted(tried, key=lambda a: a.key.attempt) for pair, tried in found.items()}


def pass_estimates(attempts: list[ExploreAttempt], tasks: dict[str, Task]) -> dict[str, PassEstimate]:
    """Each task's pass rate for this round's model, from its unaided explore attempts (all
    harnesses): an attempt shown worked examples measures the examples as much as the model."""
    per_task: dict[str, list[tuple[bool, float]]] = {name: [] for name in tasks}
    for (name, _), tried in by_pair(attempts).items():
        per_task.setdefault(name, []).extend((a.success, a.reward) for a in tried if not a.key.aided)
    return {name: PassEstimate.of(tried) for name, tried in per_task.items()}
