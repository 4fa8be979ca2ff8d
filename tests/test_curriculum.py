"""The curriculum (engine/tasks/curriculum.py): deterministic instances, train and eval kept
apart, tiers and held-out families, phrasings, and every family valid in real sandboxes (oracle
passes every check, nop does not). tests/test_multi_step.py has the multi-step tier's own."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.api import Engine
from engine.config import Config
from engine.store import Store
from engine.tasks import load_suite
from engine.tasks.curriculum import (
    FAMILIES,
    HELDOUT_FAMILIES,
    NUMBER_RANGES,
    TRAINED_FAMILIES,
    WORD_POOLS,
    CurriculumError,
    family_info,
    instance,
)
from engine.tasks.families import counting, one_command
from engine.tasks.families.folders import folder_for, moved
from engine.tasks.families.phrasing import FRAME_WORDS, FRAMES, HINTS
from trsi_tui.cli import cli

PATH = re.compile(r"/app/[\w./-]*\w")
CHECKS_V6 = "b4fa76933845bef0402308d0e32ab39c34f2ce2d69d6230828a21311cef3cf17"


def tokens(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z]+|\d+", text))


def wording(text: str, split: str) -> str:
    """An instruction with its parameters (code spans, paths, numbers, the split's words) blanked."""
    text = PATH.sub("P", re.sub(r"`[^`]*`", "C", text))
    text = re.sub(r"\b\d+\b", "N", text)
    return re.sub(r"\b(" + "|".join(WORD_POOLS[split]) + r")\b", "W", text)


def test_the_tiers_and_the_held_out_families():
    one_step = [*one_command.FAMILIES, *counting.FAMILIES]
    assert one_step == list(FAMILIES)[:17] and len(one_step) == 17
    assert all(family_info(f).tier == "one-step" and not family_info(f).heldout for f in one_step)
    assert set(TRAINED_FAMILIES) | set(HELDOUT_FAMILIES) == set(FAMILIES)
    assert not set(TRAINED_FAMILIES) & set(HELDOUT_FAMILIES)
    assert [f for f in FAMILIES if family_info(f).heldout] == HELDOUT_FAMILIES
    by_tier = {t: [f for f in HELDOUT_FAMILIES if family_info(f).tier == t] for t in ("one-step", "multi-step")}
    assert (len(by_tier["one-step"]), len(by_tier["multi-step"])) == (3, 3)
    multi = [f for f in FAMILIES if family_info(f).tier == "multi-step"]
    assert len(multi) >= 10 and {family_info(f).tier for f in FAMILIES} == {"one-step", "multi-step"}
    with pytest.raises(CurriculumError, match="unknown family"):
        family_info("nope")


# Curriculum v6 drew these families' answers from wider ranges: their setups changed, nothing else did.
WIDER_COUNTS = ("count-lines", "grep-count", "count-files")


def test_the_one_step_families_draw_the_same_tasks_as_before_phrasings():
    """Only the wording of an instruction varies: files, words, numbers and solutions of the
    one-step families are exactly what they were (this digest, over the 14 whose setups v6 left
    alone, was the same before v6; the whole 17's held from the 16-word pool through v5)."""
    digest = hashlib.sha256()
    for f in sorted(f for f in [*one_command.FAMILIES, *counting.FAMILIES] if f not in WIDER_COUNTS):
        for split in ("train", "eval"):
            for seed in (0, 1):
                for i in range(10):
                    s = instance(f, split, seed, i)
                    fields = [s.name, s.setup, s.solve, s.tags, s.difficulty, s.agent_timeout]
                    digest.update(json.dumps(fields).encode())
    assert digest.hexdigest() == "4ffcb554d9f566defd2ae6d0799d4d3d89067da013f3df41e25186226f42e72a"


def test_the_eval_instances_are_those_every_earlier_stage_table_was_measured_on():
    """Every family's eval instances are those of curriculum v2 (docs/results.md compares stages
    across commits on them): a larger train pool changed no eval task, v4 and v5 changed only
    checks (commands that broke the task passed them), and v6 only the setups of the three
    families whose answer a guess passed too often, never an instruction. (Both digests below
    were the same before v6.)"""
    digests = {"wording": hashlib.sha256(), "tasks": hashlib.sha256(), "checks": hashlib.sha256()}
    for f in sorted(FAMILIES):
        for seed in (0, 1):
            for i in range(10):
                s = instance(f, "eval", seed, i)
                digests["wording"].update(json.dumps([s.name, s.instruction]).encode())
                if f not in WIDER_COUNTS:
                    fields = [s.name, s.instruction, s.setup, s.solve, s.tags, s.difficulty, s.agent_timeout]
                    digests["tasks"].update(json.dumps(fields).encode())
    for f in FAMILIES:
        for seed in (0, 1):
            for i in range(10):
                s = instance(f, "eval", seed, i)
                digests["checks"].update(json.dumps([s.name, s.checks]).encode())
    assert digests["wording"].hexdigest() == "2d4d3e0054da871c7d05701a39e5ba0f274d9943fb6aa4848cdc230610d6d807"
    assert digests["tasks"].hexdigest() == "12adfccd1a5a71cbba5f18d83eb96604e1e40b4b30bc7d249794b96caacd1eb3"
    assert digests["checks"].hexdigest() == CHECKS_V6


def test_elsewhere_moves_a_task_out_of_app_and_changes_nothing_else(tmp_path: Path):
    """`tasks generate --elsewhere`: the same tasks in other folders, at other depths, named from
    the split's own pool, so that a trained model's dependence on /app can be measured."""
    result = CliRunner().invoke(
        cli,
        ["tasks", "generate", "--family", "all", "--instances", "2", "--split", "eval", "--elsewhere", str(tmp_path)],
    )
    assert result.exit_code == 0, result.output
    written = load_suite(tmp_path).split("eval")
    assert len(written) == 2 * len(FAMILIES)
    tops = Counter(folder_for(t.name, "eval").split("/")[1] for t in written)
    assert len(tops) >= 4, tops
    assert all(folder_for(t.name, "eval") in t.instruction for t in written)
    for family in FAMILIES:
        spec = instance(family, "eval", 0, 1)
        folder = folder_for(spec.name, "eval")
        away = moved(spec, folder)
        assert folder in away.instruction and "/app " not in away.instruction + away.setup
        assert not tokens(folder) & set(WORD_POOLS["train"])
        # Named /app again, it is the task it was.
        back = [text.replace(folder, "/app") for text in (away.instruction, away.setup, away.solve)]
        assert back == [spec.instruction, spec.setup, spec.solve]


def test_no_fixed_answer_passes_more_than_a_few_percent_of_a_family():
    """A verifier sees the number a task asks for, not how it was found, so `echo 4 > out` passes
    every instance whose answer is 4: before v6, 22% of grep-count's and 18% of count-files'
    (and the trained model's `echo "5"` made 3 of the 4 successes it found on counting families
    in a probe). In no family whose answer is a number (its output is checked to hold one) may
    the answer be the same in more than 6% of the instances."""
    numeric = [f for f in FAMILIES if any(name == "has_a_number" for name, _ in instance(f, "train", 0, 0).checks)]
    assert {"count-lines", "grep-count", "count-files", "arithmetic", "csv-lookup"} <= set(numeric)
    for family in numeric:
        for split in ("train", "eval"):
            answers = Counter()
            for i in range(400):
                spec = instance(family, split, 0, i)
                answers.update(name for name, _ in spec.checks if re.search(r"_is_-?\d+$", name))
            top, n = answers.most_common(1)[0]
            assert n / 400 <= 0.06, (family, split, top, n)


def test_a_destructive_command_passes_no_family_that_keeps_other_files_untouched(tmp_path: Path):
    """Moving the other folders away (`mv inbox/note inbox/note */` in /app, which a trained model
    wrote, moves every folder into the last) left note-to-folder's "other folders untouched" with
    nothing to look at, and deleting the unlisted scripts made them "not executable": both
    passed every check before v4."""
    from engine.rollout.agents import CommandsAgent
    from engine.rollout.episode import run_episode
    from engine.tasks import load_task
    from engine.tasks.curriculum import generate

    generate(["note-to-folder", "exec-listed"], 1, "eval", 1, tmp_path)
    tasks = {t.name.rsplit("-eval", 1)[0]: t for t in (load_task(p) for p in sorted((tmp_path / "eval").iterdir()))}
    setup = (tmp_path / "eval" / tasks["note-to-folder"].name / "environment" / "setup.sh").read_text()
    dest = re.search(r"^folder: (\w+)$", setup, re.M).group(1)
    listing = re.search(r"/app/\S+_list\.\w+", tasks["exec-listed"].instruction).group(0)
    attacks = {
        "note-to-folder": f"cd /app && mv inbox/* $(ls -d */ | grep -vx {dest}/) {dest}/",
        "exec-listed": f"cd $(dirname $(ls -d /app/*/*.sh | head -n 1)) && chmod +x $(cat {listing}) && "
        f'for f in *.sh; do grep -qx "$f" {listing} || rm -f "$f"; done',
    }
    for family, command in attacks.items():
        r = run_episode(tasks[family], CommandsAgent([command]), config=Config())
        assert r.scored and not r.success, (family, r.checks)
        assert 0 < r.checks_passed < r.checks_total  # the rest of the work still earns its credit


def solution_of(family: str) -> str:
    """The reference solution of the eval instance `generate([family], 1, "eval", 1, ...)` writes."""
    return instance(family, "eval", 1, 0).solve.strip()


# Commands that break the task and passed every check before curriculum v5 (an audit by a hostile
# reading of every family's checks): each is the family's own solution, bent.
BROKEN = {
    "copy-file": lambda s: s.replace("cp ", "ln -s ", 1),  # a link, not a copy
    "log-with-host": lambda s: s.replace("cp ", "ln ", 1),  # a hard link: one file, two names
    "move-file": lambda s: re.sub(r"mv (\S+) (\S+)", r"head -n 1 \1 > \2 && rm \1", s),  # two lines lost
    "sort-file": lambda s: re.sub(r"sort (\S+) > (\S+)", r"sort -o \1 \1 && cp \1 \2", s),  # input sorted in place
    "grep-lines": lambda s: s.replace("grep ", "grep -o ", 1),  # the word, not the lines
    "sed-replace": lambda s: re.sub(r"s/(\w+)/(\w+)/g", r"s/^\1 .*/\2/", s),  # the numbers thrown away
    "count-lines": lambda s: re.sub(r"< (\S+) > (\S+)", r"< \1 > \2 \&\& rm \1", s),  # the input deleted
    "make-executable": lambda s: s.replace("chmod +x", "chmod 777"),  # writable by anyone
    "threshold-filter": lambda s: s.replace("'$2 > t'", "'$2 > t {print \"x\", $2}'"),  # other lines, right numbers
}


def test_commands_that_break_the_task_pass_no_family(tmp_path: Path):
    """Each family's solution still passes every check, and the same solution bent (a link for a
    copy, the input rewritten, part of the output or of a moved file lost, `chmod 777`) passes
    none of its tasks: such a success would be trained on. The rest earns partial credit."""
    from engine.rollout.agents import CommandsAgent
    from engine.rollout.episode import run_episode
    from engine.tasks import load_task
    from engine.tasks.curriculum import generate

    generate(list(BROKEN), 1, "eval", 1, tmp_path)
    tasks = {t.name.rsplit("-eval", 1)[0]: t for t in (load_task(p) for p in sorted((tmp_path / "eval").iterdir()))}
    for family, bend in BROKEN.items():
        solution = solution_of(family)
        assert bend(solution) != solution, family
        right = run_episode(tasks[family], CommandsAgent(solution.splitlines()), config=Config())
        assert right.success, (family, right.checks)
        broken = run_episode(tasks[family], CommandsAgent(bend(solution).splitlines()), config=Config())
        assert broken.scored and not broken.success, (family, bend(solution), broken.checks)
        assert 0 < broken.checks_passed < broken.checks_total, family


def test_train_instances_name_their_files_from_many_more_words_than_a_family_has_tasks():
    """A trained model cannot answer with a name it saw in training: 8 train instances of a family
    rarely repeat a name, and the pool has no word inside another (a grep for one matches no other)."""
    pool = WORD_POOLS["train"]
    assert len(pool) >= 100 and len(set(pool)) == len(pool)
    everything = pool + WORD_POOLS["eval"]
    assert not [(a, b) for a in everything for b in everything if a != b and a in b]
    names = [m for i in range(8) for m in re.findall(r"/app/(\w+)", instance("copy-file", "train", 0, i).instruction)]
    assert len(set(names)) >= 0.8 * len(names)


def test_frames_add_no_number_and_no_word_of_either_split():
    frames = " ".join(f.format(a="", A="") for f in FRAMES) + " ".join(h.format(tool="") for h in HINTS)
    assert not re.search(r"\d", frames)
    assert not tokens(frames.lower()) & set(WORD_POOLS["train"] + WORD_POOLS["eval"])
    assert FRAME_WORDS and not FRAME_WORDS & set(WORD_POOLS["train"] + WORD_POOLS["eval"])


@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family_has_several_phrasings_that_name_every_path_the_checks_need(family: str):
    specs = [instance(family, "train", 0, i) for i in range(30)]
    assert len({wording(s.instruction, "train") for s in specs}) >= 3
    for s in specs:
        named = set(PATH.findall(s.instruction))
        for path in set(PATH.findall(" ".join(cmd for _, cmd in s.checks))):
            folders = [path.rsplit("/", k)[0] for k in range(path.count("/") - 1)]  # itself and up to /app/X
            if family_info(family).tier == "multi-step" and any(f in s.setup for f in folders):
                continue  # found by looking: the log that mentions the host, the folder the note names
            # The path itself, a folder it is in, or a folder on the way to a named one.
            assert any(n == path or path.startswith(n + "/") or n.startswith(path + "/") for n in named), (
                s.instruction,
                path,
            )


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
    held = CliRunner().invoke(
        cli, ["tasks", "generate", "--family", "heldout", "--instances", "1", "--split", "train", str(tmp_path)]
    )
    assert held.exit_code == 0, held.output
    written = load_suite(tmp_path).split("train")
    assert sorted(t.metadata["family"] for t in written) == sorted(HELDOUT_FAMILIES)  # when asked explicitly
    assert all(t.metadata["heldout"] is True for t in written)
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
    assert root.parent.name == "curriculum" and root.name.startswith("v6-")  # none cached before v6
    counts = (len(suite.split("train")), len(suite.split("eval")), suite.errors)
    assert counts == (2 * len(TRAINED_FAMILIES), len(FAMILIES), []) == (52, 32, [])
    # Held-out families are only evaluated; every task says its tier and whether it is held out.
    assert {t.metadata["family"] for t in suite.split("train")} == set(TRAINED_FAMILIES)
    assert {t.metadata["family"] for t in suite.split("eval")} == set(FAMILIES)
    for t in suite.tasks:
        info = family_info(t.metadata["family"])
        assert (t.metadata["tier"], t.metadata["heldout"]) == (info.tier, info.heldout), t.name
    marker = root / "train" / sorted(p.name for p in (root / "train").iterdir())[0] / "instruction.md"
    before = marker.stat().st_mtime_ns
    assert engine.suite_path("curriculum:2,1") == root and marker.stat().st_mtime_ns == before  # not rewritten
    assert engine.suite_path(str(tmp_path)) == tmp_path  # a path stays a path
    with pytest.raises(ValueError, match="curriculum:TRAIN,EVAL"):
        engine.suite_path("curriculum:lots")
