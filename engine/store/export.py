"""Stored episodes as files other tools read: JSON Lines, or Harbor's ATIF trajectories.

- `jsonl`: one episode per line: task, outcome, checks, reward, the conversation as chat messages,
  every step's reply with its exact token ids and log-probabilities, and the episode's token
  buffer with the sampled-token mask (what training consumes).
- `atif`: one ATIF-v1.4 trajectory per line (Agent Trajectory Interchange Format): system and
  user steps for the opening messages, then one agent step per turn with its commands as
  tool calls, the observation, and metrics (prompt/completion tokens, completion token ids,
  log-probabilities).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from engine.store import Store
from engine.store.records import EpisodeRecord

ATIF_VERSION = "ATIF-v1.4"
AGENT_VERSION = "0.1.0"


def _conversation(messages: list[dict], steps) -> list[dict]:
    convo = [dict(m) for m in messages]
    for s in steps:
        convo.append({"role": "assistant", "content": s.action_text or s.command})
        convo.append({"role": "user", "content": s.output})
    return convo


def jsonl_record(store: Store, e: EpisodeRecord) -> dict:
    steps = store.runs.steps(e.id)
    model = store.runs.episode_model(e.id)
    return {
        "episode_id": e.id,
        "run_id": e.run_id,
        "task": e.task,
        "split": e.split,
        "agent": e.agent,
        "model": model.model,
        "harness": model.harness,
        "status": e.status,
        "success": e.success,
        "checks_passed": e.checks_passed,
        "checks_total": e.checks_total,
        "reward": e.reward,
        "failure_mode": e.failure_mode,
        "stop_reason": e.stop_reason,
        "checks": [{"name": c.name, "status": c.status} for c in store.runs.checks(e.id)],
        "messages": _conversation(model.messages, steps),
        "steps": [
            {
                "command": s.command,
                "action_text": s.action_text,
                "observation": s.output,
                "token_ids": list(s.token_ids),
                "logprobs": list(s.logprobs),
                "prompt_tokens": s.prompt_tokens,
                "parse_error": s.parse_error,
                "exit_code": s.exit_code,
                "duration_s": s.duration_s,
            }
            for s in steps
        ],
        "token_ids": model.ids,
        "loss_mask": model.mask,
    }


def atif_trajectory(store: Store, e: EpisodeRecord) -> dict:
    steps = store.runs.steps(e.id)
    model = store.runs.episode_model(e.id)
    out: list[dict] = []
    for m in model.messages:
        out.append(
            {
                "step_id": len(out) + 1,
                "source": "system" if m.get("role") == "system" else "user",
                "message": m.get("content", ""),
            }
        )
    for i, s in enumerate(steps):
        calls = [
            {"tool_call_id": f"{e.id}-{i}-{j}", "function_name": "bash", "arguments": {"command": c}}
            for j, c in enumerate(x for x in s.command.split("\n") if x)
        ]
        step: dict = {
            "step_id": len(out) + 1,
            "source": "agent",
            "message": s.action_text or s.command,
            "observation": {"results": [{"content": s.output}]},
        }
        if model.model:
            step["model_name"] = model.model
        if calls:
            step["tool_calls"] = calls
            step["observation"]["results"][0]["source_call_id"] = calls[-1]["tool_call_id"]
        if s.token_ids:
            step["metrics"] = {
                "prompt_tokens": s.prompt_tokens,
                "completion_tokens": len(s.token_ids),
                "completion_token_ids": list(s.token_ids),
                "logprobs": list(s.logprobs),
            }
        if s.parse_error:
            step["extra"] = {"parse_error": s.parse_error}
        out.append(step)
    return {
        "schema_version": ATIF_VERSION,
        "session_id": e.id,
        "agent": {
            "name": f"trsi-tui/{e.agent}",
            "version": AGENT_VERSION,
            **({"model_name": model.model} if model.model else {}),
            "extra": {"harness": model.harness} if model.harness else {},
        },
        "steps": out,
        "final_metrics": {
            "total_prompt_tokens": sum(s.prompt_tokens for s in steps),
            "total_completion_tokens": sum(len(s.token_ids) for s in steps),
            "total_steps": len(out),
        },
        "extra": {
            "task": e.task,
            "success": e.success,
            "reward": e.reward,
            "checks_passed": e.checks_passed,
            "checks_total": e.checks_total,
            "status": e.status,
            "stop_reason": e.stop_reason,
        },
    }


def export_run(store: Store, run_id: str, fmt: str, path: Path) -> int:
    convert = {"jsonl": jsonl_record, "atif": atif_trajectory}[fmt]
    episodes = store.runs.episodes(run_id)
    with Path(path).open("w") as fh:
        for line in _lines(store, episodes, convert):
            fh.write(line + "\n")
    return len(episodes)


def _lines(store: Store, episodes: list[EpisodeRecord], convert) -> Iterator[str]:
    for e in episodes:
        yield json.dumps(convert(store, e), ensure_ascii=False)
