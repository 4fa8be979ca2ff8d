"""Keep a pipeline run's records under docs/runs/: every evaluation episode of every stage as CSV,
and the stage table with its per-family rows as JSON, from the run's data directory.

    .venv/bin/python docs/export_run.py /path/to/home docs/runs/seed2-ppo4

writes `eval_episodes.csv` (stage, task, success, reward, stop_reason, replies: one row per
scored evaluation episode, stages in pipeline order, every lineage of the store) and
`stages.json` (what `trsi-tui pipeline status --families --json` writes). `docs/seed_table.py`
pools such folders over training seeds.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
from pathlib import Path

from engine.config.paths import resolve_paths
from engine.keys import eval_scope
from engine.pipeline.lineage import parse_stage_key
from engine.store import Store
from engine.store.records import PIPELINE_STAGES

COLUMNS = ("stage", "task", "success", "reward", "stop_reason", "replies")


def stage_order(key: str) -> tuple[int, int, str]:
    """Pipeline order first ("RSR-1 seed 2" sorts with RSR-1), then the lineage."""
    stage, seed = parse_stage_key(key) or ("", 0)
    return (PIPELINE_STAGES.index(stage) if stage else len(PIPELINE_STAGES), seed, key)


def eval_rows(store: Store) -> list[dict]:
    """One row per scored evaluation episode of every finished stage; an infrastructure failure
    has no outcome and is left out, as in the stage's pass@1."""
    rows = []
    stages = store.stages.all()
    for name in sorted(stages, key=stage_order):
        if stages[name].status != "done":
            continue
        jobs = store.jobs.finished(eval_scope(name))
        episodes = store.runs.episodes_by_id([job.episode_id for job in jobs.values()])
        for episode in sorted(episodes, key=lambda e: (e.task, e.id)):
            if episode.reward is None:
                continue
            rows.append(
                {
                    "stage": name,
                    "task": episode.task,
                    "success": int(episode.success),
                    "reward": episode.reward,
                    "stop_reason": episode.stop_reason,
                    "replies": len(store.runs.steps(episode.id)),
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("home", type=Path, help="the run's --home directory")
    parser.add_argument("out", type=Path, help="the folder to write into")
    args = parser.parse_args(argv)
    database = resolve_paths(args.home).database
    if not database.is_file():
        raise SystemExit(f"{database}: no store there (is {args.home} a --home directory?)")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = eval_rows(Store(database))
    with (args.out / "eval_episodes.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    cli = Path(sys.executable).with_name("trsi-tui")
    status = [str(cli), "--home", str(args.home), "pipeline", "status", "--families", "--json"]
    subprocess.run([*status, str(args.out / "stages.json")], check=True, stdout=subprocess.DEVNULL)
    print(f"wrote {len(rows)} episodes and the stage table to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
