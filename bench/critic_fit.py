"""How well, and how fast, critics of different sizes fit an RPR stage's real rollouts.

    python bench/critic_fit.py --episodes-from H/trsi.db:rpr/1 [--rounds 0 1 2 3 4]
        [--critic-layers 6 12 0] [--critic-lr LR] [--rank R] [--out FILE]

Replays the critic's warm-up: for each critic shape (`[rpr] critic_layers`: its adapter on the
top N decoder layers, 0 for all of them), in its own process, a fresh critic is updated alone on
the stored rounds' rollouts in order (`rpr/1/0`, `rpr/1/1`, ...), as a warm-up round of the demo
does it (4 epochs over minibatches of 4, bf16, the shared prefix run once). Before each update,
the critic has not seen that round's rollouts, so the update's explained variance (of the returns
by the critic's values, computed before it trains) is a held-out measure of how well the critic
fits: the mean over the rounds after the first (an untrained critic predicts 0) is the number to
compare. Also reported: the value loss the update trained to, and its seconds. The shapes run
side by side in one run, on the same rollouts.

Writes bench/results/critic_fit.json.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def worker(args) -> None:
    import torch

    from bench.ppo import fresh_actor_critic, stored_rollouts
    from engine.config import RprConfig
    from engine.rpr.ppo import make_optimizers, ppo_update

    layers = args.critic_layers[0]
    settings = RprConfig(
        ppo_epochs=4,
        minibatch_episodes=4,
        share_prefix=True,
        batch_tokens=2048,
        critic_layers=layers,
        critic_lr=args.critic_lr,
        rank=args.rank,
        alpha=2 * args.rank,
        load_4bit=False,
    )
    torch.manual_seed(0)
    ac = fresh_actor_critic(args.model, settings, "auto")
    optimizers, schedulers = make_optimizers(ac, settings)
    rng = random.Random(0)
    rounds = []
    for index in args.rounds:
        rollouts = stored_rollouts(f"{args.episodes_from}/{index}")
        started = time.monotonic()
        stats = ppo_update(ac, rollouts, settings, optimizers, schedulers, train_actor=False, rng=rng)
        rounds.append(
            {
                "round": index,
                "episodes": stats.episodes,
                "explained_variance": round(stats.explained_variance, 4),
                "value_loss": round(stats.value_loss, 4),
                "seconds": round(time.monotonic() - started, 1),
            }
        )
    held_out = [r["explained_variance"] for r in rounds[1:]]
    print(
        json.dumps(
            {
                "critic_layers": layers,
                "critic_start": ac.critic_start,
                "trainable_critic_parameters": sum(p.numel() for p in ac.critic_parameters()),
                "rounds": rounds,
                "mean_held_out_explained_variance": round(sum(held_out) / len(held_out), 4) if held_out else None,
                "seconds": round(sum(r["seconds"] for r in rounds), 1),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes-from", required=True, help="DB:rpr/N, an RPR stage's rounds in a trsi-tui database")
    parser.add_argument("--rounds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="its rounds, in order")
    parser.add_argument("--critic-layers", type=int, nargs="+", default=[6, 12, 0], help="critic shapes (0: all)")
    parser.add_argument("--critic-lr", type=float, default=1e-4, help="[rpr] critic_lr")
    parser.add_argument("--rank", type=int, default=8, help="[rpr] rank (alpha is twice it, as the default's)")
    parser.add_argument("--model", default="bundled:smollm2-135m")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "critic_fit.json"))
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    rows = []
    for layers in args.critic_layers:
        cmd = [sys.executable, __file__, "--worker", "--episodes-from", args.episodes_from, "--model", args.model]
        cmd += ["--rounds", *map(str, args.rounds), "--critic-layers", str(layers)]
        cmd += ["--critic-lr", str(args.critic_lr), "--rank", str(args.rank)]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"critic_layers {layers} failed")
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    print(
        "critic layers | trainable | explained variance per round (held out) | mean after the first | "
        "value loss, last | seconds"
    )
    for r in rows:
        evs = " ".join(f"{x['explained_variance']:+.3f}" for x in r["rounds"])
        print(
            f"{r['critic_layers'] or 'all'} | {r['trainable_critic_parameters']} | {evs} | "
            f"{r['mean_held_out_explained_variance']} | {r['rounds'][-1]['value_loss']} | {r['seconds']}"
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"config": vars(args), "critics": rows}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
