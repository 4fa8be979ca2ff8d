"""What an episode produces, as plain values: checks, agent steps, the episode's result.

These cross every layer (rollout produces them, the store keeps them, events carry them, the
TUI shows them), so they live below all of them and import nothing of the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

CheckStatus = Literal["passed", "failed", "skipped", "error"]


@dataclass(frozen=True)
class CheckResult:
    name: str
    status: CheckStatus
    message: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclass(frozen=True)
class AgentStep:
    command: str
    output: str
    exit_code: int | None
    timed_out: bool
    duration_s: float
    # Model-driven steps: the reply, its exact sampled tokens, and what went wrong parsing it.
    action_text: str = ""
    token_ids: tuple[int, ...] = ()
    logprobs: tuple[float, ...] = ()
    prompt_tokens: int = 0
    parse_error: str = ""
    generation_s: float = 0.0


EpisodeStatus = Literal["completed", "agent_timeout", "verifier_timeout", "verifier_error", "infra_error"]


@dataclass(frozen=True)
class EpisodeResult:
    episode_id: str
    run_id: str
    task: str
    split: str | None
    agent: str
    backend: str
    attempt: int
    status: EpisodeStatus
    success: bool
    checks_passed: int
    checks_total: int
    reward: float | None
    failure_mode: str = ""
    error: str = ""
    checks: tuple[CheckResult, ...] = ()
    steps: tuple[AgentStep, ...] = ()
    verifier_source: str = ""
    verifier_output: str = ""
    started_at: str = ""
    duration_s: float = 0.0
    phase_s: dict[str, float] = field(default_factory=dict)
    # Limits the sandbox hit (oom_kill, pids_limit) and output_capped: why a run went wrong.
    resource_events: tuple[str, ...] = ()
    # Model agents: why the agent's turn ended, and the episode's token buffer with its mask.
    stop_reason: str = ""
    token_ids: tuple[int, ...] = ()
    token_mask: tuple[int, ...] = ()
    messages: tuple[dict, ...] = ()
    harness: str = ""
    model: str = ""

    @property
    def scored(self) -> bool:
        """False for infrastructure failures, which must never be treated as a zero reward."""
        return self.reward is not None

    def summary(self) -> dict[str, object]:
        return {
            "episode_id": self.episode_id,
            "task": self.task,
            "split": self.split,
            "agent": self.agent,
            "backend": self.backend,
            "attempt": self.attempt,
            "status": self.status,
            "success": self.success,
            "checks_passed": self.checks_passed,
            "checks_total": self.checks_total,
            "reward": self.reward,
            "failure_mode": self.failure_mode,
            "error": self.error,
            "resource_events": list(self.resource_events),
            "stop_reason": self.stop_reason,
            "checks": [{"name": c.name, "status": c.status} for c in self.checks],
            "duration_s": round(self.duration_s, 3),
        }
