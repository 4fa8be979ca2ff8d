"""How long a stop takes during training: `trsi-tui jobs stop` on a detached runner job, side by
side during an SFT step, a critic warm-up update and a joint PPO update, on a loaded CPU.

    python bench/stop_latency.py [--after 3] [--no-hog] [--no-resume] [--out FILE]

Each phase runs as a runner job in a process of its own on a fresh data directory (the job's
process registers itself, journals its events and turns SIGTERM into the engine's cancel, as a
`--detach`ed command does). Once the job is inside the update (its progress says so: the SFT
step 1 loss is logged, or "PPO on N episode(s)"; for `rollout`, "rollouts with"), the bench
waits `--after` seconds and runs `trsi-tui --home DIR jobs stop ID`, the command a user types;
measured are that command's wall time (it returns once the job's process has ended) and the
time until the process was gone; then the same command once more on the ended job: what
starting `trsi-tui` alone takes on the loaded machine (part of the first number).
Then (unless --no-resume) the same job runs again and must finish the phase without repeating
what the stopped one stored (SFT: its first step; RPR: its rollouts).

The phases, the smallest that reach a long update (as tests/test_stop_latency.py):
- sft: the RSR round's SFT phase (QLoRA off, rank 4) on two samples, 48 and 1536 tokens, one
  per step; the stop lands in the second, long step;
- warmup: RPR stage 1 with one critic warm-up round; ppo: one joint round (no warm-up). Each
  rolls out 2 episodes of one task in local sandboxes, replies scripted (right or wrong by seed,
  with a long comment: about 1.2k tokens an episode) on the bundled model's tokenizer, then
  trains the bundled model (fp32, LoRA rank 4).
- rollout (only when asked, `--phases rollout`): the warm-up round's rollouts themselves, 2
  episodes of up to 3 turns sampled from the bundled model by llama.cpp; the stop lands while
  they run. A job still stopping after --stop-timeout is killed (SIGKILL) and recorded so.

Load: a busy-loop process runs all along (--no-hog leaves it out); the whole bench is meant to
run under `nice -n 19`, beside whatever else the machine runs. Writes bench/results/stop_latency.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PHASES = ("sft", "warmup", "ppo", "rollout")
DEFAULT_PHASES = ("sft", "warmup", "ppo")
TARGET_S = 10.0
MODEL = "bundled:smollm2-135m"
RPR = {
    "harness": "xml-bash",
    "rounds": 1,
    "critic_warmup_rounds": 0,
    "tasks_per_round": 1,
    "episodes_per_task": 2,
    "probe_tasks": 0,
    "split": "",
    "max_turns": 1,
    "ppo_epochs": 1,
    "load_4bit": False,
    "rank": 4,
    "alpha": 8,
}


# -- the job's process ------------------------------------------------------------------------
def child(phase: str, home: Path) -> None:
    """Run `phase` as the runner job named in the environment, on the data directory `home`."""
    from dataclasses import replace

    from engine.api import Engine
    from engine.jobs.runner import JOB_ENV
    from engine.policy import load_policy
    from tests import test_stop_latency as helpers

    engine = Engine.open(str(home))
    real = load_policy(MODEL, n_ctx=4096)
    contexts = engine.stage_context

    def scripted(**kwargs):
        return replace(contexts(**kwargs), policy_loader=lambda spec: helpers.long_script(real))

    if phase != "rollout":  # the rollout phase samples from the real model (llama.cpp)
        engine.stage_context = scripted
    with engine.as_runner_job(os.environ[JOB_ENV], "bench", [phase]):
        if phase == "sft":
            from engine.rsr import train

            ctx = engine.stage_context(tasks=home / "suite", backend="local", concurrency=1)
            work = helpers.round_work(home, engine.store, ctx.should_stop, engine.bus)
            train.train(work, helpers.sft_samples(work))
        else:
            settings = RPR | ({"critic_warmup_rounds": 1, "rounds": 0} if phase in ("warmup", "rollout") else {})
            if phase == "rollout":
                settings |= {"max_turns": 3}
            engine.rpr_stage(1, model=MODEL, tasks=home / "suite", backend="local", concurrency=1, **settings)


# -- the bench --------------------------------------------------------------------------------
def in_update(phase: str, store) -> bool:
    if phase == "sft":
        return bool(store.metrics.points("rsr-1-sft", "sft/loss"))
    record = store.rpr.run(1)
    return record is not None and ("rollouts with" if phase == "rollout" else "PPO on") in record.detail


def pid_gone(pid: int) -> bool:
    from engine.store.schema import pid_alive

    return not pid_alive(pid)


def start(engine, phase: str, home: Path):
    return engine.start_runner_job(
        "bench", [sys.executable, str(Path(__file__).resolve()), "child"], [phase, str(home)]
    )


def wait_job(engine, job_id: str, timeout: float) -> object:
    ended = engine.wait_runner_job(job_id, timeout)
    if ended is None:
        raise SystemExit(f"job {job_id} did not end within {timeout:.0f} s")
    return ended


def measure(phase: str, after: float, resume: bool, stop_timeout: float, keep: bool) -> dict:
    from engine.api import Engine

    home = Path(tempfile.mkdtemp(prefix=f"stop-{phase}-"))
    from tests.conftest import write_task

    write_task(home / "suite", "hello-a")
    engine = Engine.open(str(home))
    job = start(engine, phase, home)
    deadline = time.monotonic() + 900
    while not in_update(phase, engine.store):
        if time.monotonic() > deadline or not engine.runner_job(job.id).running:
            log = engine.runner_job_log(job.id).read_text()[-3000:]
            raise SystemExit(f"{phase}: the job never reached its update\n{log}")
        time.sleep(0.2)
    time.sleep(after)
    gone: dict[str, float] = {}

    def watch() -> None:
        while not pid_gone(job.pid):
            time.sleep(0.05)
        gone["at"] = time.monotonic()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    asked = time.monotonic()
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "trsi_tui.cli",
            "--home",
            str(home),
            "jobs",
            "stop",
            job.id,
            "--timeout",
            str(stop_timeout),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    command_s = time.monotonic() - asked
    if not pid_gone(job.pid):  # still stopping after --stop-timeout: measured as such, then ended
        os.kill(job.pid, signal.SIGKILL)
    watcher.join(timeout=60)
    # The same command once more, on the job now ended: what starting `trsi-tui` itself takes here.
    again = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "trsi_tui.cli", "--home", str(home), "jobs", "stop", job.id],
        capture_output=True,
        cwd=ROOT,
    )
    cli_s = time.monotonic() - again
    stopped = engine.runner_job(job.id)
    row = {
        "phase": phase,
        "stop_after_s": after,
        "jobs_stop_s": round(command_s, 2),
        "process_ended_s": round(gone["at"] - asked, 2) if "at" in gone else None,
        "cli_start_s": round(cli_s, 2),
        "status": stopped.status,
        "detail": stopped.detail,
        "command_output": cli.stdout.strip().splitlines()[-1:] if cli.stdout else cli.stderr.strip()[-300:],
    }
    row["met"] = row["status"] == "stopped" and command_s < TARGET_S
    if resume and row["status"] == "stopped":
        row |= resumed(engine, phase, home)
    if not keep:
        shutil.rmtree(home, ignore_errors=True)
    return row


def resumed(engine, phase: str, home: Path) -> dict:
    """Run the phase again to its end; what it redid of the stopped run's stored work."""
    before = stored_work(engine.store, phase)
    started = time.monotonic()
    job = start(engine, phase, home)
    ended = wait_job(engine, job.id, 1800)
    after = stored_work(engine.store, phase)
    return {
        "resume_status": ended.status,
        "resume_s": round(time.monotonic() - started, 1),
        "stored_before_resume": before,
        "stored_after_resume": after,
    }


