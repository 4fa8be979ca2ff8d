"""Episodes on a Ray cluster against threads of one process, side by side in one run.

    python bench/cluster.py [--model-tasks 8] [--turns 3] [--skip-model] [--out FILE]

Three ways to run the same episodes, each in its own process (Ray is joined once per process):

- threads:   today's default, `[cluster] engine = "local"`, 2 episodes at once;
- ray-1node: a local Ray cluster of one node with 2 sandbox slots;
- ray-2node: a local Ray cluster of two nodes (two raylets, two rollout workers, as two machines
             would have) with 1 sandbox slot each, so every row keeps 2 episodes in flight.

Workloads: the oracle on the built-in suite (what dispatch costs when episodes are short), and
the bundled model on eval tasks (fenced-bash-plain, 3 turns). For Ray, dispatch overhead per
episode is the head's wall time around each episode minus the time the episode itself took on
its worker (sandbox, agent, verifier): shipping the task, scheduling, streaming events and the
result back. All nodes share this machine's 2 cores, so a second local node adds no compute:
the rows measure overhead, not scaling.

Prints a table and writes bench/results/cluster.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

MODEL = "bundled:smollm2-135m"
MODES = ("threads", "ray-1node", "ray-2node")


def one(mode: str, workload: str, model_tasks: int, turns: int) -> dict:
    """Run one (mode, workload) in this process and return its measurements."""
    home = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    os.environ["TRSI_HOME"] = str(home)
    from engine.api import Engine
    from engine.config import ClusterConfig, Config
    from engine.store import Store

    cluster = None
    config = Config()
    if mode != "threads":
        from ray.cluster_utils import Cluster

        nodes, slots = (1, 2) if mode == "ray-1node" else (2, 1)
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2 if nodes == 1 else 1})
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        config = config.model_copy(
            update={"cluster": ClusterConfig(engine="ray", address=cluster.address, sandboxes_per_node=slots)}
        )
    engine = Engine(config, Store(home / "trsi.db"))
    overheads: list[float] = []
    started = time.monotonic()
    if cluster is not None:
        executor = engine.executor()  # workers up before the clock of the run starts
        plain_run = executor.run

        def timed_run(job, **kw):
            t = time.monotonic()
            result = plain_run(job, **kw)
            overheads.append(time.monotonic() - t - result.duration_s)
            return result

        executor.run = timed_run
    setup_s = time.monotonic() - started
    options: dict = dict(agent="oracle", concurrency=2)
    if workload == "model":
        suite = engine.load_suite(None)
        chosen = tuple(sorted(t.name for t in suite.split("eval"))[:model_tasks])
        options = dict(
            agent="model", model=MODEL, split="eval", only=chosen, max_turns=turns, temperature=0.8, concurrency=2
        )
    t = time.monotonic()
    report, _ = engine.evaluate(None, **options)
    wall = time.monotonic() - t
    out = {
        "mode": mode,
        "workload": workload,
        "episodes": len(report.results),
        "successes": report.summary["successes"],
        "infra_errors": report.summary["infra_errors"],
        "wall_s": round(wall, 2),
        "setup_s": round(setup_s, 2),
        "episodes_per_min": round(60 * len(report.results) / wall, 1),
    }
    if workload == "model":
        out["tokens"] = {
            e.task: engine.store.runs.episode_tokens(e.id) for e in engine.store.runs.episodes(report.run_id)
        }
    if overheads:
        ms = sorted(1000 * o for o in overheads)
        out["dispatch_ms_median"] = round(statistics.median(ms), 1)
        out["dispatch_ms_p95"] = round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 1)
    if cluster is not None:
        import ray

        ray.shutdown()
        cluster.shutdown()
    return out


def first_differences(base: dict, other: dict) -> dict[str, dict]:
    """Per task whose token ids differ from the threads run's: where they first differ, and
    whether that token was sampled (mask 1) or is part of an observation (command output)."""
    found = {}
    for task, (ids, mask) in base.items():
        got = other.get(task)
        if got is None or got[0] == ids:
            continue
        at = next((i for i, (a, b) in enumerate(zip(ids, got[0])) if a != b), min(len(ids), len(got[0])))
        found[task] = {"index": at, "sampled": bool(mask[at]) if at < len(mask) else None}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model-tasks", type=int, default=8, help="eval tasks for the model workload")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--skip-model", action="store_true", help="only the oracle workload")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "cluster.json"))
    parser.add_argument("--one", nargs=2, metavar=("MODE", "WORKLOAD"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print("RESULT " + json.dumps(one(args.one[0], args.one[1], args.model_tasks, args.turns)))
        return
    rows = []
    for workload in ("oracle",) + (() if args.skip_model else ("model",)):
        for mode in MODES:
            cmd = [sys.executable, __file__, "--one", mode, workload, "--model-tasks", str(args.model_tasks)]
            cmd += ["--turns", str(args.turns)]
            done = subprocess.run(cmd, capture_output=True, text=True)
            line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                sys.exit(f"{mode}/{workload} failed:\n{done.stderr[-3000:]}")
            rows.append(json.loads(line[len("RESULT ") :]))
            r = rows[-1]
            print(f"{workload:7} {mode:10} {r['episodes_per_min']:7.1f} ep/min", file=sys.stderr)
    model_rows = [r for r in rows if r["workload"] == "model"]
    same, compared = None, 0
    if model_rows:
        base = model_rows[0]["tokens"]
        compared = len(base)
        same = {r["mode"]: sum(r["tokens"].get(k) == v for k, v in base.items()) for r in model_rows}
        for r in model_rows:
            r["first_difference"] = first_differences(base, r.pop("tokens"))
    print(
        f"{'workload':8} {'mode':10} {'episodes':>8} {'ep/min':>7} {'wall s':>7} {'setup s':>7} "
        f"{'dispatch ms (median/p95)':>25}"
    )
    for r in rows:
        dispatch = f"{r['dispatch_ms_median']}/{r['dispatch_ms_p95']}" if "dispatch_ms_median" in r else "-"
        print(
            f"{r['workload']:8} {r['mode']:10} {r['episodes']:>8} {r['episodes_per_min']:>7} {r['wall_s']:>7} "
            f"{r['setup_s']:>7} {dispatch:>25}"
        )
    if same is not None:
        print(f"model episodes with the threads run's token ids: {same} of {compared}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(
        json.dumps({"rows": rows, "same_tokens_as_threads": same, "compared": compared}, indent=2) + "\n"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
