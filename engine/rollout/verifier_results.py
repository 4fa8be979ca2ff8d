"""Turning what a verifier leaves behind into per-check results (pure functions, no I/O).

Parsers for CTRF JSON (`ctrf.json`), JUnit XML (`*.xml`), `reward.json` / `reward.txt`, and the
pytest `-rA` short summary at the end of the verifier's output; `verifier.collect_checks`
decides which one counts. Skipped checks count as not passed: a verifier cannot make a task
succeed by skipping.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

from engine.results import CheckResult, CheckStatus


class VerifierParseError(ValueError):
    pass


_CTRF_STATUS: dict[str, CheckStatus] = {
    "passed": "passed",
    "failed": "failed",
    "skipped": "skipped",
    "pending": "skipped",
    "other": "error",
    "error": "error",
}


def parse_ctrf(text: str) -> list[CheckResult]:
    try:
        data = json.loads(text)
        tests = data["results"]["tests"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise VerifierParseError(f"not a CTRF report: {exc}") from None
    if not isinstance(tests, list):
        raise VerifierParseError("CTRF results.tests is not a list")
    checks = []
    for i, t in enumerate(tests):
        if not isinstance(t, dict):
            raise VerifierParseError(f"CTRF test #{i} is not an object")
        status = _CTRF_STATUS.get(str(t.get("status", "")).lower(), "error")
        checks.append(CheckResult(str(t.get("name", f"check_{i}")), status, str(t.get("message", "") or "")))
    return checks


def parse_junit(text: str) -> list[CheckResult]:
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise VerifierParseError(f"not JUnit XML: {exc}") from None
    checks = []
    for case in root.iter("testcase"):
        name = case.get("name", "?")
        cls = case.get("classname")
        full = f"{cls}::{name}" if cls else name
        status: CheckStatus = "passed"
        message = ""
        for child in case:
            if child.tag in ("failure", "error"):
                status = "failed" if child.tag == "failure" else "error"
                message = child.get("message", "") or (child.text or "").strip()[:500]
            elif child.tag == "skipped":
                status = "skipped"
                message = child.get("message", "")
        checks.append(CheckResult(full, status, message))
    return checks


_PYTEST_LINE = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\s+(\S+)(?:\s+-\s+(.*))?$")
_PYTEST_STATUS: dict[str, CheckStatus] = {
    "PASSED": "passed",
    "FAILED": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
    "XFAIL": "skipped",
    "XPASS": "failed",
}


_PYTEST_FINAL = re.compile(r"^=+ (.*) in [0-9.]+s(?: \([^)]*\))? =+$")
# pytest's final line is short: its counts, the time and a few words. A longer last line is not
# pytest's, and the regex above backtracks over it in quadratic time (a 512 KiB line of the
# agent's held the engine's GIL for 11 s, a red-team pass found).
PYTEST_FINAL_MAX = 400
_PYTEST_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)")


def parse_pytest_summary(output: str) -> list[CheckResult]:
    """The per-test lines of pytest's `-rA` 'short test summary info' section, read only when it
    is the last thing in the output: the section, then pytest's final `= N passed ... in Xs =`
    line, with nothing but blank lines after, and counts that agree with the lines. Anything
    earlier may be the output of the program under test."""
    lines = output.rstrip().splitlines()
    if not lines:
        return []
    last = lines[-1].strip()
    final = _PYTEST_FINAL.match(last) if len(last) <= PYTEST_FINAL_MAX else None
    if final is None:
        return []
    header = max((i for i, line in enumerate(lines) if "short test summary info" in line), default=-1)
    if header < 0:
        return []
    checks = []
    for line in lines[header + 1 : -1]:
        m = _PYTEST_LINE.match(line.strip())
        if m:
            checks.append(CheckResult(m.group(2), _PYTEST_STATUS[m.group(1)], m.group(3) or ""))
        elif line.strip() and not line.startswith((" ", "\t")):
            return []  # something else between the summary and the final line: not pytest's
    counts = {kind.rstrip("s"): int(n) for n, kind in _PYTEST_COUNT.findall(final.group(1))}
    said = {
        "PASSED": counts.get("passed", 0),
        "FAILED": counts.get("failed", 0),
        "ERROR": counts.get("error", 0),
        "SKIPPED": counts.get("skipped", 0),
    }
    seen = {k: sum(1 for c in checks if c.status == _PYTEST_STATUS[k]) for k in ("PASSED", "FAILED", "ERROR")}
    if any(seen[k] != said[k] for k in seen):
        return []
    return checks


def parse_reward_json(text: str) -> list[CheckResult]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise VerifierParseError(f"reward.json is not JSON: {exc}") from None
    value = data.get("reward") if isinstance(data, dict) else data
    return [_reward_check(value, "reward.json")]


def parse_reward_txt(text: str) -> list[CheckResult]:
    return [_reward_check(text.strip(), "reward.txt")]


def _reward_check(value: object, source: str) -> CheckResult:
    try:
        reward = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise VerifierParseError(f"{source} does not hold a number: {value!r}") from None
    return CheckResult("reward", "passed" if reward >= 1.0 else "failed", f"{source} = {reward:g}")
