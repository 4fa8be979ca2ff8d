"""`tasks check`: a task is valid when its oracle passes every check and doing nothing does not.

A nop run whose verifier crashes (instead of reporting failed checks) also makes a task
invalid: a verifier must be able to judge any final state, including an untouched one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.results import EpisodeResult
from engine.rollout.agents import NopAgent, OracleAgent
from engine.rollout.runner import EpisodeJob, EpisodeRunner
from engine.tasks import Suite, Task


@dataclass(frozen=True)
class TaskCheck:
    task: str
    path: Path
    valid: bool
    reason: str
    oracle: EpisodeResult | None = None
    nop: EpisodeResult | None = None

    def summary(self) -> dict[str, object]:
        def ep(r: EpisodeResult | None) -> dict[str, object] | None:
            return r.summary() if r else None

        return {
            "task": self.task,
            "path": str(self.path),
            "valid": self.valid,
            "reason": self.reason,
            "oracle": ep(self.oracle),
            "nop": ep(self.nop),
        }


def _describe_failure(r: EpisodeResult) -> str:
    if not r.scored or r.error:  # unscored, or a zero with a reason (verifier error, tampered)
        return f"{r.status} ({r.failure_mode}): {r.error}"
    failed = [c.name for c in r.checks if not c.passed]
    return f"{r.checks_passed}/{r.checks_total} checks passed; failed: {', '.join(failed) or '-'}"


def judge(task: Task, oracle: EpisodeResult, nop: EpisodeResult) -> TaskCheck:
    if not oracle.success:
        return TaskCheck(
            task.name, task.path, False, f"oracle did not succeed: {_describe_failure(oracle)}", oracle, nop
        )
    if not nop.scored:
        return TaskCheck(task.name, task.path, False, f"nop run not scored: {_describe_failure(nop)}", oracle, nop)
    if nop.success:
        return TaskCheck(
            task.name, task.path, False, "nop succeeded: the verifier accepts the untouched starting state", oracle, nop
        )
    return TaskCheck(
        task.name,
        task.path,
        True,
        f"oracle {oracle.checks_passed}/{oracle.checks_total}, nop {nop.checks_passed}/{nop.checks_total}",
        oracle,
        nop,
    )


def check_suites(suites: list[Suite], runner: EpisodeRunner, *, concurrency: int) -> tuple[str, list[TaskCheck]]:
    tasks = [t for s in suites for t in s.tasks]
    jobs: list[EpisodeJob] = []
    for t in tasks:
        jobs.append(EpisodeJob(t, OracleAgent))
        jobs.append(EpisodeJob(t, NopAgent))
    run_id, results = runner.run(
        jobs,
        kind="tasks-check",
        agent_label="oracle+nop",
        tasks_path=";".join(str(s.root) for s in suites),
        concurrency=concurrency,
    )
    by_key = {(r.task, r.agent): r for r in results}
    checks: list[TaskCheck] = []
    for t in tasks:
        oracle, nop = by_key.get((t.name, "oracle")), by_key.get((t.name, "nop"))
        if oracle is None or nop is None:
            checks.append(TaskCheck(t.name, t.path, False, "not run (cancelled)", oracle, nop))
        else:
            checks.append(judge(t, oracle, nop))
    for s in suites:
        for err in s.errors:
            checks.append(TaskCheck(err.path.name, err.path, False, f"malformed task: {err.reason}"))
    return run_id, checks
