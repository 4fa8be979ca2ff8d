"""Turning what a verifier leaves behind into per-check results (pure functions, no I/O).

Sources, in order of preference: CTRF JSON (`ctrf.json`), JUnit XML (`*.xml`), the pytest
`-rA` short summary in the verifier's output, then `reward.json` / `reward.txt` as a single
check. Skipped checks count as not passed: a verifier cannot make a task succeed by skipping.
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


def parse_pytest_summary(output: str) -> list[CheckResult]:
    """Per-test lines of pytest's `-rA` 'short test summary info' section."""
    checks = []
    in_summary = False
    for line in output.splitlines():
        if "short test summary info" in line:
            in_summary = True
            continue
        if in_summary:
            m = _PYTEST_LINE.match(line.strip())
            if m:
                checks.append(CheckResult(m.group(2), _PYTEST_STATUS[m.group(1)], m.group(3) or ""))
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
