"""llama.cpp (llama-cpp-python) serving a GGUF file from a pool of contexts, one sequence each,
with the exact sampled token ids. What both llama.cpp backends share (the GGUF, its chat
template, exact sampling) is in `llamacpp_chat.py`.
"""

from __future__ import annotations

import functools
import threading
import time
from pathlib import Path

import numpy as np

from engine.policy.base import Generation, PolicyError, StopAt
from engine.policy.llamacpp_chat import (
    GgufChat,
    common_prefix,
    load_llama,
    log_softmax,
    openmp_build,
    thread_budget,
    warn_if_openmp,
)

# LlamaCppPolicy, and the shared names importers took from here before llamacpp_chat.py held them.
__all__ = ["GgufChat", "LlamaCppPolicy", "common_prefix", "load_llama", "log_softmax", "openmp_build", "warn_if_openmp"]


class LlamaCppPolicy(GgufChat):
    """One llama.cpp context per concurrent episode, each decoding one sequence.

    Kept beside the batched backend (`engine.policy.llamacpp_batched`, the default) as the anchor
    that `bench/rollout.py` measures it against, and because its tokens do not depend on which
    other episodes run at the same time (`[policy] llama_backend = "instances"`).

    `instances` > 1 keeps that many llama.cpp contexts (the weights are shared through mmap);
    each call takes the free one whose cached tokens share the longest prefix with the prompt, so
    concurrent episodes keep their own KV cache instead of evicting each other's."""

    def __init__(
        self,
        path: Path,
        *,
        name: str = "",
        n_ctx: int = 4096,
        threads: int | None = None,
        instances: int = 1,
        lora: Path | None = None,
        min_p: float = 0.0,
    ) -> None:
        self.min_p = min_p  # [policy] min_p, applied by llama.cpp's own min-p sampler
        # The contexts decode at the same time, so they share the thread budget (the machine's
        # cores by default): llama.cpp's threads spin while they wait for each other, and more
        # threads than cores leave them spinning through each other's time slices.
        per_context = max(1, thread_budget(threads) // max(1, instances))
        params = dict(
            n_ctx=n_ctx, n_threads=per_context, n_threads_batch=per_context, lora_path=str(lora) if lora else None
        )
        self._make = functools.partial(load_llama, path, **params)
        super().__init__(path, name=name, n_ctx=n_ctx, llama_params=params)  # the first instance
        self._free = [self._llm]
        self._count = 1
        self._max_instances = max(1, instances)
        self._pool = threading.Condition()

    # -- the instance pool -----------------------------------------------------------------
    def _acquire(self, prompt: list[int]):
        with self._pool:
            while True:
                if self._free:
                    best = max(self._free, key=lambda llm: _shared_prefix(llm, prompt))
                    if _shared_prefix(best, prompt) == 0 and self._count < self._max_instances:
                        break  # nobody holds this conversation: a fresh instance keeps the others' caches
                    self._free.remove(best)
                    return best
                if self._count < self._max_instances:
                    break
                self._pool.wait()
            self._count += 1
        try:
            return self._make()
        except PolicyError:
            with self._pool:
                self._count -= 1
                self._pool.notify()
            raise

    def _release(self, llm) -> None:
        with self._pool:
            self._free.append(llm)
            self._pool.notify()

    def generate_ids(
        self, prompt: list[int], *, max_tokens: int, temperature: float, seed: int | None = None, stop_at: StopAt = None
    ) -> Generation:
        """Continue exactly the token ids given (an episode's token buffer); with `stop_at`, stop
        once the text so far holds a complete action."""
        budget = self.token_budget(prompt, max_tokens)
        if budget == 0:
            return Generation("", (), (), len(prompt), "context_full")
        start, finish = time.monotonic(), "length"
        ids, logprobs = [], []  # the sampled token ids, and each one's log-probability
        text_bytes = bytearray()
        llm = self._acquire(prompt)
        try:
            if seed is not None:
                llm.set_seed(seed)
            # No reset(): generate() keeps the KV cache of the longest prefix shared with the previous
            # call (an episode's buffer only grows) and always re-evaluates the last prompt token.
            for token in llm.generate(
                prompt,
                temp=temperature,
                top_k=0,
                top_p=1.0,
                min_p=self.min_p,
                typical_p=1.0,
                repeat_penalty=1.0,
                reset=True,
            ):
                # At yield time the context's last logits are the row this token was sampled from
                # (llama-cpp-python keeps no Python copy unless logits_all, which costs memory).
                logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(self._n_vocab,))  # noqa: SLF001 - llama-cpp-python exposes the sampled row's logits only here
                logprobs.append(_logprob(logits, token, temperature))
                ids.append(int(token))
                if token in self._stop_ids:
                    finish = "stop"
                    break
                if stop_at is not None:
                    text_bytes += self._llm.detokenize([token])
                    if stop_at(text_bytes.decode("utf-8", errors="ignore")):
                        finish = "action"
                        break
                if len(ids) >= budget:
                    break
        finally:
            self._release(llm)
        return Generation(
            self._text(ids), tuple(ids), tuple(logprobs), len(prompt), finish, [], time.monotonic() - start
        )


def _shared_prefix(llm, prompt: list[int]) -> int:
    return common_prefix(llm._input_ids, prompt)  # the tokens this instance's KV cache holds  # noqa: SLF001 - no public accessor


def _logprob(logits, token: int, temperature: float) -> float:
    return float(log_softmax(logits, temperature)[token])
