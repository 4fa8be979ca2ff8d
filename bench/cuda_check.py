"""The training code on a CUDA device: SFT and PPO steps on randomly initialised models, with and without NF4.

    python bench/cuda_check.py [--shapes smollm2-135m 0.5b] [--lengths 1024 2048] [--layers N] [--out FILE]

No weights are needed (and none fit through a small transfer): each model is built from an
architecture with random weights, saved to a temporary directory, and trained by the functions
the pipeline itself calls, `train_sft` (RSR) and `ppo_update` (RPR, through bench/ppo.py, which
times the anchor update and the current one side by side). Shapes:

- `smollm2-135m`: the bundled model's architecture (LlamaForCausalLM, 30 layers, hidden 576,
  9 heads, 3 KV heads, MLP 1536, vocabulary 49152, tied embeddings);
- `0.5b`: a 0.5B-parameter Llama of Qwen2.5-0.5B's shape (24 layers, hidden 896, 14 heads,
  2 KV heads, MLP 4864, vocabulary 151936, tied embeddings).

For each shape, fp32 and NF4 (bitsandbytes 4-bit base, QLoRA): one SFT epoch over 16 synthetic
samples (a 40% prompt, the rest action tokens under the loss), then the PPO update of
bench/ppo.py. Reported: seconds, tokens per second, peak CUDA memory, and whether every loss was
finite and the adapter's weights moved. Random weights make these numbers about speed, memory and
plumbing, not learning. `--layers N` cuts every shape to N layers (a quick run on the CPU).

Writes bench/results/cuda.json (and one line of JSON per result to stdout as it goes).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHAPES = {
    "smollm2-135m": dict(
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        head_dim=64,
        vocab_size=49152,
    ),
    "0.5b": dict(
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        head_dim=64,
        vocab_size=151936,
    ),
}


def build_model(shape: str, layers: int | None, dest: Path) -> int:
    """Writes a random-weight LlamaForCausalLM of `shape` to dest; returns its parameter count."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    dims = dict(SHAPES[shape])
    if layers:
        dims["num_hidden_layers"] = layers
    config = LlamaConfig(
        **dims, max_position_embeddings=8192, tie_word_embeddings=True, bos_token_id=1, eos_token_id=2, pad_token_id=2
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    model.save_pretrained(dest)
    return sum(p.numel() for p in model.parameters())


def sft_worker(args) -> dict:
    import torch

    from engine.rsr.sft import SftConfig, train_sft
    from engine.store.records import Provenance, Sample

    rng = random.Random(0)
    from transformers import AutoConfig

    vocab = AutoConfig.from_pretrained(args.base).vocab_size
    samples = []
    for i in range(16):
        prompt = int(args.length * 0.4)
        ids = tuple(rng.randrange(100, vocab) for _ in range(args.length))
        mask = tuple([0] * prompt + [1] * (args.length - prompt))
        samples.append(Sample(ids, mask, Provenance(f"synthetic-{i}", "bench", "", "")))
    config = SftConfig(epochs=1, batch_samples=4, load_4bit=args.four_bit, max_len=args.length, learning_rate=2e-4)
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    with tempfile.TemporaryDirectory() as out:
        result = train_sft(args.base, samples, Path(out), config)
        moved = _adapter_moved(Path(result.checkpoint))
    return {
        "part": "sft",
        "4bit": args.four_bit,
        "length": args.length,
        "samples": len(samples),
        "steps": result.steps,
        "seconds": round(result.seconds, 2),
        "tokens_per_s": round(result.tokens / result.seconds, 1),
        "losses_finite": all(math.isfinite(x) for x in result.losses),
        "first_loss": round(result.losses[0], 3),
        "last_loss": round(result.losses[-1], 3),
        "adapter_moved": moved,
        "peak_cuda_mb": round(torch.cuda.max_memory_allocated() / 2**20) if cuda else None,
        "device": "cuda" if cuda else "cpu",
    }


def _adapter_moved(adapter_dir: Path) -> bool:
    """peft initialises lora_B at zero; after a real step some of it is not."""
    from safetensors.torch import load_file

    weights = load_file(str(adapter_dir / "adapter_model.safetensors"))
    return any(float(t.abs().max()) > 0 for name, t in weights.items() if "lora_B" in name)


def run(cmd: list[str]) -> list[dict]:
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        return [{"error": proc.stderr[-2000:], "cmd": " ".join(cmd[1:])}]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=["smollm2-135m", "0.5b"])
    parser.add_argument("--lengths", type=int, nargs="+", default=[1024, 2048], help="PPO episode lengths")
    parser.add_argument("--sft-length", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=None, help="cut every shape to this many layers")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "cuda.json"))
    parser.add_argument("--sft-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--base", help=argparse.SUPPRESS)
    parser.add_argument("--length", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--4bit", dest="four_bit", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sft_worker:
        print(json.dumps(sft_worker(args)))
        return
    import torch

    rows: list[dict] = []
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    for shape in args.shapes:
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp) / shape
            params = build_model(shape, args.layers, base)
            for four_bit in (False, True):
                flag = ["--4bit"] if four_bit else []
                found = run(
                    [sys.executable, __file__, "--sft-worker", "--base", str(base), "--length", str(args.sft_length)]
                    + flag
                )
                found += run(
                    [sys.executable, str(ROOT / "bench" / "ppo.py"), "--model", f"hf:{base}", "--episodes", "4"]
                    + ["--lengths", *map(str, args.lengths), "--out", str(Path(tmp) / "ppo.json")]
                    + flag
                )
                ppo = Path(tmp) / "ppo.json"
                if ppo.exists():
                    found += [{"part": "ppo", **u} for u in json.loads(ppo.read_text())["updates"]]
                    ppo.unlink()
                for row in found:
                    row.update(shape=shape, parameters=params, four_bit=four_bit)
                    print(json.dumps(row), flush=True)
                rows += found
                out.write_text(json.dumps({"cuda": torch.cuda.is_available(), "rows": rows}, indent=2))
    print(f"\n{'shape':<13} {'4bit':<5} {'part':<4} {'path':<8} {'len':>5} {'seconds':>8} {'tok/s':>9} {'peak MB':>8}")
    for r in rows:
        if "error" in r:
            print(f"{r['shape']:<13} {r['four_bit']!s:<5} ERROR {r['cmd']}: {r['error'].splitlines()[-1]}")
            continue
        seconds = r.get("seconds", r.get("joint_update_s"))
        speed = r.get("tokens_per_s", r.get("joint_tokens_per_s"))
        peak = r.get("peak_cuda_mb") or r.get("peak_cuda_mb_joint") or r.get("peak_rss_mb")
        print(
            f"{r['shape']:<13} {r['four_bit']!s:<5} {r['part']:<4} {r.get('path', ''):<8} {r['length']:>5} "
            f"{seconds:>8} {speed:>9} {peak!s:>8}"
        )
    print(f"\n{time.monotonic() - started:.0f} s in all; wrote {out}")


if __name__ == "__main__":
    main()
