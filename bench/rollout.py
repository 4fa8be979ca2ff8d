"""Rollout throughput with the bundled model: the batched llama.cpp backend against the
single-sequence one (one context per episode), side by side in one run.

    python bench/rollout.py [--episodes 24] [--concurrency 1,2,4,8,16] [--weights as-is,q8_0] [--out FILE]

1. Raw batched decode: llama.cpp alone (no sampling, no harness) decoding B sequences of a
   realistic prompt length in one batch per token, in the context the batched backend uses:
   the limit the backend can approach at batch B; and how fast it reads a prompt.
2. The RSR explore workload: the bundled model, the demo preset's explore harness and reply
   limit (`[rsr] harnesses`, `[policy] max_reply_tokens`; `--harness`, `--max-reply-tokens`
   override them), the built-in train tasks, 3 turns, temperature 0.8, local sandboxes; the same
   tasks and seeds for each backend and concurrency. Each configuration runs in its own
   process, so its peak memory (max RSS) is its own. For the batched backend, where the
   scheduler's time went: next-token batches, prompt chunks, and the rest.
3. The raw limit of the same work: every llama.cpp call the batched backend made during the
   episodes (the same batches of the same token ids at the same positions, the same KV cells
   dropped and copied) replayed in a fresh context with nothing else running: no sampling, no
   harness, no sandboxes. The episodes' wall time against the replay's is how close the
   backend runs to llama.cpp's own limit at the batch sizes and context lengths it really had.
4. With `--after-torch`, the batched backend again after torch has run a training step in
   the process's main thread, as in the pipeline, where rollouts follow training in one process
   (an OpenMP build of llama.cpp slows down then; docs/benchmarks.md).
5. Determinism: the batched backend at one concurrency run twice, and against itself at
   concurrency 1 (the single-sequence path): the share of episodes with identical tokens.

`--weights` measures the batched backend (and raw decode) once per `[policy] gguf_weights`
type; the single-sequence anchor always serves the file as it is, as it did before.

Prints a table and writes bench/results/rollout.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from report import write_results

MODEL = "bundled:smollm2-135m"


def demo_workload() -> tuple[str, int]:
    """The harness and reply limit the demo explores with, so the bench follows the preset."""
    from engine.config import load_preset

    demo = load_preset("demo")
    return demo.rsr.harnesses[0], demo.policy.max_reply_tokens


def raw_decode(batch_sizes: list[int], prompt_len: int, steps: int, weights: str = "as-is") -> list[dict]:
    import llama_cpp as L
    import numpy as np

    from engine.policy import load_policy
    from engine.policy.llamacpp_batched import N_BATCH, context_params, put_token

    policy = load_policy(MODEL, n_ctx=1024, instances=1, weights=weights)  # the tokenizer and the loaded weights
    llm = policy._llm  # noqa: SLF001 - raw llama.cpp on the same weights
    slots = max(batch_sizes)
    ctx = L.llama_init_from_model(
        llm._model.model,  # noqa: SLF001
        context_params(n_ctx=prompt_len + steps + 8, slots=slots, threads=os.cpu_count() or 1),
    )
    mem, batch = L.llama_get_memory(ctx), L.llama_batch_init(N_BATCH, 0, 1)
    rng = np.random.default_rng(0)

    def decode(items: list[tuple[int, int, int]]) -> None:
        for j, (token, pos, seq) in enumerate(items):
            put_token(batch, j, token, pos, seq, True)
        batch.n_tokens = len(items)
        assert L.llama_decode(ctx, batch) == 0

    rows = []
    for b in batch_sizes:
        L.llama_memory_clear(mem, True)
        start_read = time.perf_counter()
        for seq in range(b):
            prompt = rng.integers(100, 40000, prompt_len).tolist()
            for start in range(0, prompt_len, N_BATCH):
                decode([(t, start + i, seq) for i, t in enumerate(prompt[start : start + N_BATCH])])
        read = time.perf_counter() - start_read
        t = time.perf_counter()
        for k in range(steps):
            decode([(1000 + seq + k, prompt_len + k, seq) for seq in range(b)])
        seconds = time.perf_counter() - t
        rows.append(
            {
                "weights": weights,
                "batch": b,
                "tokens_per_s": round(b * steps / seconds, 1),
                "prompt_tokens_per_s": round(b * prompt_len / read, 1),
            }
        )
    L.llama_batch_free(batch)
    L.llama_free(ctx)
    policy.close()
    return rows


class LlamaCallTrace:
    """Records the llama.cpp calls that change a context's state (decode, cells dropped, cells
    copied), by wrapping the module functions the batched scheduler calls, so that the same work
    can be replayed raw. Installed before the policy is loaded; the scheduler looks them up on
    every call."""

    def __init__(self) -> None:
        import llama_cpp as L

        self.L, self.ops, self.decode_s = L, [], 0.0
        self._orig = {
            name: getattr(L, name)
            for name in ("llama_decode", "llama_memory_seq_rm", "llama_state_seq_get_data", "llama_state_seq_set_data")
        }
        self._src = -1
        L.llama_decode = self._decode
        L.llama_memory_seq_rm = self._seq_rm
        L.llama_state_seq_get_data = self._get
        L.llama_state_seq_set_data = self._set

    def close(self) -> None:
        for name, fn in self._orig.items():
            setattr(self.L, name, fn)

    def _decode(self, ctx, b):
        n = b.n_tokens
        self.ops.append(("decode", [(b.token[i], b.pos[i], b.seq_id[i][0], bool(b.logits[i])) for i in range(n)]))
        t = time.perf_counter()
        rc = self._orig["llama_decode"](ctx, b)
        self.decode_s += time.perf_counter() - t
        return rc

    def _seq_rm(self, mem, seq, p0, p1):
        self.ops.append(("rm", (seq, p0, p1)))
        return self._orig["llama_memory_seq_rm"](mem, seq, p0, p1)

    def _get(self, ctx, buf, size, seq):
        self._src = seq
        return self._orig["llama_state_seq_get_data"](ctx, buf, size, seq)

    def _set(self, ctx, buf, size, seq):
        self.ops.append(("copy", (self._src, seq)))
        return self._orig["llama_state_seq_set_data"](ctx, buf, size, seq)


def replay(trace: LlamaCallTrace, policy, slots: int) -> dict:
    """The traced calls again, raw, in a fresh context like the scheduler's: the time llama.cpp
    alone needs for the work the episodes asked of it."""
    import ctypes

    import llama_cpp as L

    from engine.policy.llamacpp_batched import N_BATCH, context_params, put_token

    trace.close()
    # The scheduler's context goes first: its idle threads would otherwise share the cores.
    policy.scheduler.close()
    ctx = L.llama_init_from_model(
        policy._llm._model.model,  # noqa: SLF001 - the weights the episodes used
        context_params(n_ctx=4096, slots=slots, threads=os.cpu_count() or 1),
    )
    mem, batch = L.llama_get_memory(ctx), L.llama_batch_init(N_BATCH, 0, 1)
    decode_s, tokens = 0.0, 0
    start = time.perf_counter()
    for kind, arg in trace.ops:
        if kind == "decode":
            for j, (token, pos, seq, logits) in enumerate(arg):
                put_token(batch, j, token, pos, seq, logits)
            batch.n_tokens = len(arg)
            t = time.perf_counter()
            assert L.llama_decode(ctx, batch) == 0
            decode_s += time.perf_counter() - t
            tokens += len(arg)
        elif kind == "rm":
            L.llama_memory_seq_rm(mem, *arg)
        else:
            src, dst = arg
            size = L.llama_state_seq_get_size(ctx, src)
            buf = (ctypes.c_uint8 * size)()
            written = L.llama_state_seq_get_data(ctx, buf, size, src)
            L.llama_state_seq_set_data(ctx, buf, written, dst)
    total = time.perf_counter() - start
    L.llama_batch_free(batch)
    L.llama_free(ctx)
    return {
        "replay_s": round(total, 2),
        "replay_decode_s": round(decode_s, 2),
        "replay_tokens": tokens,
        "in_episode_decode_s": round(trace.decode_s, 2),
    }


def torch_training_step() -> None:
    """A few steps of a small model trained with torch in this thread, on all cores, as an RSR
    or RPR stage trains before its next rollouts."""
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(576, 1536), torch.nn.SiLU(), torch.nn.Linear(1536, 576))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(256, 576)
    for _ in range(5):
        loss = (model(x) - x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def episodes(
    backend: str,
    concurrency: int,
    n: int,
    sequences: int,
    weights: str,
    harness: str,
    max_reply_tokens: int,
    after_torch: bool = False,
) -> dict:
    """One configuration (run in a child process): episodes/min, tokens, and each episode's tokens."""
    from engine.config import Config
    from engine.config.paths import builtin_tasks_dir
    from engine.policy import load_policy
    from engine.rollout.harnesses import get_harness
    from engine.rollout.model_agent import ModelAgent
    from engine.rollout.runner import EpisodeJob, EpisodeRunner
    from engine.tasks import load_suite

    if after_torch:
        torch_training_step()
    train = load_suite(builtin_tasks_dir()).split("train")
    tasks = [train[i % len(train)] for i in range(n)]
    policy = load_policy(
        MODEL, n_ctx=4096, instances=concurrency, llama_backend=backend, sequences=sequences, weights=weights
    )
    trace = LlamaCallTrace() if backend == "batched" else None  # the episodes' calls only
    runner = EpisodeRunner(config=Config(), backend="local", store=None, bus=None)

    def agent(i: int):
        return lambda: ModelAgent(
            policy, get_harness(harness), temperature=0.8, seed=i, max_turns=3, max_reply_tokens=max_reply_tokens
        )

    t = time.perf_counter()
    _, results = runner.run(
        [EpisodeJob(task, agent(i)) for i, task in enumerate(tasks)],
        kind="bench",
        agent_label="model",
        tasks_path="builtin",
        concurrency=concurrency,
    )
    wall = time.perf_counter() - t
    steps = [s for r in results for s in r.steps]
    generated = sum(len(s.token_ids) for s in steps)
    prompt_read = sum(s.prompt_tokens for s in steps)
    split = {}
    if backend == "batched":
        # Where the scheduler's time went: next-token batches, prompt chunks, and the rest
        # (no sequence ready: commands running, Python between turns).
        sched = policy.scheduler
        split = {
            "decode_s": round(sched.decode_seconds, 2),
            "prompt_s": round(sched.prompt_seconds, 2),
            "mean_decode_batch": round(sched.decode_tokens / max(1, sched.decode_steps), 2),
            "passes_per_decode_step": round(sched.decode_passes / max(1, sched.decode_steps), 2),
            "moved_sequences": sched.moved_sequences,
            "decode_tokens_per_s_in_decode": round(sched.decode_tokens / max(1e-9, sched.decode_seconds), 1),
            "prompt_tokens_per_s_in_prompt": round(sched.prompt_tokens / max(1e-9, sched.prompt_seconds), 1),
            "shared_prefix_tokens": sched.shared_prefix_tokens,
        }
    peak_rss_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)  # before the replay's context
    if trace is not None:
        split.update(replay(trace, policy, concurrency))
        split["share_of_raw_limit"] = round(split["replay_s"] / wall, 3)
    return {
        "backend": backend,
        "weights": weights,
        "after_torch": after_torch,
        "concurrency": concurrency,
        "episodes": len(results),
        "errors": sum(r.status == "infra_error" for r in results),
        "passed": sum(r.success for r in results),
        "wall_s": round(wall, 2),
        "episodes_per_min": round(60 * len(results) / wall, 2),
        "generated_tokens": generated,
        "generated_tokens_per_s": round(generated / wall, 1),
        "prompt_tokens": prompt_read,
        "peak_rss_mb": peak_rss_mb,
        **split,
        # Job i ran seed i; the episode id ends with the job's index.
        "tokens": {r.episode_id.rsplit("-", 1)[-1]: list(r.token_ids) for r in results},
        "masks": {r.episode_id.rsplit("-", 1)[-1]: list(r.token_mask) for r in results},
    }


