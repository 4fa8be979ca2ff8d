"""Run a task's verifier in a sandbox after the agent's turn and collect per-check results.

The tests reach the sandbox only now, and /logs/verifier is wiped and recreated just before
test.sh runs, through a clean system shell, so nothing the agent wrote there counts.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from engine.tasks import Task
from engine.verifier_results import (
    CheckResult,
    VerifierParseError,
    parse_ctrf,
    parse_junit,
    parse_pytest_summary,
    parse_reward_json,
    parse_reward_txt,
)
from sandboxes import Sandbox, SandboxError

VerifierStatus = Literal["ok", "timeout", "error"]
PREPARE = "rm -rf /tests /logs/verifier && mkdir -p /tests /logs/verifier /app"


@dataclass(frozen=True)
class VerifierOutcome:
    status: VerifierStatus
    checks: tuple[CheckResult, ...] = ()
    source: str = ""
    output: str = ""
    error: str = ""
    exit_code: int | None = None
    duration_s: float = 0.0

    @property
    def passed(self) -> int:
        return sum(1 for c in self.checks if c.passed)

    @property
    def total(self) -> int:
        return len(self.checks)

    @property
    def success(self) -> bool:
        return self.status == "ok" and self.total > 0 and self.passed == self.total


def collect_checks(logs_dir: Path, output: str) -> tuple[list[CheckResult], str]:
    """Pick the richest report the verifier produced. Raises VerifierParseError if none."""
    problems: list[str] = []
    ctrf = logs_dir / "ctrf.json"
    if ctrf.is_file():
        try:
            checks = parse_ctrf(ctrf.read_text(errors="replace"))
            if checks:
                return checks, "ctrf"
            problems.append("ctrf.json lists no tests")
        except VerifierParseError as exc:
            problems.append(f"ctrf.json: {exc}")
    for xml in sorted(logs_dir.glob("*.xml")):
        try:
            checks = parse_junit(xml.read_text(errors="replace"))
            if checks:
                return checks, "junit"
        except VerifierParseError as exc:
            problems.append(f"{xml.name}: {exc}")
    checks = parse_pytest_summary(output)
    if checks:
        return checks, "pytest"
    for name, parse in (("reward.json", parse_reward_json), ("reward.txt", parse_reward_txt)):
        f = logs_dir / name
        if f.is_file():
            try:
                return parse(f.read_text(errors="replace")), name
            except VerifierParseError as exc:
                problems.append(str(exc))
    detail = "; ".join(problems) if problems else "no ctrf.json, JUnit XML, pytest summary or reward file"
    raise VerifierParseError(f"the verifier produced no usable results ({detail})")


def run_verifier(sandbox: Sandbox, task: Task) -> VerifierOutcome:
    try:
        prep = sandbox.exec(PREPARE, timeout=60, channel="system")
        if not prep.ok:
            return VerifierOutcome("error", error=f"could not prepare /tests and /logs/verifier: {prep.output.strip()}")
        sandbox.upload(task.tests_dir, "/tests")
        run = sandbox.exec(
            "bash /tests/test.sh", timeout=task.verifier_timeout_sec, channel="verifier",
            cwd="/app", env=task.verifier_env,
        )
        if run.timed_out:
            return VerifierOutcome(
                "timeout", output=run.output[-4000:], duration_s=run.duration_s,
                error=f"verifier exceeded {task.verifier_timeout_sec:g}s",
            )
        with tempfile.TemporaryDirectory(prefix="trsi-verifier-") as tmp:
            sandbox.download("/logs/verifier", Path(tmp))
            try:
                checks, source = collect_checks(Path(tmp) / "verifier", run.output)
            except VerifierParseError as exc:
                return VerifierOutcome(
                    "error", output=run.output[-4000:], error=str(exc),
                    exit_code=run.exit_code, duration_s=run.duration_s,
                )
        return VerifierOutcome(
            "ok", tuple(checks), source, run.output[-4000:], exit_code=run.exit_code, duration_s=run.duration_s,
        )
    except SandboxError as exc:
        return VerifierOutcome("error", error=f"sandbox failure during verification: {exc}")
