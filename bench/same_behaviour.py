"""Does a change keep behaviour? Run a small pipeline (Base -> RSR-1 -> RPR-1) twice, at an anchor
commit and at the working tree, with the same seeds, and compare what each stored: every keyed
job's episode (its token ids, reward and success), every metric point, each stage's pass@1.

    python bench/same_behaviour.py --anchor 160445d        # prints a table, writes JSON

The anchor runs from a `git worktree` of that commit with this checkout's virtual environment.
One episode at a time (concurrency 1), each GGUF episode in a llama.cpp context of its own
(`llama_backend = "instances"`): the batched backend's tokens can depend on when a request
arrives (which cached cells it copies changes the last float bits), and so on the machine's load.
Two things are left out of the comparison because no two runs share them, before or after a
change: wall-clock metrics (`time/*`), and which runbook a replay key names (a runbook's id is
random, and a replay's sampling seed derives from it, so replays are only counted).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CONFIG = """
tasks = "curriculum:1,1"
[sandbox]
backend = "local"
[eval]
concurrency = 1
[policy]
max_reply_tokens = 64
llama_backend = "instances"
[rsr]
approval = "auto"
harnesses = ["fenced-bash-primed"]
attempts = 3
min_attempts = 2
target_successes = 1
examples = 2
temperature = 0.8
max_turns = 1
runbooks_per_task = 1
replays = 1
planner_retries = 0
[rsr.sft]
load_4bit = false
epochs = 1
min_steps = 2
batch_samples = 4
max_len = 1024
[rpr]
harness = "fenced-bash-primed"
max_turns = 1
critic_warmup_rounds = 1
rounds = 1
tasks_per_round = 2
episodes_per_task = 2
temperature = 0.8
ppo_epochs = 1
minibatch_episodes = 4
probe_tasks = 2
probe_episodes = 1
probe_every = 1
max_len = 1024
load_4bit = false
[pipeline]
model = "bundled:smollm2-135m"
eval_split = "eval"
eval_seeds = 1
eval_tasks = 6
eval_harness = "fenced-bash-primed"
eval_temperature = 0.7
eval_max_turns = 1
seed = 0
"""


def run_pipeline(tree: Path, home: Path, stop_after: str) -> float:
    home.mkdir(parents=True, exist_ok=True)
    config = home / "same-behaviour.toml"
    config.write_text(CONFIG)
    env = {**os.environ, "TRSI_HOME": str(home), "PYTHONPATH": str(tree)}
    env.pop("TRSI_CACHE_HOME", None)
    started = time.monotonic()
    # The editable install's finder would import this checkout's code: put the tree first by hand.
    boot = f"import sys; sys.path.insert(0, {str(tree)!r}); sys.argv[0] = 'trsi-tui'; "
    boot += "from trsi_tui.cli import main; main()"
    cmd = [sys.executable, "-c", boot, "pipeline", "run", "--config", str(config), "--headless"]
    cmd += ["-j", "1", "--stop-after", stop_after]
    subprocess.run(cmd, cwd=tree, env=env, check=True)
    return time.monotonic() - started


def fingerprint(database: Path) -> dict[str, object]:
    db = sqlite3.connect(database)
    db.row_factory = sqlite3.Row
    tokens = {r["episode_id"]: r["ids"] for r in db.execute("SELECT episode_id, ids FROM episode_tokens")}
    jobs, replays = {}, []
    for r in db.execute(
        "SELECT j.scope, j.key, j.success, e.reward, e.id FROM jobs j JOIN episodes e ON e.id = j.episode_id"
    ):
        ids = tokens.get(r["id"], "")
        if r["scope"].endswith("/replay"):
            replays.append((r["reward"], bool(r["success"])))
            continue
        jobs[f"{r['scope']}::{r['key']}"] = {
            "tokens": hashlib.sha256(ids.encode()).hexdigest()[:16],
            "reward": r["reward"],
            "success": bool(r["success"]),
        }
    metrics = {
        f"{r['run_id']}::{r['name']}::{r['step']}": round(r["value"], 6)
        for r in db.execute("SELECT run_id, name, step, value FROM metrics")
        if not r["name"].startswith("time/")
    }
    stages = {r["name"]: r["pass_at_1"] for r in db.execute("SELECT name, pass_at_1 FROM stages")}
    samples = sorted(r["digest"] for r in db.execute("SELECT digest FROM sft_samples"))
    return {"jobs": jobs, "replays": sorted(replays), "metrics": metrics, "stages": stages, "samples": samples}


def compare(a: dict, b: dict) -> list[tuple[str, int, int, int]]:
    rows = []
    for part in ("jobs", "metrics", "stages"):
        keys = set(a[part]) | set(b[part])
        same = sum(1 for k in keys if a[part].get(k) == b[part].get(k))
        rows.append((part, len(a[part]), len(b[part]), same))
    same = int(len(a["replays"]) == len(b["replays"]))
    rows.append(("replays (as many)", len(a["replays"]), len(b["replays"]), same))
    same = int(a["samples"] == b["samples"])
    rows.append(("sft samples (all equal)", len(a["samples"]), len(b["samples"]), same))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--anchor", required=True, help="commit to compare the working tree with")
    parser.add_argument("--stop-after", default="RPR-1")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "same_behaviour.json"))
    parser.add_argument("--keep", help="keep the data directories here; a side already run here is reused")
    parser.add_argument("--only", choices=("anchor", "head"), help="run one side only (into --keep) and stop")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="same-behaviour-"))
    anchor_tree = work / "anchor-tree"
    if not anchor_tree.exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(anchor_tree), args.anchor], cwd=ROOT, check=True)
    prints, times = {}, {}
    try:
        for name, tree in (("anchor", anchor_tree), ("head", ROOT)):
            home = work / name
            done = home / "finished"
            if args.only and args.only != name:
                continue
            if done.exists():
                times[name] = float(done.read_text())
            else:
                times[name] = run_pipeline(tree, home, args.stop_after)
                done.write_text(str(times[name]))
            prints[name] = fingerprint(home / "trsi.db")
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(anchor_tree)], cwd=ROOT, check=False)
    if args.only:
        print(f"{args.only}: {times[args.only]:.0f} s, {len(prints[args.only]['jobs'])} keyed episodes in {work}")
        return 0
    rows = compare(prints["anchor"], prints["head"])
    print(f"{'what':<26}{'anchor':>8}{'head':>8}{'equal':>8}")
    for part, n_a, n_b, same in rows:
        print(f"{part:<26}{n_a:>8}{n_b:>8}{same:>8}")
    print(f"wall: anchor {times['anchor']:.0f} s, head {times['head']:.0f} s")
    identical = all(n_a == n_b == same for part, n_a, n_b, same in rows[:3]) and rows[3][3] == rows[4][3] == 1
    print("IDENTICAL" if identical else "DIFFERENT")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps({"anchor": args.anchor, "identical": identical, "rows": rows, "seconds": times, **prints}, indent=1)
    )
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())
