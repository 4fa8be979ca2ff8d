"""llama.cpp (llama-cpp-python) serving a GGUF file, with the exact sampled token ids.

Prompts are rendered with the chat template stored in the GGUF, then tokenized by llama.cpp.
Sampling uses no truncation (top-k, top-p and min-p off, no repeat penalty), so the recorded
log-probability of each sampled token is exactly its probability under softmax(logits / T),
the distribution it was drawn from (raw softmax at temperature 0, which is greedy).
"""

from __future__ import annotations

import functools
import logging
import math
import os
import threading
import time
from pathlib import Path

import numpy as np

from engine.policy.base import END_OF_TURN_MARKERS, Generation, LocalPolicy, Messages, PolicyError, StopAt, Tools

log = logging.getLogger(__name__)

_LOAD_LOCK = threading.Lock()


def openmp_build() -> bool:
    """Whether llama.cpp runs its threads on OpenMP (llama-cpp-python's default build)."""
    import llama_cpp

    return b"OPENMP = 1" in llama_cpp.llama_print_system_info()


@functools.cache
def warn_if_openmp() -> None:
    """Once per process: an OpenMP build slows down beside torch, and says so in the log.

    libgomp throttles the waiting of every thread team in the process once the teams together
    hold more threads than there are cores. After torch (itself on OpenMP) has run in one
    thread, llama.cpp decoding in another waits on futexes at each of its barriers: 1.8x fewer
    episodes per minute, 3x fewer tokens per second in one sequence (docs/benchmarks.md).
    `.ci/setup` builds llama.cpp without OpenMP."""
    if openmp_build():
        log.warning(
            "llama.cpp is an OpenMP build: once torch has trained in this process, decoding runs up to 3x"
            " slower. Rebuild it on ggml's own threads: bash .ci/setup (it sets -DGGML_OPENMP=OFF)"
        )


def load_llama(path: Path, **kwargs):
    """A llama-cpp-python `Llama` for `path`; failures become PolicyError."""
    try:
        from llama_cpp import Llama
    except ImportError:
        raise PolicyError("the llama.cpp backend needs llama-cpp-python: pip install llama-cpp-python") from None
    # llama-cpp-python silences loading by dup2-ing fds 1 and 2 to /dev/null and back; two
    # threads doing that at once can leave stdout pointing at /dev/null for good.
    warn_if_openmp()
    try:
        with _LOAD_LOCK:
            return Llama(model_path=str(path), verbose=False, seed=0, **kwargs)
    except (ValueError, RuntimeError) as exc:
        raise PolicyError(f"llama.cpp could not load {path}: {exc}") from None


class GgufChat(LocalPolicy):
    """What both llama.cpp backends share: the GGUF's chat template, its tokenizer and its
    end-of-turn tokens, all read from one loaded `Llama` (`self._llm`)."""

    def _init_chat(self, llm, path: Path, n_ctx: int) -> None:
        import jinja2.sandbox

        self._llm = llm
        meta = llm.metadata
        template = meta.get("tokenizer.chat_template")
        if not template:
            raise PolicyError(f"{path} carries no chat template (tokenizer.chat_template)")
        env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        self._template = env.from_string(template)
        self._bos = self._token_text(llm.token_bos())
        self._eos = self._token_text(llm.token_eos())
        # End-of-turn tokens: EOS plus the template's turn terminator if the vocabulary has one.
        self._stop_ids = {llm.token_eos()}
        for marker in END_OF_TURN_MARKERS:
            ids = llm.tokenize(marker.encode(), add_bos=False, special=True)
            if len(ids) == 1:
                self._stop_ids.add(ids[0])
        self.n_ctx = n_ctx
        self._n_vocab = llm.n_vocab()

    def _token_text(self, token: int) -> str:
        if token < 0:
            return ""
        return self._llm.detokenize([token], special=True).decode("utf-8", errors="replace")

    # -- prompts ---------------------------------------------------------------------------
    def render(self, messages: Messages, *, add_generation_prompt: bool, tools: Tools | None = None) -> str:
        return self._template.render(
            messages=messages,
            tools=tools,
            add_generation_prompt=add_generation_prompt,
            bos_token=self._bos,
            eos_token=self._eos,
        )

    def tokenize_chat(
        self, messages: Messages, *, add_generation_prompt: bool, tools: Tools | None = None
    ) -> list[int]:
        text = self.render(messages, add_generation_prompt=add_generation_prompt, tools=tools)
        return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def tokenize_text(self, text: str) -> list[int]:
        return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    @property
    def stop_ids(self) -> frozenset[int]:
        return frozenset(self._stop_ids)

    supports_stop_at = True

    def _text(self, ids: list[int]) -> str:
        """The reply's text: the sampled tokens without the end-of-turn token."""
        return self._llm.detokenize([t for t in ids if t not in self._stop_ids]).decode("utf-8", errors="replace")


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
    ) -> None:
        self.name = name or f"gguf:{path}"
        self.path = Path(path)
        # The contexts decode at the same time, so they share the thread budget (the machine's
        # cores by default): llama.cpp's threads spin while they wait for each other, and more
        # threads than cores leave them spinning through each other's time slices.
        per_context = max(1, (threads or os.cpu_count() or 1) // max(1, instances))

        def make():
            return load_llama(
                path,
                n_ctx=n_ctx,
                n_threads=per_context,
                n_threads_batch=per_context,
                lora_path=str(lora) if lora else None,
            )

        self._make = make
        self._init_chat(make(), self.path, n_ctx)  # the first instance: template, vocabulary and tokenizer
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
                prompt, temp=temperature, top_k=0, top_p=1.0, min_p=0.0, typical_p=1.0, repeat_penalty=1.0, reset=True
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


def common_prefix(a, b) -> int:
    """How many leading tokens `a` and `b` share."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def log_softmax(logits, temperature: float) -> np.ndarray:
    """log softmax(logits / T) in float64; T = 0 (greedy) is scored under the raw softmax."""
    scaled = np.asarray(logits, dtype=np.float64)
    if temperature > 0:
        scaled = scaled / temperature
    top = float(scaled.max())
    return scaled - (top + math.log(float(np.exp(scaled - top).sum())))


def _logprob(logits, token: int, temperature: float) -> float:
    return float(log_softmax(logits, temperature)[token])
