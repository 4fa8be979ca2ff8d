"""The replay phase of an RSR round: each approved runbook, replayed with the runbook in the prompt.

Every approved runbook is replayed `replays` times in a fresh sandbox, the runbook appended to
the task message; a replay that passes every check is what the dataset phase turns into a
sample, with the runbook taken out again. Replays are keyed by runbook and number, so a resumed
round runs only the ones not yet stored.

Reads: the round's approved runbooks and finished replay jobs.
Writes: replay episodes and their job records; a progress line.
Returns: a `ReplayResult` (how many replays this call ran).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.keys import ReplayKey, replay_seed
from engine.rollout.runner import EpisodeJob
from engine.rsr.work import RoundWork
from engine.tasks import Task


@dataclass(frozen=True)
class ReplayResult:
    ran: int  # replays run now (those stored before a restart are not run again)


def replay(work: RoundWork, tasks: dict[str, Task]) -> ReplayResult:
    done = work.records.finished("replay")
    jobs = []
    for rb in work.records.runbooks(status="approved"):
        for k in range(work.settings.replays):
            key = str(ReplayKey(rb.id, k))
            if key in done:
                continue
            seed = replay_seed(work.seed, work.round, rb.id, k)
            jobs.append((key, EpisodeJob(tasks[rb.task], work.agents(rb.harness, seed, rb.text), attempt=k)))
    work.progress("replay", f"{len(jobs)} replay(s) to run with approved runbooks")
    if jobs:
        work.run_jobs("replay", jobs)
    return ReplayResult(len(jobs))
