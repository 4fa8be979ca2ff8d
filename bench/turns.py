"""Does a second and third turn break a right first command? Each pipeline stage's model on the
one-step eval tasks at 1 turn, paired with its stored evaluation at the preset's turns.

    python bench/turns.py --home DATA_DIR [--preset demo | --config FILE] [--seeds 0] [--json OUT]

For every stage the pipeline finished in DATA_DIR (each training seed's lineage), the stage's
checkpoint is evaluated again on the one-step tier's eval tasks with `eval_max_turns = 1`, same
harness, temperature and sampling seeds as the stage's own evaluation (so the first reply is
sampled with the same seed), and each task's 1-turn outcome is paired with its outcome in the
stored evaluation. A model that turns a right first command into a wrong one on a later turn, or
never stops, scores lower at several turns; one that stops after a right command scores the same.
The 1-turn episodes are stored in DATA_DIR under their own scope ("stage/<stage> one-turn"),
so a run killed half-way resumes. Prints a table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from engine.api import Engine
from engine.config import load_config, load_preset
from engine.events import EventBus
from engine.pipeline.evaluation import StageEvaluation
from engine.pipeline.families import tier_of
from engine.pipeline.lineage import Lineage, stored_seeds
from engine.pipeline.summary import task_outcomes
from engine.resumable import WorkContext
from engine.stats import bootstrap_over_seeds
from engine.store.records import PIPELINE_STAGES


class OneStepEvaluation(StageEvaluation):
    def tasks(self):
        return [t for t in super().tasks() if tier_of(t.name) == "one-step"]


def paired(three: dict[str, dict[str, bool]], one: dict[str, dict[str, bool]]) -> dict[str, float]:
    """task -> pass rate at several turns minus at 1 turn, over the sampling seeds both have."""
    gains = {}
    for task in set(three) & set(one):
        shared = sorted(set(three[task]) & set(one[task]))
        if shared:
            gains[task] = sum(three[task][s] - one[task][s] for s in shared) / len(shared)
    return gains


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", required=True, help="the pipeline's data directory (trsi-tui --home)")
    ap.add_argument("--preset", default="demo")
    ap.add_argument("--config", default=None, help="a config file instead of the preset")
    ap.add_argument("--seeds", default=None, help="training seeds (default: every stored one)")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--json", default="bench/results/turns.json")
    args = ap.parse_args()

    config = load_config(Path(args.config)) if args.config else load_preset(args.preset)
    engine = Engine.open(args.home)
    engine.config = config
    store = engine.store
    stored = store.stages.all()
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds else stored_seeds(stored) or [0]
    one_turn = config.model_copy(update={"pipeline": config.pipeline.model_copy(update={"eval_max_turns": 1})})
    turns = config.pipeline.eval_max_turns
    rows = []
    for seed in seeds:
        for name in PIPELINE_STAGES:
            key = Lineage(seed).stage_key(name)
            record = stored.get(key)
            if record is None or record.status != "done" or (name == "Base" and seed != seeds[0]):
                continue
            ctx = WorkContext(
                config=one_turn,
                store=store,
                bus=EventBus(),
                backend=config.sandbox.backend,
                checkpoints_dir=engine.paths.checkpoints_dir,
                tasks=engine.suite_path(config.tasks),
                concurrency=args.concurrency,
                seed=seed,
            )
            started = time.monotonic()
            OneStepEvaluation(ctx, stage=f"{key} one-turn", checkpoint=record.checkpoint).run()
            one = task_outcomes(store, f"{key} one-turn")
            three = {t: v for t, v in task_outcomes(store, key).items() if tier_of(t) == "one-step"}
            gain = bootstrap_over_seeds([paired(three, one)])
            rate = lambda o: sum(sum(v.values()) / len(v) for v in o.values()) / len(o)  # noqa: E731
            rows.append(
                {
                    "stage": key,
                    "tasks": len(one),
                    "pass@1 at 1 turn": rate(one),
                    f"pass@1 at {turns} turns": rate(three),
                    "difference": gain.estimate,
                    "ci95": [gain.low, gain.high],
                    "seconds": round(time.monotonic() - started, 1),
                }
            )
            r = rows[-1]
            print(
                f"{key:<16} {r['tasks']:>4} tasks  1 turn {r['pass@1 at 1 turn']:.3f}  {turns} turns "
                f"{r[f'pass@1 at {turns} turns']:.3f}  difference {gain.estimate:+.3f} "
                f"[{gain.low:+.3f}, {gain.high:+.3f}]  ({r['seconds']} s)",
                flush=True,
            )
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps({"turns": turns, "rows": rows}, indent=2) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
