"""The table of docs/results.md, "The same tasks in other folders": each model's pass@1 on the 128
eval tasks in /app (docs/runs/v6-seeds012) and moved elsewhere (episodes.csv here, from run.sh).
Run from the repository's root: python docs/runs/elsewhere/table.py"""

import csv
from pathlib import Path

from engine.stats import bootstrap_over_seeds, compare

RUNS = Path(__file__).resolve().parent.parent
APP_NAMES = {"Base": "Base", "RSR-1 seed 0": "RSR-1", "RPR-2 seed 0": "RPR-2"}
app: dict[str, dict[str, float]] = {}
for row in csv.DictReader(open(RUNS / "v6-seeds012" / "eval_episodes.csv")):
    app.setdefault(row["stage"], {})[row["task"]] = float(row["success"])
away: dict[str, dict[str, float]] = {}
for row in csv.DictReader(open(RUNS / "elsewhere" / "episodes.csv")):
    away.setdefault(row["model"], {})[row["task"]] = float(row["success"])
at_app = {m: app[APP_NAMES.get(m, m)] for m in away}
for model, b in away.items():
    a = at_app[model]
    c = compare({t: [bool(v)] for t, v in a.items()}, {t: [bool(v)] for t, v in b.items()})
    print(f"| {model} | {sum(a.values()) / len(a):.3f} | {sum(b.values()) / len(b):.3f} | "
          f"{c.estimate:+.3f} [{c.low:+.3f}, {c.high:+.3f}] |")
for stage in ("RSR-1", "RPR-2"):
    seeds = [f"{stage} seed {k}" for k in range(3)]
    for where, table in (("/app", at_app), ("elsewhere", away)):
        per_seed = [{t: table[s][t] - table["Base"][t] for t in table["Base"]} for s in seeds]
        i = bootstrap_over_seeds(per_seed)
        print(f"{stage} - Base, {where}: {i.estimate:+.3f} [{i.low:+.3f}, {i.high:+.3f}]")
