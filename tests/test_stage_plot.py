"""docs/stage_plot.py: the pass@1-per-stage plot drawn from `pipeline status --json`."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import docs_script


def test_the_plot_shows_every_evaluated_stage_with_its_interval_and_each_seed(tmp_path: Path):
    interval = {"estimate": 0.2, "low": 0.1, "high": 0.3}
    status = {
        "seeds": {},
        "over_seeds": [
            {"stage": "Base", "seeds": [0], "per_seed": [0.1], "mean": interval, "parent": "", "gain": None},
            {"stage": "RSR-1", "seeds": [0, 1, 2], "per_seed": [0.25, 0.3, 0.2], "mean": interval, "parent": "Base"},
            {"stage": "RPR-1", "seeds": [], "per_seed": [], "mean": None, "parent": "RSR-1", "gain": None},
        ],
    }
    (tmp_path / "s.json").write_text(json.dumps(status))
    plot = docs_script("stage_plot")
    rows = plot.rows_of(status)
    assert [r["stage"] for r in rows] == ["Base", "RSR-1"]  # a stage not yet evaluated is left out
    drawn = plot.svg(rows, "title")
    root = ET.fromstring(drawn)  # well-formed SVG
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "Base" in texts and "RSR-1" in texts and "0.200" in texts and "seed 2" in texts
    circles = list(root.iter("{http://www.w3.org/2000/svg}circle"))
    assert len(circles) == 2 + 3 + 3  # two means, three seeds at RSR-1, three legend dots


def _write_run(folder: Path, stage_suffix: str, outcomes: dict[str, dict[str, int]]) -> Path:
    folder.mkdir()
    lines = ["stage,task,success,reward,stop_reason,replies"]
    for stage, by_task in outcomes.items():
        name = stage if stage == "Base" else stage + stage_suffix
        lines += [f"{name},{task},{won},{float(won)},done,1" for task, won in by_task.items()]
    (folder / "eval_episodes.csv").write_text("\n".join(lines) + "\n")
    return folder


def test_runs_of_separate_seeds_pool_into_paired_gains_per_tier(tmp_path: Path, capsys):
    # Two seeds on three eval tasks: two one-step, one multi-step. Seed 1's store names its
    # stages "RSR-1 seed 1"; they must pair with seed 0's plain "RSR-1".
    one_a, one_b, multi = "copy-file-eval-s1-0000", "move-file-eval-s1-0000", "log-with-host-eval-s1-0000"
    seed0 = {"Base": {one_a: 0, one_b: 0, multi: 0}, "RSR-1": {one_a: 1, one_b: 1, multi: 0}}
    seed1 = {"Base": {one_a: 0, one_b: 0, multi: 0}, "RSR-1": {one_a: 1, one_b: 0, multi: 0}}
    runs = [_write_run(tmp_path / "s0", "", seed0), _write_run(tmp_path / "s1", " seed 1", seed1)]
    table = docs_script("seed_table")
    assert table.tier_of(one_a) == "one-step" and table.tier_of(multi) == "multi-step"
    out = tmp_path / "pooled.json"
    assert table.main([str(r) for r in runs] + ["--json", str(out)]) == 0
    tiers = json.loads(out.read_text())["tiers"]
    gain = tiers["one-step"]["gains"]["RSR-1 - Base"]
    assert gain["per_seed"] == [1.0, 0.5]
    estimate, low, high = gain["mean"]
    assert abs(estimate - 0.75) < 1e-9 and 0.0 <= low < estimate < high <= 1.0
    assert tiers["multi-step"]["gains"]["RSR-1 - Base"]["per_seed"] == [0.0, 0.0]
    assert "RPR-1 - RSR-1" not in tiers["all"]["gains"]  # a stage no run reached is left out
    assert "| RSR-1 - Base | +0.500 [" in capsys.readouterr().out


def test_a_run_file_holding_several_seeds_is_refused_rather_than_mixed(tmp_path: Path):
    both = {"Base": {"copy-file-eval-s1-0000": 0}, "RSR-1": {"copy-file-eval-s1-0000": 1}}
    folder = _write_run(tmp_path / "s", "", both)
    with (folder / "eval_episodes.csv").open("a") as fh:
        fh.write("RSR-1 seed 1,copy-file-eval-s1-0000,0,0.0,done,1\n")
    with pytest.raises(SystemExit, match="several training seeds"):
        docs_script("seed_table").read_run(folder)
