"""The curriculum (engine/tasks/curriculum.py): deterministic instances, train and eval kept
apart, and every family valid in real sandboxes (oracle passes every check, nop does not)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.api import Engine
from engine.config import Config
from engine.store import Store
from engine.tasks import load_suite
from engine.tasks.curriculum import FAMILIES, NUMBER_RANGES, WORD_POOLS, CurriculumError, instance
from trsi_tui.cli import cli


def tokens(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z]+|\d+", text))


@pytest.mark.parametrize("family", list(FAMILIES))
def test_train_and_eval_instances_share_no_parameter_or_instruction(family: str):
    train = [instance(family, "train", seed, i) for seed in (0, 1) for i in range(25)]
    evals = [instance(family, "eval", seed, i) for seed in (0, 1) for i in range(25)]
    assert not {t.instruction for t in train} & {t.instruction for t in evals}
    for spec in train:
        assert not tokens(spec.instruction + spec.setup) & set(WORD_POOLS["eval"])
        assert not {int(n) for n in re.findall(r"\b\d+\b", spec.instruction)} & set(range(*NUMBER_RANGES["eval"]))
    for spec in evals:
        assert not tokens(spec.instruction + spec.setup) & set(WORD_POOLS["train"])
    assert all(3 <= len(spec.checks) <= 5 for spec in train + evals)
    # Deterministic: the same (family, split, seed, index) is the same task; another seed is another.
    assert instance(family, "train", 0, 3) == instance(family, "train", 0, 3)
    assert instance(family, "train", 0, 3) != instance(family, "train", 1, 3)


def test_generate_writes_loadable_tasks_and_refuses_bad_input(tmp_path: Path):
    result = CliRunner().invoke(
        cli,
        [
            "tasks",
            "generate",
            "--family",
            "count-lines",
            "--family",
            "sort-file",
            "--instances",
            "3",
            "--split",
            "eval",
            "--seed",
            "7",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    suite = load_suite(tmp_path)
    assert not suite.errors and len(suite.tasks) == 6 and {t.split for t in suite.tasks} == {"eval"}
    again = CliRunner().invoke(
        cli,
        [
            "tasks",
            "generate",
            "--family",
            "count-lines",
            "--instances",
            "1",
            "--split",
            "eval",
            "--seed",
            "7",
            str(tmp_path),
        ],
    )
    assert again.exit_code == 1 and "already exists" in again.output
    unknown = CliRunner().invoke(cli, ["tasks", "generate", "--family", "nope", "--split", "train", str(tmp_path)])
    assert unknown.exit_code == 1 and "unknown family 'nope'" in unknown.output
    with pytest.raises(CurriculumError, match="unknown split"):
        instance("count-lines", "test", 0, 0)


@pytest.mark.slow
def test_every_family_is_valid_in_real_sandboxes(tmp_path: Path):
    from engine.tasks.curriculum import generate

    seed = 20261130  # a sample no other test uses
    for split in ("train", "eval"):
        generate(list(FAMILIES), 1, split, seed, tmp_path)
    engine = Engine(Config(), Store(tmp_path / "db.sqlite"))
    _, checks = engine.check_tasks([str(tmp_path / "train"), str(tmp_path / "eval")], backend="local", concurrency=2)
    assert len(checks) == 2 * len(FAMILIES)
    assert [c.task for c in checks if not c.valid] == [], [c.reason for c in checks if not c.valid]


def test_the_curriculum_suite_is_written_into_the_cache_once_and_named_by_a_spec(tmp_path: Path):
    from engine.config.paths import resolve_paths

    paths = resolve_paths(str(tmp_path / "home")).ensure()
    engine = Engine(Config(tasks="curriculum:2,1"), Store(paths.database), paths)
    root = engine.suite_path(None)
    assert root.is_relative_to(paths.cache_dir)
    suite = load_suite(root)
    assert (len(suite.split("train")), len(suite.split("eval")), suite.errors) == (2 * 17, 17, [])
    marker = root / "train" / sorted(p.name for p in (root / "train").iterdir())[0] / "instruction.md"
    before = marker.stat().st_mtime_ns
    assert engine.suite_path("curriculum:2,1") == root and marker.stat().st_mtime_ns == before  # not rewritten
    assert engine.suite_path(str(tmp_path)) == tmp_path  # a path stays a path
    with pytest.raises(ValueError, match="curriculum:TRAIN,EVAL"):
        engine.suite_path("curriculum:lots")
