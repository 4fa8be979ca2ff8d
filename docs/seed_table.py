"""Pool runs of the pipeline that were made in separate data directories, one training seed each,
from the `eval_episodes.csv` files kept under docs/runs/: each stage's pass@1 per seed and its
paired gain over its parent, by tier, with 95% intervals over seeds and tasks.

    .venv/bin/python docs/seed_table.py docs/runs/seed0-ppo4 docs/runs/seed1-ppo4 docs/runs/seed2-ppo4

A run made with `--seeds 0-2` in one store gets the same table from `pipeline status`; this
script is for runs that were not (each seed was started when the cores were free). The interval is
`engine.stats.bootstrap_over_seeds`, the one `pipeline status` uses: every bootstrap sample
draws seeds and, shared by all of them, eval tasks. A gain is paired task by task within a seed.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

from engine.pipeline.families import tier_of
from engine.pipeline.lineage import parse_stage_key
from engine.stats import Interval, bootstrap_over_seeds
from engine.store.records import PIPELINE_STAGES

# Each stage with the one it is compared to; the last row is the whole pipeline's gain.
PAIRS = [(child, parent) for parent, child in zip(PIPELINE_STAGES, PIPELINE_STAGES[1:], strict=False)]
PAIRS.append((PIPELINE_STAGES[-1], PIPELINE_STAGES[0]))
PassRates = dict[str, dict[str, float]]  # stage -> task -> pass rate


def read_run(folder: Path) -> PassRates:
    """stage -> task -> fraction of its eval episodes that succeeded, from a run's eval_episodes.csv."""
    path = folder / "eval_episodes.csv"
    if not path.is_file():
        raise SystemExit(f"{path}: no such file (export a run's evaluation episodes there first)")
    tally: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    named: dict[str, set[str]] = defaultdict(set)
    with path.open(newline="") as fh:
        for row in csv.DictReader(fh):
            # A seed's stages are named "RSR-1 seed 2" in its store; seed 0 and Base keep the plain name.
            stage = (parse_stage_key(row["stage"]) or (row["stage"], 0))[0]
            named[stage].add(row["stage"])
            counts = tally[stage][row["task"]]
            counts[0] += int(row["success"])
            counts[1] += 1
    several = sorted(n for names in named.values() if len(names) > 1 for n in names)
    if several:
        raise SystemExit(f"{path}: holds several training seeds ({', '.join(several)}); `pipeline status` pools those")
    return {stage: {task: wins / n for task, (wins, n) in tasks.items()} for stage, tasks in tally.items()}


def restricted(rates: dict[str, float], tier: str) -> dict[str, float]:
    return {task: value for task, value in rates.items() if tier == "all" or tier_of(task) == tier}


def pooled(runs: list[PassRates], tier: str) -> dict:
    """Per stage: each seed's pass@1 and the pooled mean; per pair: the pooled paired gain."""
    out: dict = {"stages": {}, "gains": {}}
    for stage in PIPELINE_STAGES:
        tables = [restricted(run[stage], tier) for run in runs if stage in run]
        if len(tables) == len(runs) and all(tables):
            out["stages"][stage] = {
                "per_seed": [sum(t.values()) / len(t) for t in tables],
                "mean": triple(bootstrap_over_seeds(tables)),
            }
    for child, parent in PAIRS:
        if not all(child in run and parent in run for run in runs):
            continue
        diffs = []
        for run in runs:
            a, b = restricted(run[parent], tier), restricted(run[child], tier)
            diffs.append({task: b[task] - a[task] for task in set(a) & set(b)})
        if all(diffs):
            out["gains"][f"{child} - {parent}"] = {
                "per_seed": [sum(d.values()) / len(d) for d in diffs],
                "mean": triple(bootstrap_over_seeds(diffs)),
            }
    return out


def triple(interval: Interval) -> list[float]:
    return [interval.estimate, interval.low, interval.high]


def signed(interval: list[float]) -> str:
    estimate, low, high = interval
    return f"{estimate:+.3f} [{low:+.3f}, {high:+.3f}]"


def markdown(names: list[str], table: dict[str, dict], tiers: list[str]) -> str:
    seeds = ", ".join(names)
    lines = [f"pass@1 per seed ({seeds}) and pooled:", ""]
    lines.append("| stage | " + " | ".join(tiers) + " |")
    lines.append("| --- |" + " --- |" * len(tiers))
    for stage in PIPELINE_STAGES:
        cells = []
        for tier in tiers:
            row = table[tier]["stages"].get(stage)
            cells.append(
                "-" if row is None else " / ".join(f"{v:.3f}" for v in row["per_seed"]) + f"; {row['mean'][0]:.3f}"
            )
        lines.append(f"| {stage} | " + " | ".join(cells) + " |")
    lines += ["", "paired gain, mean over seeds [95% over seeds and tasks]:", ""]
    lines.append("| | " + " | ".join(tiers) + " |")
    lines.append("| --- |" + " --- |" * len(tiers))
    for child, parent in PAIRS:
        name = f"{child} - {parent}"
        cells = [signed(table[t]["gains"][name]["mean"]) if name in table[t]["gains"] else "-" for t in tiers]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders, one training seed each")
    parser.add_argument("--json", type=Path, help="also write the table as JSON here")
    args = parser.parse_args(argv)
    runs = [read_run(folder) for folder in args.runs]
    tiers = ["all", "one-step", "multi-step", "held-out"]
    table = {tier: pooled(runs, tier) for tier in tiers}
    print(markdown([folder.name for folder in args.runs], table, tiers))
    if args.json:
        args.json.write_text(json.dumps({"runs": [str(f) for f in args.runs], "tiers": table}, indent=2) + "\n")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