def stored_work(store, phase: str) -> dict:
    if phase == "sft":
        steps = [p.step for p in store.metrics.points("rsr-1-sft", "sft/loss")]
        return {"sft_steps_logged": steps, "checkpoint": bool(store.rsr.round(1) and store.rsr.round(1).checkpoint)}
    runs = [r for r in store.runs.list(100) if r.kind == "rpr-rollout"]
    record = store.rpr.run(1)
    return {
        "rollouts": sum(len(store.runs.episodes(r.id)) for r in runs),
        "rounds_done": record.iteration if record else 0,
        "status": record.status if record else "",
    }


def hog() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--after", type=float, default=3.0, help="seconds into the update the stop comes")
    parser.add_argument("--phases", nargs="+", choices=PHASES, default=list(DEFAULT_PHASES))
    parser.add_argument("--stop-timeout", type=float, default=120.0, help="`jobs stop --timeout`; then SIGKILL")
    parser.add_argument("--keep", action="store_true", help="keep each phase's data directory")
    parser.add_argument("--no-hog", action="store_true", help="no busy-loop process beside the job")
    parser.add_argument("--no-resume", action="store_true", help="do not run each phase again to its end")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "stop_latency.json"))
    args = parser.parse_args()
    busy = None if args.no_hog else hog()
    load = "a busy-loop process on the other core" if busy else "no extra load"
    print(f"load: {load}; niceness {os.nice(0)}; load average before {os.getloadavg()[0]:.2f}; cores {os.cpu_count()}")
    rows = []
    try:
        for phase in args.phases:
            rows.append(measure(phase, args.after, not args.no_resume, args.stop_timeout, args.keep))
            print(json.dumps(rows[-1]))
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    header = ("phase", "stop after s", "`jobs stop` s", "process ended s", "CLI alone s", "status", "< 10 s")
    header += ("resumed", "stored work")
    print(" | ".join(header))
    for row in rows:
        redo = (
            f"{row.get('stored_before_resume')} -> {row.get('stored_after_resume')}" if "resume_status" in row else "-"
        )
        cells = (row["phase"], row["stop_after_s"], row["jobs_stop_s"], row["process_ended_s"], row["cli_start_s"])
        cells += (row["status"],)
        print(" | ".join(str(x) for x in (*cells, row["met"], row.get("resume_status", "-"), redo)))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "load": load,
        "niceness": os.nice(0),
        "cores": os.cpu_count(),
        "load_average_after": round(os.getloadavg()[0], 2),
        "target_s": TARGET_S,
        "rows": rows,
    }
    out.write_text(json.dumps(result, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        child(sys.argv[2], Path(sys.argv[3]))
    else:
        main()
