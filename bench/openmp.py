"""Rollouts after training, on llama.cpp built with OpenMP and without it, side by side in one run.

    # once: an OpenMP build of the same llama-cpp-python (pip's default build; several minutes)
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \\
        .venv/bin/pip wheel llama-cpp-python==$(.venv/bin/python -c 'import importlib.metadata as m; \\
        print(m.version("llama_cpp_python"))') --no-deps --no-cache-dir -w /tmp/omp-wheel
    .venv/bin/pip install --no-deps --target /tmp/omp-build /tmp/omp-wheel/*.whl
    python bench/openmp.py --openmp-build /tmp/omp-build [--episodes 16] [--concurrency 4]

The pipeline trains with torch and then rolls out in the same process. torch runs on OpenMP
(libgomp), and so does an OpenMP build of llama.cpp, in the same libgomp: once the thread teams
of the process hold more threads than there are cores, libgomp stops spinning at barriers and
sleeps on futexes instead, and llama.cpp waits at hundreds of barriers per token.

Each row is `bench/rollout.py`'s batched-backend child (the demo's explore workload: bundled
model, `fenced-bash-primed`, 3 turns, local sandboxes) in a process of its own, on either build,
with or without a small torch training step in the main thread first. The OpenMP build is put
ahead of the venv's with PYTHONPATH. Also: one-sequence decode in a thread, before and after
torch ran, on each build. Prints a table and writes bench/results/openmp.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from report import write_results

ROLLOUT = Path(__file__).resolve().parent / "rollout.py"

DECODE_PROBE = """
import json, os, sys, threading, time
sys.path.insert(0, sys.argv[1])
import llama_cpp as L
from engine.policy import load_policy
from engine.policy.llamacpp_batched import context_params, put_token
sys.path.insert(0, sys.argv[2])
from rollout import torch_training_step

policy = load_policy("bundled:smollm2-135m", n_ctx=1024, instances=1)
params = context_params(n_ctx=1024, slots=1, threads=os.cpu_count() or 1)
ctx = L.llama_init_from_model(policy._llm._model.model, params)
batch = L.llama_batch_init(8, 0, 1)

def decode_rate(out):
    L.llama_memory_clear(L.llama_get_memory(ctx), True)
    t = time.perf_counter()
    for k in range(64):
        put_token(batch, 0, 100 + k, k, 0, True)
        batch.n_tokens = 1
        assert L.llama_decode(ctx, batch) == 0
    out.append(64 / (time.perf_counter() - t))

def in_thread():
    out = []
    th = threading.Thread(target=decode_rate, args=(out,))
    th.start()
    th.join()
    return round(out[0], 1)

before = in_thread()
torch_training_step()
after = in_thread()
print(json.dumps({"openmp": b"OPENMP = 1" in L.llama_print_system_info(), "before": before, "after": after}))
"""


def run(cmd: list[str], build: Path | None) -> dict:
    env = dict(os.environ)
    if build is not None:
        env["PYTHONPATH"] = f"{build}{os.pathsep}{env.get('PYTHONPATH', '')}"
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--openmp-build", type=Path, required=True, help="a --target install of an OpenMP build")
    ap.add_argument("--episodes", type=int, default=16)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "openmp.json")
    args = ap.parse_args()
    sys.path.insert(0, str(ROLLOUT.parent))
    from rollout import demo_workload

    harness, max_reply = demo_workload()
    repo = str(ROLLOUT.parent.parent)
    builds = {"OpenMP": args.openmp_build.resolve(), "own threads": None}
    probes, rows = {}, []
    for name, build in builds.items():
        probe = run([sys.executable, "-c", DECODE_PROBE, repo, str(ROLLOUT.parent)], build)
        if probe["openmp"] != (build is not None):
            raise SystemExit(f"the {name} build is not what it says (OpenMP = {probe['openmp']})")
        probes[name] = probe
        print(f"{name:<12} one sequence in a thread: {probe['before']} tok/s, after torch trained: {probe['after']}")
        for after_torch in (False, True):
            spec = f"batched,{args.concurrency},{args.episodes},8,as-is,{harness},{max_reply},{int(after_torch)}"
            row = run([sys.executable, str(ROLLOUT), "--child", spec], build)
            row.pop("tokens", None)
            row.pop("masks", None)
            row["build"] = name
            rows.append(row)
            print(
                f"{name:<12} {'after torch' if after_torch else 'no torch':<12} {row['episodes_per_min']:>7.2f} ep/min"
                f"  {row['generated_tokens_per_s']:>6.1f} gen tok/s  raw replay {row['replay_s']:.1f} s"
                f" of {row['wall_s']:.1f} s",
                flush=True,
            )
    print(f"\n{'build':<14}{'torch first':<13}{'ep/min':>8}{'gen tok/s':>11}{'llama.cpp s':>13}{'wall s':>8}")
    for r in rows:
        print(
            f"{r['build']:<14}{'yes' if r['after_torch'] else 'no':<13}{r['episodes_per_min']:>8.2f}"
            f"{r['generated_tokens_per_s']:>11.1f}{r['in_episode_decode_s']:>13.1f}{r['wall_s']:>8.1f}"
        )
    payload = {
        "episodes": args.episodes,
        "concurrency": args.concurrency,
        "harness": harness,
        "decode_one_sequence": probes,
        "rows": rows,
    }
    write_results(args.out, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
