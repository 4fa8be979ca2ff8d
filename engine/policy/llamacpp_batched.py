"""llama.cpp serving every concurrent episode from one context: continuous batching.

Each episode's generation is one llama.cpp *sequence*. One scheduler thread owns the context and,
at every step, puts the next token of each decoding sequence (and chunks of the prompts still
being read) into a single batch, so the weights are read once per step for all of them. An
episode joins or leaves between steps: while one episode's command runs in its sandbox, the
others keep decoding.

This module is the policy the episodes call. `llamacpp_scheduler.py` holds the scheduler thread
and its batch loop (and says how it samples); `llamacpp_context.py` the llama.cpp context and
its raw operations (and why its cache and attention are set up as they are); `llamacpp_chat.py`
what this backend shares with the single-sequence one (`llamacpp.py`): the GGUF, its chat
template and tokenizer.

KV cache, one stream of `n_ctx` cells per slot:
- A slot keeps its episode's KV cells after a turn ends; the episode's next turn (its token
  buffer only grows) reads only the new observation tokens.
- A new sequence that starts with tokens another slot already holds (the system prompt and
  worked examples every episode of a harness shares) gets a copy of those cells (llama.cpp's
  per-sequence state, then truncated) instead of computing them again: on this CPU a prompt
  token costs about as much as a generated one.
- An idle slot's cells are dropped when its slot is needed, least recently used first.
- llama.cpp computes a batch over per-slot streams in runs of consecutive, increasing sequence
  ids, one pass over the weights per run: a step's tokens go in slot order, and a decoding
  sequence above a slot that decodes nothing (empty, or its episode waiting on a command)
  trades places with it (cells copied whole), so that a step is one pass. In arrival order,
  a batch of 3.5 sequences had taken 2.1 passes.
"""

from __future__ import annotations

import time
import weakref
from pathlib import Path

import numpy as np

from engine.policy.base import Generation, PolicyError, StopAt
from engine.policy.llamacpp_chat import GgufChat, thread_budget
from engine.policy.llamacpp_context import N_BATCH, context_params, put_token
from engine.policy.llamacpp_scheduler import Request, Scheduler

# The policy, and the context's pieces that bench/ and tests/ took from here before
# llamacpp_context.py held them.
__all__ = ["N_BATCH", "BatchedLlamaCppPolicy", "context_params", "put_token"]


class BatchedLlamaCppPolicy(GgufChat):
    """A GGUF model serving `slots` concurrent episodes from one llama.cpp context, at most
    `sequences` of them decoding in one batch (the rest wait their turn)."""

    def __init__(
        self,
        path: Path,
        *,
        name: str = "",
        n_ctx: int = 4096,
        threads: int | None = None,
        slots: int = 2,
        sequences: int = 8,
        lora: Path | None = None,
        min_p: float = 0.0,
    ) -> None:
        self.min_p = min_p  # [policy] min_p: every request samples with it
        # This Llama is the tokenizer and owns the weights; its own context is tiny and unused.
        super().__init__(path, name=name, n_ctx=n_ctx, llama_params=dict(n_ctx=64, n_batch=64, n_threads=1))
        llm = self._llm
        slots = max(1, slots)
        self._scheduler = Scheduler(
            llm,
            slots=slots,
            sequences=min(sequences, slots),
            n_ctx=n_ctx,
            threads=thread_budget(threads),
            lora=lora,
            detok=llm.detokenize,
        )
        self._finalizer = weakref.finalize(self, self._scheduler.close)

    def close(self) -> None:
        self._finalizer()

    @property
    def scheduler(self) -> Scheduler:
        return self._scheduler

    def generate(self, messages, **kwargs) -> Generation:
        """A one-off reply (a planner's runbook, a reviewer's verdict): nothing continues it, so
        its sequence is freed at once rather than holding a slot an episode may need."""
        gen = super().generate(messages, **kwargs)
        self.release(
            self.tokenize_chat(messages, add_generation_prompt=True, tools=kwargs.get("tools")) + list(gen.token_ids)
        )
        return gen

    def release(self, ids: list[int]) -> None:
        """The episode whose token buffer is `ids` has ended (finished, timed out or failed): its
        sequence's KV cells are freed for the next episode instead of waiting to be evicted."""
        self._scheduler.release(ids)

    def next_token_logprobs(self, prompt: list[int]) -> np.ndarray:
        """log softmax of the logits after `prompt` (T = 1), from the served model, adapter included."""
        req = self._request(prompt, 1, 1.0, None, None)
        req.want_row = True
        self._wait(req)
        return req.row

    def _request(self, prompt: list[int], budget: int, temperature: float, seed: int | None, stop_at: StopAt):
        if not prompt:
            raise PolicyError("an empty prompt cannot be continued")
        bad = next((t for t in prompt if not 0 <= t < self._n_vocab), None)
        if bad is not None:
            raise PolicyError(f"prompt token id {bad} is outside the vocabulary (0..{self._n_vocab - 1})")
        return Request(
            list(prompt),
            budget,
            temperature,
            np.random.default_rng(seed),
            stop_at,
            frozenset(self._stop_ids),
            min_p=self.min_p,
        )

    def _wait(self, req: Request) -> None:
        self._scheduler.submit(req)
        try:
            req.done.wait()
        finally:
            if not req.done.is_set():  # the waiting thread was interrupted: free the sequence
                req.cancelled = True
        if req.error:
            raise PolicyError(req.error)

    def generate_ids(
        self, prompt: list[int], *, max_tokens: int, temperature: float, seed: int | None = None, stop_at: StopAt = None
    ) -> Generation:
        """Continue exactly the token ids given (an episode's token buffer), batched with the other
        episodes' sequences; with `stop_at`, stop once the text so far holds a complete action."""
        budget = self.token_budget(prompt, max_tokens)
        if budget == 0:
            return Generation("", (), (), len(prompt), "context_full")
        req = self._request(prompt, budget, temperature, seed, stop_at)
        self._wait(req)
        return Generation(
            self._text(req.ids),
            tuple(req.ids),
            tuple(req.logprobs),
            len(prompt),
            req.finish,
            [],
            time.monotonic() - req.started,
        )
