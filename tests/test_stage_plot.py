"""docs/stage_plot.py: the pass@1-per-stage plot drawn from `pipeline status --json`."""

from __future__ import annotations

import importlib.util
import json
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _plot_module():
    spec = importlib.util.spec_from_file_location("stage_plot", ROOT / "docs" / "stage_plot.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
    plot = _plot_module()
    rows = plot.rows_of(status)
    assert [r["stage"] for r in rows] == ["Base", "RSR-1"]  # a stage not yet evaluated is left out
    drawn = plot.svg(rows, "title")
    root = ET.fromstring(drawn)  # well-formed SVG
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "Base" in texts and "RSR-1" in texts and "0.200" in texts and "seed 2" in texts
    circles = list(root.iter("{http://www.w3.org/2000/svg}circle"))
    assert len(circles) == 2 + 3 + 3  # two means, three seeds at RSR-1, three legend dots
