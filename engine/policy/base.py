"""The policy contract: chat messages in, a reply with its exact sampled tokens out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

Messages = list[dict]  # chat messages: {"role": ..., "content": ...}
Tools = list[dict]  # OpenAI-style tool schemas
Seed = int | None  # a sampling seed; None leaves the backend to its own randomness
# Told the text generated so far; True once the reply holds a complete action (a closed code
# block, a closing tag): sampling stops there instead of running on to the token limit.
StopAt = Callable[[str], bool] | None


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

    def generate(
        self, messages: Messages, *, max_tokens: int, temperature: float, seed: Seed = None, tools: Tools | None = None
    ) -> Generation: ...

    def tokenize_chat(
        self, messages: Messages, *, add_generation_prompt: bool, tools: Tools | None = None
    ) -> list[int]: ...


# Turn terminators that chat templates use besides EOS (ChatML, Llama 3, Gemma).
END_OF_TURN_MARKERS = ("<|im_end|>", "<|eot_id|>", "<end_of_turn>")


class LocalPolicy:
    """What policies with a local tokenizer share: messages go through the chat template and
    then through `generate_ids`, the one method that samples (from an episode's token buffer)."""

    n_ctx: int

    def tokenize_chat(
        self, messages: Messages, *, add_generation_prompt: bool, tools: Tools | None = None
    ) -> list[int]:
        raise NotImplementedError

    # Backends that can stop sampling where an action ends take `stop_at=` in generate and generate_ids.
    supports_stop_at = False

    def generate_ids(
        self, prompt: list[int], *, max_tokens: int, temperature: float, seed: int | None = None
    ) -> Generation:
        raise NotImplementedError

    def generate(
        self,
        messages: Messages,
        *,
        max_tokens: int,
        temperature: float,
        seed: Seed = None,
        tools: Tools | None = None,
        **stop: StopAt,
    ) -> Generation:
        prompt = self.tokenize_chat(messages, add_generation_prompt=True, tools=tools)
        return self.generate_ids(prompt, max_tokens=max_tokens, temperature=temperature, seed=seed, **stop)

    def release(self, ids: list[int]) -> None:
        """The episode whose token buffer is `ids` has ended; backends that keep its KV cache free it."""

    def token_budget(self, prompt: list[int], max_tokens: int) -> int:
        """How many tokens may be sampled after `prompt`; 0 when the context is full."""
        if len(prompt) + 1 >= self.n_ctx:
            return 0
        return max(1, min(max_tokens, self.n_ctx - len(prompt) - 1))
