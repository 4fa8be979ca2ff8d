"""Local sandbox speed, measured side by side with a raw bubblewrap baseline.

    python bench/sandbox.py [--starts 40] [--round-trips 500] [--concurrency 1 2 4] [--out FILE]

Prints a table and writes JSON (default bench/results/sandbox.json):
- start-to-ready: create + start a sandbox until its session shell answers (p50/p95);
- raw bwrap: `bwrap --unshare-all ... true` as a subprocess, the floor for any bwrap backend;
- round trip: `true` in a live session shell (p50/p95);
- oracle wall time for the whole built-in suite at each concurrency.
Targets (issue 2): start-to-ready p50 < 50 ms, round trip p50 < 5 ms.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from report import write_results
from timing import ms

from engine.config import Config
from engine.config.paths import builtin_tasks_dir
from engine.rollout.agents import OracleAgent
from engine.rollout.runner import EpisodeJob, EpisodeRunner
from engine.tasks import load_suite
from sandboxes import Limits, SandboxSpec, create_sandbox
from sandboxes.local import _userland_binds, bwrap_path


def bench_start(n: int) -> list[float]:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        sb = create_sandbox("local", SandboxSpec("bench", Limits()))
        sb.start()
        sb.run("true", 5)
        times.append(time.perf_counter() - t)
        sb.stop()
    return times


def bench_raw_bwrap(n: int) -> list[float]:
    argv = [
        bwrap_path(),
        "--unshare-all",
        "--die-with-parent",
        *_userland_binds(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        "--",
        "/bin/true",
    ]
    times = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(argv, check=True)
        times.append(time.perf_counter() - t)
    return times


def bench_round_trip(n: int) -> list[float]:
    sb = create_sandbox("local", SandboxSpec("bench"))
    sb.start()
    try:
        for _ in range(20):
            sb.run("true", 5)
        times = []
        for _ in range(n):
            t = time.perf_counter()
            sb.run("true", 5)
            times.append(time.perf_counter() - t)
        return times
    finally:
        sb.stop()


def bench_suite(concurrency: int) -> dict[str, float]:
    tasks = load_suite(builtin_tasks_dir()).tasks
    runner = EpisodeRunner(config=Config(), backend="local", store=None, bus=None)
    t = time.perf_counter()
    _, results = runner.run(
        [EpisodeJob(task, OracleAgent) for task in tasks],
        kind="bench",
        agent_label="oracle",
        tasks_path="builtin",
        concurrency=concurrency,
    )
    wall = time.perf_counter() - t
    return {
        "concurrency": concurrency,
        "tasks": len(tasks),
        "wall_s": round(wall, 2),
        "successes": sum(r.success for r in results),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--starts", type=int, default=40)
    ap.add_argument("--round-trips", type=int, default=500)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "sandbox.json")
    args = ap.parse_args()

    start = ms(bench_start(args.starts))
    raw = ms(bench_raw_bwrap(args.starts))
    rt = ms(bench_round_trip(args.round_trips))
    suite = [bench_suite(c) for c in args.concurrency]

    print(f"{'measure':<34}{'p50 ms':>10}{'p95 ms':>10}{'n':>6}")
    for name, row in (
        ("sandbox start-to-ready", start),
        ("raw bwrap ... true (baseline)", raw),
        ("shell round trip `true`", rt),
    ):
        print(f"{name:<34}{row['p50_ms']:>10.2f}{row['p95_ms']:>10.2f}{row['n']:>6}")
    print(f"\n{'oracle, whole suite':<34}{'wall s':>10}{'ok':>10}")
    for row in suite:
        print(
            f"{'concurrency ' + str(row['concurrency']):<34}{row['wall_s']:>10.2f}"
            f"{str(row['successes']) + '/' + str(row['tasks']):>10}"
        )
    targets = {"start_p50_under_50ms": start["p50_ms"] < 50, "round_trip_p50_under_5ms": rt["p50_ms"] < 5}
    print("\ntargets:", ", ".join(f"{k}={'met' if v else 'MISSED'}" for k, v in targets.items()))

    payload = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "kernel": platform.release()},
        "start_to_ready": start,
        "raw_bwrap_true": raw,
        "round_trip_true": rt,
        "oracle_suite": suite,
        "targets": targets,
    }
    write_results(args.out, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
