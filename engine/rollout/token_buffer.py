"""One append-only token buffer per episode: exactly what the model saw and sampled.

The model's next prompt *is* this buffer, so training later sees precisely the tokens the
policy conditioned on and sampled. Sampled ids go in unchanged (mask 1). An observation goes in
as the chat-template difference: the tokens that rendering the conversation with the new user
message adds after the rendering without it (mask 0). That only works when the template
preserves prefixes, which `check_prefix_preserving` verifies before an episode starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from engine.policy.base import PolicyError


class ChatTokenizer(Protocol):
    def tokenize_chat(
        self, messages: list[dict], *, add_generation_prompt: bool, tools: list[dict] | None = None
    ) -> list[int]: ...

    @property
    def stop_ids(self) -> frozenset[int]: ...

    def tokenize_text(self, text: str) -> list[int]:
        """Plain text (no chat template, no special tokens) as token ids: a reply prefix."""
        ...


def check_prefix_preserving(tok: ChatTokenizer, tools: list[dict] | None = None) -> None:
    convo = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u1"},
        {"role": "assistant", "content": "a1"},
    ]
    before = tok.tokenize_chat(convo, add_generation_prompt=False, tools=tools)
    after = tok.tokenize_chat(convo + [{"role": "user", "content": "u2"}], add_generation_prompt=True, tools=tools)
    if after[: len(before)] != before:
        raise PolicyError(
            "the chat template does not preserve prefixes: adding a turn changes earlier tokens, "
            "so an append-only token buffer cannot be built for this model"
        )


def end_of_turn(tok: ChatTokenizer) -> int | None:
    """The stop token the chat template closes an assistant turn with (<|im_end|> for ChatML);
    None where the template closes it with none."""
    ids = tok.tokenize_chat(
        [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}], add_generation_prompt=False
    )
    return next((t for t in reversed(ids) if t in tok.stop_ids), None)


@dataclass
class TokenBuffer:
    ids: list[int] = field(default_factory=list)
    # 1 on tokens the policy sampled, 0 on prompt, template and observation tokens.
    mask: list[int] = field(default_factory=list)

    @classmethod
    def start(cls, tok: ChatTokenizer, messages: list[dict], tools: list[dict] | None = None) -> "TokenBuffer":
        ids = tok.tokenize_chat(messages, add_generation_prompt=True, tools=tools)
        return cls(list(ids), [0] * len(ids))

    def add_sampled(self, ids: tuple[int, ...] | list[int]) -> None:
        self.ids.extend(ids)
        self.mask.extend([1] * len(ids))

    def add_prefix(self, ids: list[int]) -> None:
        """A reply prefix the harness wrote (Harness.reply_prefix): prompt, not sampled (mask 0)."""
        self.ids.extend(ids)
        self.mask.extend([0] * len(ids))

    def add_observation(
        self,
        tok: ChatTokenizer,
        messages: list[dict],
        observation: str,
        *,
        sampled_stopped: bool,
        tools: list[dict] | None = None,
    ) -> None:
        """`messages` ends with the assistant's reply; `observation` is the next user message."""
        before = tok.tokenize_chat(messages, add_generation_prompt=False, tools=tools)
        after = tok.tokenize_chat(
            messages + [{"role": "user", "content": observation}], add_generation_prompt=True, tools=tools
        )
        if after[: len(before)] != before:
            raise PolicyError("the chat template changed earlier tokens when a turn was added")
        # Close the assistant turn as the template does: what `before` has after its last stop
        # token (e.g. a newline after <|im_end|>), plus the stop token itself if the sample was cut.
        last_stop = max((i for i, t in enumerate(before) if t in tok.stop_ids), default=None)
        closing = before[last_stop + 1 :] if last_stop is not None else []
        if not sampled_stopped and last_stop is not None:
            closing = [before[last_stop]] + closing
        glue = closing + after[len(before) :]
        self.ids.extend(glue)
        self.mask.extend([0] * len(glue))
