"""Rollout speed with the bundled model: what the harness and the sandbox add to generation.

    python bench/harness_overhead.py [--episodes 8] [--max-turns 3] [--harness xml-bash] [--out FILE]

Runs model episodes on eval-split tasks (local sandbox, llama.cpp, the bundled SmolLM2-135M),
then, in the same run, regenerates each recorded step's exact prompt with raw llama.cpp (the
same prompt ids, forced to the same number of tokens, no harness, no sandbox). Reports:
- generated tokens per second (model episodes, and raw);
- overhead: episode agent-turn time minus raw generation time of the same tokens, as a share
  of the raw time (target: under 5%);
- episodes per minute at concurrency 1 and 2.
Writes bench/results/harness_overhead.json. Uses the single-sequence backend (llama_backend = "instances"),
whose raw llama.cpp calls it replays; bench/rollout.py measures the batched backend.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from report import write_results

from engine.config import Config
from engine.config.paths import builtin_tasks_dir
from engine.policy import load_policy
from engine.rollout.harnesses import get_harness
from engine.rollout.model_agent import ModelAgent
from engine.rollout.runner import EpisodeJob, EpisodeRunner
from engine.tasks import load_suite


def raw_generation_seconds(policy, steps) -> tuple[float, int]:
    """Time raw llama.cpp to generate the same number of tokens from each step's exact prompt.

    Prompts are replayed in episode order without reset, so raw llama.cpp reuses its KV cache
    across an episode's turns exactly as the policy does: the same llama.cpp work on both sides.
    """
    llm = policy._llm  # noqa: SLF001 - the raw baseline is llama.cpp itself
    total, tokens = 0.0, 0
    for prompt, n, seed in steps:
        t = time.perf_counter()
        llm.set_seed(seed)  # the episode's seed for this turn: the same tokens, the same cache state
        for i, _ in enumerate(
            llm.generate(prompt, temp=0.7, top_k=0, top_p=1.0, min_p=0.0, repeat_penalty=1.0, reset=True)
        ):
            if i + 1 >= n:
                break
        total += time.perf_counter() - t
        tokens += n
    return total, tokens


def run(policy, tasks, harness: str, max_turns: int, concurrency: int):
    runner = EpisodeRunner(config=Config(), backend="local", store=None, bus=None)

    def agent(i: int):
        return lambda: ModelAgent(
            policy, get_harness(harness), temperature=0.7, seed=i, max_turns=max_turns, max_reply_tokens=128
        )

    t = time.perf_counter()
    _, results = runner.run(
        [EpisodeJob(task, agent(i)) for i, task in enumerate(tasks)],
        kind="bench",
        agent_label="model",
        tasks_path="builtin",
        concurrency=concurrency,
    )
    return results, time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=8)
    ap.add_argument("--max-turns", type=int, default=3)
    ap.add_argument("--harness", default="xml-bash")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "harness_overhead.json")
    args = ap.parse_args()

    policy = load_policy("bundled:smollm2-135m", n_ctx=4096, instances=2, llama_backend="instances")
    tasks = load_suite(builtin_tasks_dir()).split("eval")[: args.episodes]
    rows = []
    for concurrency in (1, 2):
        results, wall = run(policy, tasks, args.harness, args.max_turns, concurrency)
        steps = [s for r in results for s in r.steps]
        gen_tokens = sum(len(s.token_ids) for s in steps)
        gen_s = sum(s.generation_s for s in steps)
        agent_s = sum(r.phase_s.get("agent", 0.0) for r in results)
        rows.append(
            {
                "concurrency": concurrency,
                "episodes": len(results),
                "wall_s": round(wall, 2),
                "episodes_per_min": round(60 * len(results) / wall, 2),
                "tokens": gen_tokens,
                "tokens_per_s": round(gen_tokens / gen_s, 1) if gen_s else 0.0,
                "agent_turn_s": round(agent_s, 2),
                "results": results,
            }
        )
    # The raw baseline: the same prompts and token counts as the concurrency-1 episodes.
    base = rows[0]
    prompts = []
    for i, r in enumerate(sorted(base["results"], key=lambda r: r.episode_id)):
        ids = list(r.token_ids)
        for turn, s in enumerate(r.steps):
            prompts.append((ids[: s.prompt_tokens], max(1, len(s.token_ids)), i * 1000 + turn))
    raw_s, raw_tokens = raw_generation_seconds(policy, prompts)
    overhead = (base["agent_turn_s"] - raw_s) / raw_s if raw_s else 0.0
    for row in rows:
        row.pop("results")

    print(f"{'concurrency':<12}{'episodes':>9}{'wall s':>9}{'ep/min':>8}{'tokens':>8}{'tok/s':>8}")
    for row in rows:
        print(
            f"{row['concurrency']:<12}{row['episodes']:>9}{row['wall_s']:>9.2f}{row['episodes_per_min']:>8.2f}"
            f"{row['tokens']:>8}{row['tokens_per_s']:>8.1f}"
        )
    print(
        f"\nraw llama.cpp, same prompts and token counts: {raw_s:.2f} s for {raw_tokens} tokens "
        f"({raw_tokens / raw_s:.1f} tok/s)"
    )
    print(
        f"agent turns at concurrency 1: {base['agent_turn_s']:.2f} s -> harness + sandbox overhead "
        f"{overhead:+.1%} (target under 5%)"
    )
    payload = {
        "harness": args.harness,
        "max_turns": args.max_turns,
        "rows": rows,
        "raw_generation_s": round(raw_s, 3),
        "raw_tokens": raw_tokens,
        "overhead_fraction": round(overhead, 4),
        "target_met": overhead < 0.05,
    }
    write_results(args.out, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
