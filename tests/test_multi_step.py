"""The curriculum's multi-step tier (engine/tasks/families/multi_step.py and the held-out ones in
heldout.py): the agent has to read something in the sandbox before it can act, so an oracle takes
2 or 3 commands and its first alone passes no task; what has to be read changes from instance to
instance."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from engine.api import Engine
from engine.config import Config
from engine.store import Store
from engine.tasks.curriculum import FAMILIES, family_info, generate, instance

MULTI = [f for f in FAMILIES if family_info(f).tier == "multi-step"]


def commands(solve: str) -> list[str]:
    return [line for line in solve.splitlines() if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("family", MULTI)
def test_an_oracle_takes_two_or_three_commands_of_a_minimal_debian(family: str):
    for split in ("train", "eval"):
        for i in range(20):
            spec = instance(family, split, 0, i)
            assert 2 <= len(commands(spec.solve)) <= 3, spec.solve
            for text in (spec.setup, spec.solve, *(cmd for _, cmd in spec.checks)):
                assert not re.search(r"\b(python3?|jq|perl)\b", text), text
            assert spec.difficulty == "medium" and spec.agent_timeout >= 90


@pytest.mark.parametrize("family", MULTI)
def test_what_has_to_be_read_changes_from_instance_to_instance(family: str):
    """Over 20 instances the answer the checks hold (with the instance's own names blanked) takes
    several values: no single blind command passes them all."""
    answers = set()
    for i in range(20):
        spec = instance(family, "train", 0, i)
        names = set(re.findall(r"/app/([A-Za-z]+)", spec.instruction))
        checks = " ".join(cmd for _, cmd in spec.checks)
        answers.add(re.sub(r"\b(" + "|".join(sorted(names)) + r")\b", "N", checks) if names else checks)
    assert len(answers) >= 10


@pytest.mark.slow
def test_the_oracle_passes_and_its_first_command_alone_does_not_in_real_sandboxes(tmp_path: Path):
    """Each multi-step family, one instance per split: the oracle passes every check and doing
    nothing does not (`tasks check`); a copy of the task whose solution is only the oracle's first
    command does not succeed either."""
    seed = 20261201  # a sample no other test uses
    for split in ("train", "eval"):
        generate(MULTI, 1, split, seed, tmp_path / "whole")
    for task in sorted((tmp_path / "whole").glob("*/*")):
        first = tmp_path / "first" / task.parent.name / f"{task.name}-first"
        shutil.copytree(task, first)
        solve = first / "solution" / "solve.sh"
        header, body = solve.read_text().split("set -e\n", 1)
        solve.write_text(header + "set -e\n" + commands(body)[0] + "\n")
    engine = Engine(Config(), Store(tmp_path / "db.sqlite"))
    _, checks = engine.check_tasks([str(tmp_path / "whole"), str(tmp_path / "first")], backend="local", concurrency=2)
    whole = [c for c in checks if not c.task.endswith("-first")]
    first = [c for c in checks if c.task.endswith("-first")]
    assert len(whole) == len(first) == 2 * len(MULTI)
    assert [c.task for c in whole if not c.valid] == [], [c.reason for c in whole if not c.valid]
    # The first command alone is run and judged (scored), and does not pass.
    assert [c.task for c in first if c.oracle is None or not c.oracle.scored or c.oracle.success] == []
    assert all(c.reason.startswith("oracle did not succeed") for c in first)