def child(
    backend: str,
    concurrency: int,
    n: int,
    sequences: int,
    weights: str,
    harness: str,
    max_reply: int,
    after_torch: bool = False,
) -> dict:
    spec = f"{backend},{concurrency},{n},{sequences},{weights},{harness},{max_reply},{int(after_torch)}"
    out = subprocess.run([sys.executable, __file__, "--child", spec], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{backend} ({weights}) at concurrency {concurrency} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def same_share(a: dict, b: dict) -> float:
    keys = sorted(set(a["tokens"]) & set(b["tokens"]))
    return sum(a["tokens"][k] == b["tokens"][k] for k in keys) / max(1, len(keys))


def first_differences(a: dict, b: dict) -> dict:
    """Where each differing episode first differs: in a token the model sampled, or in an
    observation (a command's output that differs run to run, such as a timestamp)."""
    out = {"sampled": 0, "observation": 0}
    for k in sorted(set(a["tokens"]) & set(b["tokens"])):
        x, y = a["tokens"][k], b["tokens"][k]
        if x == y:
            continue
        i = next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
        mask = a["masks"][k]
        out["sampled" if i < len(mask) and mask[i] == 1 else "observation"] += 1
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=24)
    ap.add_argument("--concurrency", default="1,2,4,8,16")
    ap.add_argument("--sequences", type=int, default=8, help="the batched backend's [policy] sequences")
    ap.add_argument("--raw-batches", default="1,2,4,8,16")
    ap.add_argument("--prompt-len", type=int, default=400, help="raw decode: prompt tokens per sequence")
    ap.add_argument("--determinism-at", type=int, default=8)
    ap.add_argument("--weights", default="as-is", help="the batched backend's [policy] gguf_weights, comma-separated")
    ap.add_argument("--harness", help="the episodes' harness (default: the demo preset's explore harness)")
    ap.add_argument("--max-reply-tokens", type=int, help="tokens one reply may have (default: the demo preset's)")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "rollout.json")
    ap.add_argument("--raw-only", action="store_true", help="measure raw batched decode only (about a minute)")
    ap.add_argument(
        "--after-torch",
        action="store_true",
        help="also the batched backend after a torch training step in the same process, at each concurrency",
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        backend, c, n, seqs, weights, harness, max_reply, after_torch = args.child.split(",")
        row = episodes(backend, int(c), int(n), int(seqs), weights, harness, int(max_reply), after_torch == "1")
        print(json.dumps(row))
        return 0

    demo_harness, demo_max_reply = demo_workload()
    harness = args.harness or demo_harness
    max_reply = args.max_reply_tokens or demo_max_reply

    levels = [int(x) for x in args.concurrency.split(",")]
    if args.determinism_at not in levels:
        ap.error(f"--determinism-at {args.determinism_at} must be one of --concurrency {args.concurrency}")
    kinds = args.weights.split(",")
    batches = [int(x) for x in args.raw_batches.split(",")]
    raw = [row for w in kinds for row in raw_decode(batches, args.prompt_len, 48, w)]
    print("raw batched decode (llama.cpp alone, prompt of", args.prompt_len, "tokens):")
    for row in raw:
        print(
            f"  {row['weights']:<6} batch {row['batch']:>3}: {row['tokens_per_s']:>7.1f} tok/s decode,"
            f" {row['prompt_tokens_per_s']:>7.1f} tok/s reading the prompts"
        )
    if args.raw_only:
        return 0

    configs = [("instances", "as-is", False)] + [("batched", w, False) for w in kinds]
    if args.after_torch:
        configs.append(("batched", kinds[0], True))
    print(f"episodes: {args.episodes} per row, harness {harness}, replies up to {max_reply} tokens, 3 turns")
    rows = []
    for c in levels:
        for backend, weights, after_torch in configs:
            row = child(backend, c, args.episodes, args.sequences, weights, harness, max_reply, after_torch)
            rows.append(row)
            label = backend + ("+torch" if after_torch else "")
            print(
                f"  {label:<16} {weights:<6} c={c:<3} {row['episodes_per_min']:>7.2f} ep/min"
                f"  {row['generated_tokens_per_s']:>6.1f} gen tok/s  {row['peak_rss_mb']:>6} MB"
                f"  ({row['episodes']} episodes, {row['errors']} errors)",
                flush=True,
            )
    best_today = max(r["episodes_per_min"] for r in rows if r["backend"] == "instances")
    best_batched = max(r["episodes_per_min"] for r in rows if r["backend"] == "batched" and not r["after_torch"])

    at = args.determinism_at
    determinism, agains = [], []
    for w in kinds:
        mine = [r for r in rows if r["backend"] == "batched" and r["weights"] == w and not r["after_torch"]]
        first = next(r for r in mine if r["concurrency"] == at)
        again = child("batched", at, args.episodes, args.sequences, w, harness, max_reply)
        agains.append(again)
        single = next((r for r in mine if r["concurrency"] == 1), None)  # without level 1, no such check
        determinism.append(
            {
                "weights": w,
                "concurrency": at,
                "same_episode_run_to_run": round(same_share(first, again), 3),
                "same_episode_as_concurrency_1": round(same_share(first, single), 3) if single else None,
                "first_difference_run_to_run": first_differences(first, again),
                "first_difference_vs_concurrency_1": first_differences(first, single) if single else None,
            }
        )

    def label(r: dict) -> str:
        return r["backend"] + ("+torch" if r["after_torch"] else "")

    print(f"\n{'backend':<16}{'weights':<8}{'c':>4}{'ep/min':>9}{'gen tok/s':>11}{'peak MB':>9}{'passed':>8}")
    for r in rows:
        print(
            f"{label(r):<16}{r['weights']:<8}{r['concurrency']:>4}{r['episodes_per_min']:>9.2f}"
            f"{r['generated_tokens_per_s']:>11.1f}{r['peak_rss_mb']:>9}{r['passed']:>8}"
        )
    split = [r for r in rows if "decode_s" in r]
    if split:
        print(
            f"\n{'backend':<16}{'weights':<8}{'c':>4}{'decode s':>10}{'prompt s':>10}{'other s':>9}{'batch':>7}"
            f"{'passes':>8}{'decode tok/s':>14}{'prompt tok/s':>14}"
        )
        for r in split:
            other = r["wall_s"] - r["decode_s"] - r["prompt_s"]
            print(
                f"{label(r):<16}{r['weights']:<8}{r['concurrency']:>4}{r['decode_s']:>10.1f}{r['prompt_s']:>10.1f}"
                f"{other:>9.1f}{r['mean_decode_batch']:>7.2f}{r['passes_per_decode_step']:>8.2f}"
                f"{r['decode_tokens_per_s_in_decode']:>14.1f}"
                f"{r['prompt_tokens_per_s_in_prompt']:>14.1f}"
            )
        print(
            f"\n{'backend':<16}{'weights':<8}{'c':>4}{'episodes s':>12}{'raw replay s':>14}{'share of raw':>14}"
            f"{'llama.cpp s in episodes':>25}"
        )
        for r in split:
            print(
                f"{label(r):<16}{r['weights']:<8}{r['concurrency']:>4}{r['wall_s']:>12.1f}{r['replay_s']:>14.1f}"
                f"{r['share_of_raw_limit']:>14.2f}{r['in_episode_decode_s']:>25.1f}"
            )
    print(
        f"\nbest episodes/min: instances {best_today:.2f}, batched {best_batched:.2f} "
        f"({best_batched / best_today:.2f}x; target 2.5x)"
    )
    for d in determinism:
        print(f"determinism at concurrency {at}: {d}")
    for r in [*rows, *agains]:
        r.pop("tokens", None)
        r.pop("masks", None)
    payload = {
        "model": MODEL,
        "harness": harness,
        "max_reply_tokens": max_reply,
        "episodes": args.episodes,
        "raw_decode": raw,
        "rows": rows,
        "best_episodes_per_min": {"instances": best_today, "batched": best_batched},
        "speedup": round(best_batched / best_today, 2),
        "determinism": determinism,
    }
    write_results(args.out, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
