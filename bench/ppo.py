"""PPO speed and memory, and where an RPR round's time goes.

    python bench/ppo.py [--model SPEC] [--lengths 512 1024 2048] [--episodes 4] [--4bit] [--store DB] [--out FILE]
        [--ppo-epochs N] [--minibatch N] [--shared-prompt TOKENS] [--episodes-from DB:SCOPE] [--paths PATH...]
        [--critic-layers N]

`--ppo-epochs 4 --minibatch 4 --shared-prompt 285` is the demo's update in the demo's shape;
`--episodes-from H/trsi.db:rpr/1/2` takes one RPR round's real episodes (their sampler log-probs
replaced by the training model's own) instead of synthetic ones.

Part 1, the update, side by side: `anchor` is the update as it was before issue 14 (the training
model recomputes the old log-probs, and the critic runs a separate no-grad forward for the old
values, in float32); `current` is today's (one epoch over one minibatch takes the old values
from the critic's training forward and the old log-probs from the actor's, whose first episode
is the probe that lets the sampler's stand in), once in float32 and once at `[rpr] precision =
"auto"` (bf16 autocast where the hardware does bf16 natively: engine/training/precision.py).
Each is one PPO update (ppo_epochs 1, one minibatch) of actor and critic on
`--model` (default the bundled SmolLM2-135M; `hf:PATH` for another base, on CUDA when there is
one) (LoRA rank 8 on all projections, fp32 weights unless --4bit, which loads
them NF4) over `--episodes` synthetic episodes of each length: random token ids with a real
episode's shape (a 40% prompt, then 64 action tokens and 128 observation tokens in turn). Each
length runs in its own process. Reported: seconds per update, training tokens per second, and
the resident-memory peak above the loaded model, per 1k tokens of the longest episode (episodes
go through the model one at a time, so activation memory follows the episode's length).

Part 2, the round (with --store): from the metrics an RPR stage logged in a trsi-tui database,
the mean share of a round's wall time spent generating (llama.cpp), in sandboxes (setup, commands,
verifier) and training (the PPO update and the checkpoint). Rollouts run episodes concurrently, so
generation and sandbox time are the rollout wall time split by the episodes' own generation share.

The synthetic episodes' sampler log-probs are the training model's own, computed before the
clock starts: a sampler that agrees with the trainer, as llama.cpp does with the fp32 weights
(docs/rpr.md).

Writes bench/results/ppo.json.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


# anchor: the update before issue 14; current: the update of issue 14, in float32, one episode at
# a time; current-auto: the same at precision "auto"; current-auto-shared: that, with the
# episodes' common prompt prefix run once per pass and their tails together ([rpr] share_prefix
# and batch_tokens, engine/rpr/prefix.py); critic-top: that, with the critic's adapter on the top
# `--critic-layers` layers only, the layers below run once per update ([rpr] critic_layers).
PATHS = ("anchor", "current", "current-auto", "current-auto-shared", "critic-top")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def synthetic(length: int, vocab: int, seed: int, shared: int = 0):
    """`shared`: the first this many tokens are the same in every episode (a harness's system
    prompt); the prompt is then at least that plus a 40-token task."""
    from engine.rpr.rollouts import Rollout

    rng = random.Random(seed)
    prompt = max(int(length * 0.4), shared + 40 if shared else 0)
    mask = [0] * prompt
    while len(mask) < length:
        mask += [1] * 64 + [0] * 128
    mask = mask[:length]
    mask[-1] = 1
    system = random.Random(-1)
    ids = tuple(
        [system.randrange(100, vocab) for _ in range(shared)]
        + [rng.randrange(100, vocab) for _ in range(length - shared)]
    )
    return Rollout(f"synthetic-{seed}", "bench", ids, tuple(mask), (), rng.choice([0.0, 0.25, 1.0]), False, 0.0, 0.0)


def stored_rollouts(spec: str):
    """The episodes of one RPR round in a trsi-tui database, `DB:SCOPE` (SCOPE like rpr/1/1)."""
    from engine.rpr.rollouts import load_rollout
    from engine.store import Store

    db, scope = spec.rsplit(":", 1)
    con = sqlite3.connect(db)
    ids = [row[0] for row in con.execute("SELECT episode_id FROM jobs WHERE scope = ? ORDER BY key", (scope,))]
    con.close()
    if not ids:
        raise SystemExit(f"no episodes under {scope} in {db}")
    store = Store(db)
    return [r for r in (load_rollout(store, i) for i in ids) if r.trainable]


def with_sampler_logprobs(ac, rollout):
    import dataclasses

    import torch

    from engine.rpr.actor_critic import ACTOR

    with torch.no_grad():
        lp = ac.actions(ACTOR, torch.tensor([rollout.ids]), torch.tensor([rollout.mask[1:]])).logprobs
    return dataclasses.replace(rollout, sampler_logprobs=tuple(lp.tolist()))


def fresh_actor_critic(model: str, settings, precision: str):
    """Fresh actor and critic adapters on `model` (a model spec), shaped as `settings` (an
    RprConfig) says; the reference is the base."""
    from engine.policy.spec import trainable_weights
    from engine.rpr.actor_critic import ActorCritic
    from engine.training.loader import LoraShape

    return ActorCritic.load(
        trainable_weights(model)[0],
        actor_adapter=None,
        critic_adapter=None,
        value_head=None,
        reference="base",
        reference_adapter=None,
        lora=LoraShape(settings.rank, settings.alpha),
        load_4bit=settings.load_4bit,
        temperature=0.8,
        precision=precision,
        critic_layers=settings.critic_layers,
    )


def worker(args) -> None:
    import torch

    from engine.config import RprConfig
    from engine.rpr.ppo import make_optimizers, ppo_update
    from engine.training.memory import release_freed_memory

    torch.manual_seed(0)
    release_freed_memory()
    anchor = args.path == "anchor"
    precision = "auto" if args.path.startswith("current-auto") or args.path == "critic-top" else "fp32"
    shared = args.path in ("current-auto-shared", "critic-top")
    settings = RprConfig(
        ppo_epochs=args.ppo_epochs,
        minibatch_episodes=args.minibatch or args.episodes,
        share_prefix=shared,
        batch_tokens=2048 if shared else 0,
        critic_layers=args.critic_layers if args.path == "critic-top" else 0,
        load_4bit=args.four_bit,
        max_len=8192,
        old_logprobs="recompute" if anchor else "sampler",
        kl_coef=args.kl_coef,
    )
    ac = fresh_actor_critic(args.model, settings, precision)
    vocab = ac.model.get_base_model().config.vocab_size
    if args.episodes_from:
        rollouts = [with_sampler_logprobs(ac, r) for r in stored_rollouts(args.episodes_from)]
    else:
        rollouts = [
            with_sampler_logprobs(ac, synthetic(args.length, vocab, s, args.shared_prompt))
            for s in range(args.episodes)
        ]
    optimizers, schedulers = make_optimizers(ac, settings)
    # A warm-up update outside the timing: first calls allocate the optimizer state and caches.
    update = functools.partial(ppo_update, fuse_critic=not anchor)
    update(ac, rollouts[:1], settings, optimizers, schedulers, train_actor=True, rng=random.Random(0))
    baseline = rss_mb()
    peak = {"mb": baseline}
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak["mb"] = max(peak["mb"], rss_mb())
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    sampler.start()
    joint = update(ac, rollouts, settings, optimizers, schedulers, train_actor=True, rng=random.Random(1))
    critic = update(ac, rollouts, settings, optimizers, schedulers, train_actor=False, rng=random.Random(2))
    stop.set()
    sampler.join()
    tokens = sum(len(r.ids) for r in rollouts)
    if args.episodes_from:  # real episodes: report their mean length and count
        args.length, args.episodes = round(tokens / len(rollouts)), len(rollouts)
    print(
        json.dumps(
            {
                "model": args.model,
                "path": args.path,
                "device": str(ac.device),
                "dtype": ac.dtype,
                "length": args.length,
                "episodes": args.episodes,
                "tokens": tokens,
                "4bit": args.four_bit,
                "kl_coef": args.kl_coef,
                "joint_update_s": round(joint.seconds, 2),
                "critic_update_s": round(critic.seconds, 2),
                "joint_forward_passes_per_episode": round(joint.forward_passes, 2),
                "ppo_epochs": args.ppo_epochs,
                "minibatch_episodes": settings.minibatch_episodes,
                "shared_prompt": args.shared_prompt,
                "critic_layers": settings.critic_layers,
                "shared_prefix_tokens": round(joint.shared_prefix_tokens, 1),
                "old_logprobs_from": joint.old_logprobs_from,
                "joint_tokens_per_s": round(tokens / joint.seconds, 1),
                "critic_tokens_per_s": round(tokens / critic.seconds, 1),
                "baseline_rss_mb": round(baseline),
                "peak_rss_mb": round(peak["mb"]),
                "peak_above_model_mb_per_1k_tokens": round((peak["mb"] - baseline) / (args.length / 1000), 1),
                "peak_cuda_mb": round(torch.cuda.max_memory_allocated() / 2**20) if cuda else None,
            }
        )
    )


def round_breakdown(db: Path) -> list[dict]:
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT run_id, step, name, value FROM metrics WHERE run_id LIKE 'rpr-%' AND "
        "name IN ('time/rollout_s', 'time/train_s', 'time/checkpoint_s', 'time/generation_share', "
        "'rpr/warmup')"
    ).fetchall()
    rounds: dict[tuple[str, int], dict] = {}
    for run, step, name, value in rows:
        rounds.setdefault((run, step), {})[name] = value
    out = []
    for phase in ("warm-up", "joint"):
        chosen = [r for r in rounds.values() if len(r) == 5 and (r["rpr/warmup"] == 1.0) == (phase == "warm-up")]
        if not chosen:
            continue
        gen = sum(r["time/rollout_s"] * r["time/generation_share"] for r in chosen)
        sandbox = sum(r["time/rollout_s"] * (1 - r["time/generation_share"]) for r in chosen)
        train = sum(r["time/train_s"] + r["time/checkpoint_s"] for r in chosen)
        total = gen + sandbox + train
        out.append(
            {
                "phase": phase,
                "rounds": len(chosen),
                "mean_round_s": round(total / len(chosen), 1),
                "generation_share": round(gen / total, 3),
                "sandbox_share": round(sandbox / total, 3),
                "training_share": round(train / total, 3),
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="bundled:smollm2-135m", help="bundled:NAME or hf:PATH")
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 1024, 2048])
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--4bit", dest="four_bit", action="store_true", help="load the base NF4 (QLoRA)")
    parser.add_argument("--kl-coef", type=float, default=0.05, help="[rpr] kl_coef (0: no reference pass)")
    parser.add_argument("--store", type=Path, default=None, help="a trsi-tui database with RPR rounds")
    parser.add_argument("--ppo-epochs", type=int, default=1, help="[rpr] ppo_epochs (the demo: 4)")
    parser.add_argument("--minibatch", type=int, default=0, help="[rpr] minibatch_episodes (0: all the episodes)")
    parser.add_argument(
        "--shared-prompt", type=int, default=0, help="tokens every episode starts with (the demo's system prompt: 285)"
    )
    parser.add_argument(
        "--episodes-from",
        metavar="DB:SCOPE",
        help="real episodes instead of synthetic ones: one RPR round's, e.g. H/trsi.db:rpr/1/1 (--lengths ignored)",
    )
    parser.add_argument(
        "--critic-layers", type=int, default=6, help="the critic's layers on the critic-top path ([rpr] critic_layers)"
    )
    parser.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS), help="which updates to measure")
    parser.add_argument("--length", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--path", choices=PATHS, default="current", help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "ppo.json"))
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    rows = []
    lengths = [0] if args.episodes_from else args.lengths
    for length, path in [(n, p) for n in lengths for p in args.paths]:
        cmd = [
            sys.executable,
            __file__,
            "--worker",
            "--model",
            args.model,
            "--length",
            str(length),
            "--episodes",
            str(args.episodes),
            "--path",
            path,
            "--kl-coef",
            str(args.kl_coef),
            "--ppo-epochs",
            str(args.ppo_epochs),
            "--minibatch",
            str(args.minibatch),
            "--shared-prompt",
            str(args.shared_prompt),
            "--critic-layers",
            str(args.critic_layers),
        ]
        cmd += ["--episodes-from", args.episodes_from] if args.episodes_from else []
        cmd += ["--4bit"] if args.four_bit else []
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"length {length} ({path}) failed")
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    # Speed-ups are against the first path measured (the anchor, unless --paths leaves it out).
    anchors = {r["length"]: r for r in reversed(rows) if r["path"] == args.paths[0]}
    print(
        "tokens/episode | path | dtype | episodes | joint update s | speed-up | critic-only s | forwards/episode | "
        "joint tok/s | peak RSS MB | peak above model, MB per 1k tokens"
    )
    for r in rows:
        r["joint_speedup"] = round(anchors[r["length"]]["joint_update_s"] / r["joint_update_s"], 2)
        r["critic_speedup"] = round(anchors[r["length"]]["critic_update_s"] / r["critic_update_s"], 2)
        print(
            f"{r['length']} | {r['path']} | {r['dtype']} | {r['episodes']} | {r['joint_update_s']} | "
            f"{r['joint_speedup']}x | "
            f"{r['critic_update_s']} | {r['joint_forward_passes_per_episode']} | {r['joint_tokens_per_s']} | "
            f"{r['peak_rss_mb']} | {r['peak_above_model_mb_per_1k_tokens']}"
        )
    breakdown = round_breakdown(args.store) if args.store else []
    if breakdown:
        print("\nphase | rounds | mean round s | generation | sandboxes | training")
        for b in breakdown:
            print(
                f"{b['phase']} | {b['rounds']} | {b['mean_round_s']} | {b['generation_share']:.0%} | "
                f"{b['sandbox_share']:.0%} | {b['training_share']:.0%}"
            )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                "updates": rows,
                "round_breakdown": breakdown,
            },
            indent=2,
        )
    )
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
