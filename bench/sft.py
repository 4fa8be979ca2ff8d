"""SFT speed and memory: trsi-tui's QLoRA trainer against TRL's SFTTrainer, same model, data and machine.

    python bench/sft.py [--epochs 1] [--batch 4] [--no-4bit] [--trainers ours trl] [--samples-from DB:ROUND]
        [--out FILE]

Needs `pip install trl` (not a trsi-tui dependency). Both trainers get the same base (the bundled
SmolLM2-135M as a plain transformers checkpoint), the same LoRA (rank 8, alpha 16, all
projections), NF4 4-bit loading unless --no-4bit, the same pre-tokenized samples with the same
loss mask (action tokens only), batch size, learning rate and epochs. Each trainer runs in its
own process so its peak resident memory is its own. Reported: training tokens per second (all
non-padding tokens through the model) and peak RSS. Writes bench/results/sft.json.

Samples: for each built-in task, the task prompt and the reference command as the assistant's
reply, tokenized through the model's chat template; or, with `--samples-from H/trsi.db:2`, the
SFT samples an RSR round stored (every one of them, not only the balanced subset it trained on).

`--trainers ours ours-bf16` measures trsi-tui's trainer in float32 against itself at
`[rsr.sft] precision = "bf16"` (bf16 autocast, weights and optimizer in float32), side by side.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


# ours: trsi-tui's trainer in float32; ours-bf16: the same under bf16 autocast; trl: TRL's SFTTrainer.
TRAINERS = ("ours", "ours-bf16", "trl")


def make_samples(tokenizer_policy, repeat: int):
    from engine.config.paths import builtin_tasks_dir
    from engine.rollout.harnesses import get_harness
    from engine.store.records import Provenance, Sample
    from engine.tasks import load_suite

    harness = get_harness("xml-bash")
    samples = []
    for task in load_suite(builtin_tasks_dir()).tasks:
        solve = (task.solution_dir / "solve.sh").read_text().strip().splitlines()[-1]
        opening = [
            {"role": "system", "content": harness.system_prompt()},
            {"role": "user", "content": harness.first_message(task.instruction, 120)},
        ]
        prompt = tokenizer_policy.tokenize_chat(opening, add_generation_prompt=True)
        action = tokenizer_policy.tokenizer.encode(f"<bash>{solve}</bash>", add_special_tokens=False)
        action += [min(tokenizer_policy.stop_ids)]
        samples.append(
            Sample(
                tuple(prompt + action),
                tuple([0] * len(prompt) + [1] * len(action)),
                Provenance(task.name, "xml-bash", "", ""),
            )
        )
    return samples * repeat


def stored_samples(spec: str):
    """The SFT samples of one RSR round in a trsi-tui database, `DB:ROUND`."""
    from engine.store import Store

    db, round_ = spec.rsplit(":", 1)
    samples = Store(db).rsr.samples(int(round_))
    if not samples:
        raise SystemExit(f"no SFT samples of round {round_} in {db}")
    return samples


def run_ours(base: str, samples, args) -> dict:
    import tempfile

    from engine.rsr.sft import SftConfig, train_sft

    config = SftConfig(
        epochs=args.epochs,
        batch_samples=args.batch,
        load_4bit=not args.no_4bit,
        learning_rate=2e-4,
        rank=8,
        alpha=16,
        precision="bf16" if args.worker == "ours-bf16" else "fp32",
    )
    with tempfile.TemporaryDirectory() as out:
        result = train_sft(base, samples, Path(out), config)
    return {"seconds": result.seconds, "tokens": result.tokens, "steps": result.steps, "final_loss": result.losses[-1]}


def run_trl(base: str, samples, args) -> dict:
    import tempfile

    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig, TrainerCallback
    from trl import SFTConfig, SFTTrainer

    from engine.training.loader import LORA_TARGETS

    kwargs = {"dtype": torch.float32}
    if not args.no_4bit:
        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.float32
        )
    model = AutoModelForCausalLM.from_pretrained(base, **kwargs)
    data = Dataset.from_list([{"input_ids": list(s.ids), "completion_mask": list(s.mask)} for s in samples])
    timing = {}

    class Clock(TrainerCallback):
        def on_train_begin(self, *a, **k):
            timing["start"] = time.monotonic()

        def on_train_end(self, *a, **k):
            timing["end"] = time.monotonic()

    with tempfile.TemporaryDirectory() as out:
        config = SFTConfig(
            output_dir=out,
            per_device_train_batch_size=args.batch,
            num_train_epochs=args.epochs,
            learning_rate=2e-4,
            lr_scheduler_type="constant",
            warmup_steps=0,
            logging_steps=1,
            save_strategy="no",
            report_to=[],
            use_cpu=True,
            bf16=False,
            fp16=False,
            max_length=2048,
            packing=False,
            completion_only_loss=True,
            gradient_checkpointing=False,
            dataloader_num_workers=0,
            seed=0,
        )
        trainer = SFTTrainer(
            model=model,
            args=config,
            train_dataset=data,
            peft_config=LoraConfig(r=8, lora_alpha=16, target_modules=list(LORA_TARGETS), task_type="CAUSAL_LM"),
            callbacks=[Clock()],
        )
        result = trainer.train()
    tokens = sum(len(s.ids) for s in samples) * args.epochs
    return {
        "seconds": timing["end"] - timing["start"],
        "tokens": tokens,
        "steps": result.global_step,
        "final_loss": trainer.state.log_history[-2].get("loss") if len(trainer.state.log_history) > 1 else None,
    }


def worker(args) -> None:
    from engine.policy import load_policy
    from engine.policy.spec import resolve_hf_base

    base = resolve_hf_base("bundled:smollm2-135m")
    samples = (
        stored_samples(args.samples_from) if args.samples_from else make_samples(load_policy(f"hf:{base}"), args.repeat)
    )
    import gc

    gc.collect()
    result = (run_trl if args.worker == "trl" else run_ours)(base, samples, args)
    result["samples"] = len(samples)
    result["tokens_per_second"] = result["tokens"] / result["seconds"]
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=1, help="copies of the 48 task samples")
    parser.add_argument("--no-4bit", action="store_true")
    parser.add_argument("--trainers", nargs="+", choices=TRAINERS, default=["ours", "trl"])
    parser.add_argument("--samples-from", help="DB:ROUND, an RSR round's stored SFT samples")
    parser.add_argument("--worker", choices=TRAINERS, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "sft.json"))
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    rows = {}
    for name in args.trainers:
        cmd = [
            sys.executable,
            __file__,
            "--worker",
            name,
            "--epochs",
            str(args.epochs),
            "--batch",
            str(args.batch),
            "--repeat",
            str(args.repeat),
        ] + (["--no-4bit"] if args.no_4bit else [])
        cmd += ["--samples-from", args.samples_from] if args.samples_from else []
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"{name} failed")
        rows[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    print("trainer | samples | steps | tokens | seconds | tokens/s | peak RSS MB | final loss")
    for name, r in rows.items():
        loss = "-" if r["final_loss"] is None else f"{r['final_loss']:.4f}"
        print(
            f"{name} | {r['samples']} | {r['steps']} | {r['tokens']} | {r['seconds']:.1f} | "
            f"{r['tokens_per_second']:.0f} | {r['peak_rss_mb']:.0f} | {loss}"
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"config": vars(args), "rows": rows}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
