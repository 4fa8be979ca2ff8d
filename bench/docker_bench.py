"""Docker sandbox speed, measured side by side with raw `docker exec`.

    python bench/docker_bench.py [--starts 15] [--round-trips 300] [--concurrency 2] [--out FILE]
                                 [--anchor GIT-REF [--anchor-rounds 2]]

Prints a table and writes JSON (default bench/results/docker.json):
- start-to-ready, cold: create a container and its session shell until `true` answers (p50/p95);
- start-to-ready, warm pool: the same when a started container is waiting in the pool;
- round trip: `true` in a live session shell, and raw `docker exec <ctr> true` in the same run;
- per-episode overhead of the oracle on the built-in suite: episode wall time minus the time
  inside solve.sh and inside the verifier's exec of test.sh.
Targets (issue 3): warm-pool start-to-ready under 100 ms; round trip within 5 ms of raw docker exec.
With --anchor, the oracle suite (warm pool 0) also runs from a worktree of that commit, in
alternating rounds with this tree, and the table compares the two (issue 28: the oracle trial
time with every agent process ended and the layer checked, against the release before).
Needs a running Docker engine and the base image (`trsi-tui sandbox build-base`).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from report import write_results
from timing import ms, pct

from engine.config import parse_config
from engine.config.paths import builtin_tasks_dir
from engine.rollout.agents import OracleAgent
from engine.rollout.runner import EpisodeJob, EpisodeRunner
from engine.tasks import load_suite
from sandboxes import SandboxSpec, create_sandbox
from sandboxes.docker_sandbox import POOL


def start_to_ready(n: int, warm: int) -> list[float]:
    times = []
    for _ in range(n):
        spec = SandboxSpec("bench", warm_pool=warm)
        if warm:
            deadline = time.monotonic() + 60
            while POOL.size() < warm and time.monotonic() < deadline:
                time.sleep(0.05)  # measure the warm path: wait until a container is waiting
        t = time.perf_counter()
        sb = create_sandbox("docker", spec)
        sb.start()
        sb.run("true", 10)
        times.append(time.perf_counter() - t)
        sb.stop()
    return times


def round_trips(n: int) -> tuple[list[float], list[float]]:
    sb = create_sandbox("docker", SandboxSpec("bench"))
    sb.start()
    try:
        for _ in range(10):
            sb.run("true", 5)
        shell = []
        for _ in range(n):
            t = time.perf_counter()
            sb.run("true", 5)
            shell.append(time.perf_counter() - t)
        raw = []
        cid = sb._container.id  # noqa: SLF001
        for _ in range(max(10, n // 10)):
            t = time.perf_counter()
            subprocess.run(["docker", "exec", cid, "true"], check=True)
            raw.append(time.perf_counter() - t)
        return shell, raw
    finally:
        sb.stop()


def suite_overhead(concurrency: int, warm: int) -> dict[str, float]:
    config = parse_config(f'[sandbox]\nbackend = "docker"\n[sandbox.docker]\nwarm_pool = {warm}\n')
    tasks = load_suite(builtin_tasks_dir()).tasks
    runner = EpisodeRunner(config=config, backend="docker", store=None, bus=None)
    t = time.perf_counter()
    _, results = runner.run(
        [EpisodeJob(task, OracleAgent) for task in tasks],
        kind="bench",
        agent_label="oracle",
        tasks_path="builtin",
        concurrency=concurrency,
    )
    wall = time.perf_counter() - t
    overheads = [
        r.duration_s - sum(s.duration_s for s in r.steps) - r.phase_s.get("verifier_exec", 0.0) for r in results
    ]
    return {
        "concurrency": concurrency,
        "warm_pool": warm,
        "tasks": len(tasks),
        "wall_s": round(wall, 2),
        "successes": sum(r.success for r in results),
        "episode_s_mean": round(statistics.mean(r.duration_s for r in results), 3),
        "overhead_s_p50": round(pct(overheads, 0.5), 3),
        "overhead_s_mean": round(statistics.mean(overheads), 3),
    }


def anchored_suites(ref: str, concurrency: int, rounds: int) -> list[dict]:
    """The oracle suite from a worktree of `ref` and from this tree, alternating, in one run."""
    import json
    import tempfile

    root = Path(__file__).resolve().parent.parent
    tree = Path(tempfile.mkdtemp(prefix="trsi-anchor-")) / "tree"
    subprocess.run(["git", "-C", str(root), "worktree", "add", "-q", "--detach", str(tree), ref], check=True)
    code = (
        "import json, sys; sys.path[:0] = [sys.argv[1], sys.argv[1] + '/bench']\n"
        "from docker_bench import suite_overhead\n"
        "print('RESULT ' + json.dumps(suite_overhead(int(sys.argv[2]), 0)))\n"
    )
    rows = []
    try:
        for i in range(rounds):
            for label, where in ((f"anchor {ref}", tree), ("this tree", root)):
                out = subprocess.run(
                    [sys.executable, "-c", code, str(where), str(concurrency)],
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=str(where),
                ).stdout
                row = json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[7:])
                rows.append({"tree": label, "round": i, **row})
    finally:
        subprocess.run(["git", "-C", str(root), "worktree", "remove", "--force", str(tree)], check=False)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--starts", type=int, default=15)
    ap.add_argument("--round-trips", type=int, default=300)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "docker.json")
    ap.add_argument("--anchor", metavar="GIT-REF", help="also run the oracle suite from this commit, side by side")
    ap.add_argument("--anchor-rounds", type=int, default=2)
    ap.add_argument("--anchor-only", action="store_true", help="only the side-by-side oracle suite")
    args = ap.parse_args()
    anchored = anchored_suites(args.anchor, args.concurrency, args.anchor_rounds) if args.anchor else []
    if anchored:
        print(f"{'oracle suite, warm pool 0':<32}{'round':>6}{'wall s':>9}{'ok':>8}{'episode s':>11}")
        for row in anchored:
            print(
                f"{row['tree']:<32}{row['round']:>6}{row['wall_s']:>9.2f}"
                f"{str(row['successes']) + '/' + str(row['tasks']):>8}{row['episode_s_mean']:>11.3f}"
            )
        mean = {
            t: statistics.mean(r["wall_s"] for r in anchored if r["tree"] == t) for t in {r["tree"] for r in anchored}
        }
        anchor_wall = next(v for t, v in mean.items() if t.startswith("anchor"))
        ratio = mean["this tree"] / anchor_wall
        print(f"this tree / anchor, mean wall: {ratio:.3f} (target: within 15%, <= 1.15)\n")
        if args.anchor_only:
            write_results(args.out, {"oracle_suite_side_by_side": anchored, "wall_ratio": round(ratio, 3)})
            return 0

    cold = ms(start_to_ready(args.starts, warm=0))
    warm = ms(start_to_ready(args.starts, warm=1))
    POOL.drain()
    shell, raw = round_trips(args.round_trips)
    shell_ms, raw_ms = ms(shell), ms(raw)
    suites = [suite_overhead(args.concurrency, 0), suite_overhead(args.concurrency, 2)]
    POOL.drain()

    print(f"{'measure':<40}{'p50 ms':>10}{'p95 ms':>10}{'n':>6}")
    for name, row in (
        ("start-to-ready, cold", cold),
        ("start-to-ready, warm pool", warm),
        ("session round trip `true`", shell_ms),
        ("raw `docker exec <ctr> true`", raw_ms),
    ):
        print(f"{name:<40}{row['p50_ms']:>10.2f}{row['p95_ms']:>10.2f}{row['n']:>6}")
    print(f"\n{'oracle, whole suite':<28}{'wall s':>8}{'ok':>8}{'episode s':>11}{'overhead s p50':>16}")
    for row in suites:
        label = f"-j {row['concurrency']}, warm pool {row['warm_pool']}"
        print(
            f"{label:<28}{row['wall_s']:>8.2f}{str(row['successes']) + '/' + str(row['tasks']):>8}"
            f"{row['episode_s_mean']:>11.3f}{row['overhead_s_p50']:>16.3f}"
        )
    targets = {
        "warm_start_p50_under_100ms": warm["p50_ms"] < 100,
        "round_trip_within_5ms_of_raw_exec": shell_ms["p50_ms"] <= raw_ms["p50_ms"] + 5,
    }
    print("\ntargets:", ", ".join(f"{k}={'met' if v else 'MISSED'}" for k, v in targets.items()))
    payload = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release()},
        "start_to_ready_cold": cold,
        "start_to_ready_warm": warm,
        "round_trip_true": shell_ms,
        "raw_docker_exec_true": raw_ms,
        "oracle_suite": suites,
        "oracle_suite_side_by_side": anchored,
        "targets": targets,
    }
    write_results(args.out, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
