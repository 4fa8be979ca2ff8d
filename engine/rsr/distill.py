"""The runbooks and approval phases of an RSR round: successes distilled into reviewed runbooks.

Each explore success, up to `runbooks_per_task` per task, is cut to its shortest verified prefix
(engine/rsr/prefixes.py) and drafted into a runbook by the planner (engine/rsr/planner.py); the
draft is scanned for leaks (engine/rsr/leak.py) and reviewed (engine/rsr/reviewer.py). Drafts are
written concurrently, because the policy batches their generations, and each is stored the
moment it is done, so a killed round loses at most the drafts in flight. A runbook is keyed by
its source episode: a resumed round drafts only the successes that have none yet.

With `approval = "auto"` a draft is decided as it is stored; with "manual" it waits as pending,
and the approval phase polls the store until a person has decided every one (also after a
restart, since the store is all it looks at).

Reads: the round's explore successes, their steps and verifier output, its runbooks.
Writes: runbooks (with their leak scan, review and status); RunbookDrafted events; progress lines.
Returns: a `DistillResult` (the round's runbooks by status); the approval wait, how many it awaited.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Callable

from engine.events import RunbookDrafted
from engine.keys import runbook_seed
from engine.results import AgentStep
from engine.rsr.leak import protected_for, scan
from engine.rsr.planner import draft_runbook, trajectory_text
from engine.rsr.prefixes import VerifiedPrefixes
from engine.rsr.records import ExploreAttempt
from engine.rsr.reviewer import review_runbook
from engine.rsr.work import RoundWork
from engine.store.records import RunbookDraft
from engine.tasks import Task


@dataclass(frozen=True)
class DistillResult:
    drafted: int  # runbooks written by this call (none for what was stored before a restart)
    counts: dict[str, int]  # status -> how many of the round's runbooks have it


def write_runbooks(work: RoundWork, prefixes: VerifiedPrefixes, tasks: dict[str, Task]) -> DistillResult:
    todo = runbooks_to_write(work)
    if todo:
        steps = prefixes.cut({a.job_key: work.records.steps(a.episode_id) for _, a in todo})
        planner = work.helper(work.settings.planner)
        reviewer = work.helper(work.settings.reviewer)

        def draft(index: int, attempt: ExploreAttempt) -> RunbookDraft:
            return draft_and_review(work, planner, reviewer, tasks[attempt.key.task], index, attempt, steps)

        work.progress("runbooks", f"drafting and reviewing {len(todo)} runbook(s)")
        store_as_done(work, draft, todo)
    counts = work.records.runbook_counts()
    work.progress("runbooks", ", ".join(f"{v} {k}" for k, v in counts.items()) or "no successes to distill")
    return DistillResult(len(todo), counts)


def runbooks_to_write(work: RoundWork) -> list[tuple[int, ExploreAttempt]]:
    """The successes still to distill, each with its index among all the round's successes (which
    seeds its planner and reviewer, so a resumed round drafts with the seeds it would have)."""
    stored = work.records.runbooks()
    existing = {rb.source_episode_id for rb in stored}
    per_task: dict[str, int] = {}
    for rb in stored:
        per_task[rb.task] = per_task.get(rb.task, 0) + 1
    todo = []
    for index, attempt in enumerate(work.records.successes()):
        name = attempt.key.task
        if attempt.episode_id in existing or per_task.get(name, 0) >= work.settings.runbooks_per_task:
            continue
        per_task[name] = per_task.get(name, 0) + 1
        todo.append((index, attempt))
    return todo


def draft_and_review(
    work: RoundWork,
    planner,
    reviewer,
    task: Task,
    index: int,
    attempt: ExploreAttempt,
    steps: dict[str, list[AgentStep]],
) -> RunbookDraft:
    """One success's runbook, scanned for leaks and reviewed (not yet decided nor stored)."""
    kept = steps[attempt.job_key]
    seed = runbook_seed(work.seed, work.round, index)
    settings = work.settings
    text = draft_runbook(
        planner,
        task.instruction,
        kept,
        seed=seed,
        retries=settings.planner_retries,
        template_fallback=settings.template_fallback,
    )
    # What the model itself read or typed may coincide with the solution without being a leak.
    allowed = task.instruction + "\n" + trajectory_text(kept)
    verifier_output = work.records.verifier_output(attempt.episode_id)
    leak = scan(text.text, protected_for(task.path, verifier_output=verifier_output, allowed=allowed))
    verdict, raw = review_runbook(
        reviewer, task.instruction, text.text, seed=seed, unparseable=settings.reviewer_unparseable
    )
    k, episode = attempt.key, attempt.episode_id
    return RunbookDraft(k.task, work.round, episode, text.text, k.harness, leak, verdict, text.author, raw)


def store_as_done(
    work: RoundWork, draft: Callable[[int, ExploreAttempt], RunbookDraft], todo: list[tuple[int, ExploreAttempt]]
) -> None:
    """Draft the runbooks of `todo` concurrently; store and announce each one as it is finished."""
    with ThreadPoolExecutor(max_workers=max(1, work.concurrency), thread_name_prefix="runbook") as pool:
        futures = [pool.submit(draft, *item) for item in todo]
        try:
            for future in as_completed(futures):
                rb = future.result()
                status, by = decision(work.settings.approval, rb)
                runbook_id = work.records.add_runbook(rb, status=status, decided_by=by)
                work.bus.emit(RunbookDrafted(work.round, runbook_id, rb.task, status))
                if work.should_stop():
                    raise InterruptedError(f"RSR round {work.round} stopped while writing runbooks")
        finally:
            for future in futures:
                future.cancel()


def decision(approval: str, rb: RunbookDraft) -> tuple[str, str]:
    """(status, decided_by) of a fresh draft: manual approval leaves every one to a person."""
    if approval == "manual":
        return "pending", ""
    approved = rb.verdict.approve and not rb.leak.leaked
    return ("approved" if approved else "rejected"), "auto"


def await_approval(work: RoundWork, poll_s: float) -> int:
    """Block until no runbook of the round is pending; returns how many were pending at first."""
    first = None
    while True:
        pending = work.records.runbooks(status="pending")
        if not pending:
            return first or 0
        if first is None:
            work.progress("approval", f"waiting for a person to decide {len(pending)} runbook(s) in the TUI")
            first = len(pending)
        if work.should_stop():
            raise InterruptedError(f"RSR round {work.round} stopped while waiting for approval")
        time.sleep(poll_s)
