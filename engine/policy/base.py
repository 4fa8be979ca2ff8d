"""The policy contract: chat messages in, a reply with its exact sampled tokens out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


class PolicyError(RuntimeError):
    """The model could not be loaded or could not generate (an infrastructure problem)."""


@dataclass(frozen=True)
class Generation:
    text: str
    # The exact sampled token ids and their log-probabilities under the sampling distribution,
    # where the backend can give them (empty otherwise).
    token_ids: tuple[int, ...] = ()
    logprobs: tuple[float, ...] = ()
    prompt_tokens: int = 0
    finish_reason: str = ""
    tool_calls: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    # Completion length when the ids themselves are not available (remote servers).
    completion_tokens: int = 0

    @property
    def n_generated(self) -> int:
        return len(self.token_ids) or self.completion_tokens


class Policy(Protocol):
    name: str

    def generate(self, messages: list[dict], *, max_tokens: int, temperature: float, seed: int | None = None,
                 tools: list[dict] | None = None) -> Generation: ...

    def tokenize_chat(self, messages: list[dict], *, add_generation_prompt: bool,
                      tools: list[dict] | None = None) -> list[int]: ...
