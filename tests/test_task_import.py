"""Classic Terminal-Bench and Harbor tasks: conversion, import, and running them unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.api import Engine
from engine.config import parse_config
from engine.store import Store
from engine.tasks import load_suite, load_task
from engine.tasks.importer import TaskImportError, convert_classic, solution_script
from trsi_tui.cli import cli

UPSTREAM = Path(__file__).parent / "fixtures" / "upstream"
ALIASES = parse_config(
    '[sandbox]\nbackend = "docker"\n[sandbox.docker.aliases]\n'
    '"ubuntu:24.04" = "trsi-tui/base:bookworm"\n'
    '"python:3.13-slim" = "trsi-tui/base:bookworm"\n'
    '"public.ecr.aws/docker/library/debian:bookworm-slim" = "trsi-tui/base:bookworm"\n'
)


def test_classic_task_loads_directly_with_its_timeouts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    task = load_task(UPSTREAM / "terminal-bench" / "greet-file")
    assert task.name == "greet-file"
    assert task.instruction.startswith("Create the file /app/greeting.txt")
    assert (task.agent_timeout_sec, task.verifier_timeout_sec) == (120, 45)
    assert task.metadata["source_format"] == "terminal-bench" and task.difficulty == "easy"
    assert task.dockerfile is not None and (task.environment_dir / "notes.txt").is_file()
    assert (task.tests_dir / "run-tests.sh").is_file() and (task.tests_dir / "test_outputs.py").is_file()
    # The build context does not carry the tests or the solution.
    assert not (task.environment_dir / "tests").exists() and not (task.environment_dir / "solution.sh").exists()


def test_descriptions_and_default_timeouts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    task = load_task(UPSTREAM / "terminal-bench" / "count-words")
    assert task.instruction.startswith("Count the words")
    assert (task.agent_timeout_sec, task.verifier_timeout_sec) == (90, 30)


def test_solution_yaml_keystrokes_become_a_script():
    script = solution_script(UPSTREAM / "terminal-bench" / "count-words")
    assert "cd /app\nsleep 0.1\nwc -w < poem.txt > words.txt\nsleep 0.1" in script


def test_multi_service_compose_is_refused_with_the_reason(tmp_path: Path):
    src = tmp_path / "multi"
    src.mkdir()
    (src / "task.yaml").write_text("instruction: do it\n")
    (src / "Dockerfile").write_text("FROM ubuntu:24.04\n")
    (src / "solution.sh").write_text("true\n")
    (src / "tests").mkdir()
    (src / "docker-compose.yaml").write_text("services:\n  client: {build: .}\n  db: {image: postgres}\n")
    with pytest.raises(TaskImportError, match="2 services"):
        convert_classic(src, tmp_path / "out")
    suite = load_suite(tmp_path)
    assert suite.tasks == [] and "2 services" in suite.errors[0].reason


def test_import_command_writes_the_native_layout(tmp_path: Path):
    dest = tmp_path / "imported"
    r = CliRunner().invoke(cli, ["--home", str(tmp_path), "tasks", "import", str(UPSTREAM), str(dest)], obj={})
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in dest.iterdir()) == ["count-words", "csv-total", "fix-config", "greet-file"]
    assert (dest / "greet-file" / "task.toml").is_file() and not (dest / "greet-file" / "task.yaml").exists()
    suite = load_suite(dest)
    assert suite.errors == [] and len(suite.tasks) == 4
    again = CliRunner().invoke(cli, ["--home", str(tmp_path), "tasks", "import", str(UPSTREAM), str(dest)], obj={})
    assert again.exit_code == 1 and "already exists" in again.output


@pytest.mark.docker
def test_upstream_fixtures_pass_tasks_check_on_docker():
    engine = Engine(ALIASES, Store(":memory:"))
    _, checks = engine.check_tasks([UPSTREAM], backend="docker", concurrency=2)
    assert [(c.task, c.valid, c.reason) for c in checks if not c.valid] == []
    assert sorted(c.task for c in checks) == ["count-words", "csv-total", "fix-config", "greet-file"]
    sources = {c.task: c.oracle.verifier_source for c in checks}
    assert sources["greet-file"] == "pytest" and sources["csv-total"] == "junit+reward.txt"
