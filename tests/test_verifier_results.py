"""Parsing verifier output and the success-first reward."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.rollout.reward import shaped_reward
from engine.rollout.verifier import collect_checks
from engine.rollout.verifier_results import (
    VerifierParseError,
    parse_ctrf,
    parse_junit,
    parse_pytest_summary,
    parse_reward_txt,
)

PYTEST_OUT = """\
============================= test session starts ==============================
collected 3 items

../tests/test_outputs.py ..F                                             [100%]
=========================== short test summary info ============================
PASSED ../tests/test_outputs.py::test_file_exists
PASSED ../tests/test_outputs.py::test_header
FAILED ../tests/test_outputs.py::test_values - AssertionError: 3 != 4
========================= 1 failed, 2 passed in 0.05s ==========================
"""

JUNIT = """<?xml version="1.0"?>
<testsuites><testsuite name="pytest" tests="3">
  <testcase classname="tests.test_a" name="test_ok" time="0.01"/>
  <testcase classname="tests.test_a" name="test_bad"><failure message="boom">trace</failure></testcase>
  <testcase classname="tests.test_a" name="test_skip"><skipped message="later"/></testcase>
</testsuite></testsuites>"""


def test_ctrf_checks():
    text = json.dumps(
        {
            "results": {
                "tests": [{"name": "a", "status": "passed"}, {"name": "b", "status": "failed", "message": "nope"}]
            }
        }
    )
    checks = parse_ctrf(text)
    assert [(c.name, c.status) for c in checks] == [("a", "passed"), ("b", "failed")]
    assert checks[1].message == "nope"


def test_ctrf_garbage_is_a_parse_error():
    with pytest.raises(VerifierParseError):
        parse_ctrf("{not json")
    with pytest.raises(VerifierParseError):
        parse_ctrf('{"results": {}}')


def test_junit_checks_count_skips_as_not_passed():
    checks = parse_junit(JUNIT)
    assert [(c.name, c.status) for c in checks] == [
        ("tests.test_a::test_ok", "passed"),
        ("tests.test_a::test_bad", "failed"),
        ("tests.test_a::test_skip", "skipped"),
    ]
    assert sum(c.passed for c in checks) == 1


def test_pytest_rA_summary():
    checks = parse_pytest_summary(PYTEST_OUT)
    assert [c.status for c in checks] == ["passed", "passed", "failed"]
    assert checks[2].message == "AssertionError: 3 != 4"


def test_reward_txt_is_one_check():
    assert parse_reward_txt("1\n")[0].passed
    assert not parse_reward_txt("0.5")[0].passed
    with pytest.raises(VerifierParseError):
        parse_reward_txt("yes")


def test_the_reward_file_decides_and_ctrf_gives_the_detail(tmp_path: Path):
    (tmp_path / "reward.txt").write_text("0")
    (tmp_path / "ctrf.json").write_text(json.dumps({"results": {"tests": [{"name": "x", "status": "passed"}]}}))
    found = collect_checks(tmp_path, "")
    assert found.source == "ctrf+reward.txt" and found.verdict is False
    # The detail alone would look like a success: the failing reward file is added to it.
    assert [(c.name, c.passed) for c in found.checks] == [("x", True), ("reward", False)]
    (tmp_path / "reward.txt").write_text("1")
    assert collect_checks(tmp_path, "").verdict is True


def test_collect_falls_back_in_order(tmp_path: Path):
    (tmp_path / "junit.xml").write_text(JUNIT)
    assert collect_checks(tmp_path, PYTEST_OUT).source == "junit"
    (tmp_path / "junit.xml").unlink()
    assert collect_checks(tmp_path, PYTEST_OUT).source == "pytest"
    (tmp_path / "reward.json").write_text('{"reward": 1.0}')
    assert collect_checks(tmp_path, PYTEST_OUT).source == "reward.json"


def test_output_never_outranks_a_reward_file(tmp_path: Path):
    """A test that prints the program's output (the agent's) and writes reward.txt = 0."""
    (tmp_path / "reward.txt").write_text("0\n")
    found = collect_checks(tmp_path, PYTEST_OUT)
    assert found.source == "reward.txt" and found.verdict is False


def test_a_summary_is_read_only_from_the_end_of_the_output():
    forged = "short test summary info\nPASSED t.py::test_a\n==== 1 passed in 0.01s ====\n"
    assert parse_pytest_summary(forged + "more output afterwards\n") == []
    # The real summary after the forged one is what counts.
    assert [c.status for c in parse_pytest_summary(forged + PYTEST_OUT)] == ["passed", "passed", "failed"]
    # Counts in the final line must agree with the lines above it.
    assert parse_pytest_summary(PYTEST_OUT.replace("1 failed, 2 passed", "3 passed")) == []


def test_an_unreadable_reward_file_decides_nothing(tmp_path: Path):
    (tmp_path / "reward.txt").write_text("lots")
    (tmp_path / "ctrf.json").write_text(json.dumps({"results": {"tests": [{"name": "x", "status": "passed"}]}}))
    with pytest.raises(VerifierParseError, match="reward.txt"):
        collect_checks(tmp_path, "")


def test_collect_with_nothing_explains_why(tmp_path: Path):
    (tmp_path / "ctrf.json").write_text("garbage")
    with pytest.raises(VerifierParseError, match="no usable results.*ctrf.json"):
        collect_checks(tmp_path, PYTEST_OUT)


def test_reward_is_success_first():
    assert shaped_reward(3, 3, alpha=0.5) == 1.0
    assert shaped_reward(2, 4, alpha=0.5) == 0.25
    assert shaped_reward(0, 4, alpha=0.5) == 0.0
    # The article's example: 9 of 11 checks must never look like a success.
    for alpha in (0.0, 0.5, 0.9, 0.999):
        best_partial = max(shaped_reward(p, t, alpha) for t in range(1, 60) for p in range(t))
        assert best_partial < 1.0


def test_reward_rejects_bad_inputs():
    with pytest.raises(ValueError):
        shaped_reward(1, 2, alpha=1.0)
    with pytest.raises(ValueError):
        shaped_reward(3, 2, alpha=0.5)
    with pytest.raises(ValueError):
        shaped_reward(0, 0, alpha=0.5)
