"""Task loading, the built-in suite's shape, and malformed-task reporting."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from engine.config.paths import REPO_ROOT, builtin_tasks_dir
from engine.tasks import load_suite, load_task
from engine.tasks.canary import CANARY
from tests.conftest import EXAMPLE_TASK, write_task


def test_example_task_reads_all_harbor_fields():
    task = load_task(EXAMPLE_TASK)
    assert task.name == "count-lines"
    assert task.instruction.startswith("Count the lines")
    assert task.agent_timeout_sec == 120 and task.verifier_timeout_sec == 30
    assert task.environment.cpus == 1 and task.environment.memory_mb == 512
    assert task.environment.allow_internet is False
    assert task.metadata["difficulty"] == "trivial"
    assert task.setup_script is not None and task.dockerfile is None


def test_builtin_suite_is_large_tiered_and_split():
    suite = load_suite(builtin_tasks_dir())
    assert suite.errors == []
    assert len(suite.tasks) >= 40
    assert {t.difficulty for t in suite.tasks} == {"trivial", "easy", "medium", "hard"}
    train, evals = suite.split("train"), suite.split("eval")
    assert train and evals and len(train) + len(evals) == len(suite.tasks)
    # Same families on both sides, but never the same instance.
    assert {t.metadata["family"] for t in train} == {t.metadata["family"] for t in evals}
    assert not {t.instruction for t in train} & {t.instruction for t in evals}
    assert not {t.name for t in train} & {t.name for t in evals}


def test_every_builtin_verifier_carries_the_canary():
    files = [p for p in builtin_tasks_dir().rglob("tests/*") if p.is_file()]
    assert len(files) >= 40
    assert all(CANARY in p.read_text() for p in files)
    # ...and nothing the agent sees does.
    for visible in builtin_tasks_dir().rglob("instruction.md"):
        assert CANARY not in visible.read_text()


def test_committed_suite_matches_the_generator():
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "assets" / "generate.py"), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_malformed_tasks_are_reported_and_the_rest_loads(tmp_path: Path):
    write_task(tmp_path, "good")
    write_task(tmp_path, "no-instruction", instruction=None)
    write_task(tmp_path, "bad-toml", toml="[agent\ntimeout_sec = ")
    write_task(tmp_path, "bad-value", toml="[agent]\ntimeout_sec = -3\n")
    write_task(tmp_path, "bad-memory", toml="[environment]\nmemory = 'lots'\n")
    missing_tests = write_task(tmp_path, "no-tests")
    (missing_tests / "tests" / "test.sh").unlink()
    suite = load_suite(tmp_path)
    assert [t.name for t in suite.tasks] == ["good"]
    reasons = {e.path.name: e.reason for e in suite.errors}
    assert reasons["no-instruction"] == "missing instruction.md"
    assert "not valid TOML" in reasons["bad-toml"]
    assert "timeout_sec must be a positive number" in reasons["bad-value"]
    assert "memory must be" in reasons["bad-memory"]
    assert "missing tests/test.sh" in reasons["no-tests"]
    assert all(str(tmp_path) in str(e) for e in suite.errors)


def test_memory_sizes_and_split_from_directory(tmp_path: Path):
    write_task(tmp_path / "eval", "sized", toml="[environment]\nmemory = '1G'\nstorage_mb = 300\n")
    task = load_suite(tmp_path).tasks[0]
    assert task.environment.memory_mb == 1024 and task.environment.storage_mb == 300
    assert task.split == "eval"


def test_missing_suite_directory_is_an_error_not_a_crash(tmp_path: Path):
    suite = load_suite(tmp_path / "nope")
    assert suite.tasks == [] and "no such task directory" in suite.errors[0].reason
