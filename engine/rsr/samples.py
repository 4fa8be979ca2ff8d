"""The dataset phase of an RSR round: verified episodes become SFT samples, and a balanced few are chosen.

Replays that pass every check and whose actions leak nothing become samples, with the runbook
taken out of the prompt (engine/rsr/dataset.py builds each one) and, with `teach_stop`, the
harness's stop reply (DONE) after the verified steps. With `explore_fallback`, an explore
success whose task no replay reproduced becomes a sample itself, cut to its shortest verified
prefix (engine/rsr/prefixes.py): a model too small to follow a runbook must not zero the funnel
at the replay. Samples are keyed by their tokens' digest, so a resumed round adds none twice.
SFT then trains on a balanced subset: a few per task and per family.

Reads: the round's runbooks, replay and explore jobs, their episodes' steps and openings.
Writes: SFT samples (and prefix episodes); a progress line.
Returns: a `DatasetResult` (every stored sample of the round); `balanced` a `Balanced` subset.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.config import RsrConfig
from engine.results import AgentStep
from engine.rollout.harnesses import Harness, get_harness
from engine.rsr.dataset import balance, build_sample, family_of, sample_opening
from engine.rsr.leak import protected_for, scan
from engine.rsr.prefixes import VerifiedPrefixes
from engine.rsr.records import ReplayOutcome
from engine.rsr.work import RoundWork
from engine.store.records import Provenance, Runbook, Sample
from engine.tasks import Task


@dataclass(frozen=True)
class DatasetResult:
    samples: tuple[Sample, ...]  # every sample stored for the round, in stored order
    added: int  # new ones (the rest were stored before)
    dropped: int  # left out because their actions leaked protected text
    from_explore: int  # built from explore successes no replay reproduced


@dataclass(frozen=True)
class Balanced:
    chosen: tuple[Sample, ...]  # what SFT trains on, in stored order
    note: str  # what balancing left out, '' when nothing


def build_dataset(work: RoundWork, prefixes: VerifiedPrefixes, tasks: dict[str, Task]) -> DatasetResult:
    runbooks = {rb.id: rb for rb in work.records.runbooks()}
    outcomes = work.records.replay_outcomes()
    fresh, rejected = replay_samples(work, tasks, runbooks, outcomes)
    replayed = {runbooks[o.key.runbook_id].task for o in outcomes if o.success and o.key.runbook_id in runbooks}
    fallback, fallback_rejected = (
        explore_samples(work, prefixes, tasks, replayed) if work.settings.explore_fallback else ([], 0)
    )
    added = work.records.add_samples(fresh + fallback)
    samples = work.records.samples()
    # Two successes of one task with the same commands make one sample (same digest).
    from_explore = sum(1 for sample in samples if not sample.provenance.runbook_id)
    work.progress(
        "dataset",
        f"{len(samples)} sample(s) ({added} new; {rejected + fallback_rejected} dropped for leaks; "
        f"{from_explore} from explore successes without a passing replay)",
    )
    return DatasetResult(tuple(samples), added, rejected + fallback_rejected, from_explore)


def replay_samples(
    work: RoundWork, tasks: dict[str, Task], runbooks: dict[str, Runbook], outcomes: list[ReplayOutcome]
) -> tuple[list[Sample], int]:
    """Samples from the passing replays, and how many were dropped because their actions leak."""
    samples, rejected = [], 0
    for outcome in outcomes:
        if not outcome.success:
            continue
        rb = runbooks[outcome.key.runbook_id]
        task = tasks[rb.task]
        steps = work.records.steps(outcome.episode_id)
        actions = "\n".join(s.action_text for s in steps)
        allowed = "\n".join([task.instruction, rb.text, *(s.output for s in steps)])
        if scan(actions, protected_for(task.path, allowed=allowed)).leaked:
            rejected += 1  # the replay's own actions carry protected text: not training data
            continue
        harness = get_harness(rb.harness)
        samples.append(
            build_sample(
                work.policy,
                sample_opening(work.records.opening(outcome.episode_id), rb.harness, work.settings.sample_prompt),
                steps,
                runbook=rb.text,
                provenance=Provenance(rb.task, rb.harness, rb.source_episode_id, outcome.episode_id, rb.id),
                tools=harness.tools,
                reply_prefix=harness.reply_prefix,
                stop_reply=stop_after(work, harness, steps),
            )
        )
    return samples, rejected


def explore_samples(
    work: RoundWork, prefixes: VerifiedPrefixes, tasks: dict[str, Task], replayed: set[str]
) -> tuple[list[Sample], int]:
    """Samples from explore successes of tasks that no replay passed (`explore_fallback`). The
    episode saw no runbook, so nothing is removed; it is cut to its verified prefix, so turns that
    came after the work was done, and taught nothing, are not trained on."""
    successes = [a for a in work.records.successes() if a.key.task not in replayed]
    steps = prefixes.cut({a.job_key: work.records.steps(a.episode_id) for a in successes})
    samples, rejected = [], 0
    for attempt in successes:
        name, harness = attempt.key.task, attempt.key.harness
        task, kept = tasks[name], steps[attempt.job_key]
        actions = "\n".join(s.action_text for s in kept)
        # The model typed these commands having seen no solution and no runbook: a command that
        # coincides with the reference solution is the right answer, not a leak. Only a canary
        # (text that exists nowhere but in the task's protected files) disqualifies the sample.
        if not kept or any(c in actions for c in protected_for(task.path).canaries):
            rejected += 1
            continue
        samples.append(
            build_sample(
                work.policy,
                sample_opening(work.records.opening(attempt.episode_id), harness, work.settings.sample_prompt),
                kept,
                runbook=None,
                provenance=Provenance(name, harness, attempt.episode_id, attempt.episode_id, ""),
                tools=get_harness(harness).tools,
                reply_prefix=get_harness(harness).reply_prefix,
                stop_reply=stop_after(work, get_harness(harness), kept),
            )
        )
    return samples, rejected


def stop_after(work: RoundWork, harness: Harness, steps: list[AgentStep]) -> str | None:
    """The stop reply a sample of `steps` ends with (`teach_stop`): the harness's, unless the
    steps already end with one (the model stopped by itself)."""
    if not work.settings.teach_stop or (steps and harness.parse(steps[-1].action_text).done):
        return None
    return harness.stop_reply()


def balanced(settings: RsrConfig, tasks: dict[str, Task], samples: tuple[Sample, ...]) -> Balanced:
    """At most `samples_per_task` per task and `samples_per_family` per family, so that one easy
    task or family cannot fill the training set."""
    chosen = balance(
        list(samples),
        {name: family_of(task) for name, task in tasks.items()},
        per_task=settings.samples_per_task,
        per_family=settings.samples_per_family,
    )
    note = ""
    if len(chosen) < len(samples):
        note = (
            f"SFT on a balanced {len(chosen)} of {len(samples)} samples (at most "
            f"{settings.samples_per_task or 'any'} per task, {settings.samples_per_family or 'any'} "
            "per family)"
        )
    return Balanced(tuple(chosen), note)
