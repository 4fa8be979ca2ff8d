"""What both llama.cpp backends share: a GGUF file loaded in llama-cpp-python, with the chat
template, tokenizer and end-of-turn tokens it carries, and the arithmetic of exact sampling.

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
from pathlib import Path

import numpy as np

from engine.policy.base import END_OF_TURN_MARKERS, LocalPolicy, Messages, PolicyError, Tools

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


def thread_budget(threads: int | None) -> int:
    """The threads a backend decodes with: `threads`, else one per core."""
    return threads or os.cpu_count() or 1


class GgufChat(LocalPolicy):
    """What both llama.cpp backends share: the GGUF's chat template, its tokenizer and its
    end-of-turn tokens, all read from one loaded `Llama` (`self._llm`).

    `llama_params` go to that `Llama`; `n_ctx` is the context an episode's buffer may fill."""

    def __init__(self, path: Path, *, name: str, n_ctx: int, llama_params: dict) -> None:
        import jinja2.sandbox

        self.name = name or f"gguf:{path}"
        self.path = Path(path)
        self._llm = llm = load_llama(path, **llama_params)
        meta = llm.metadata
        template = meta.get("tokenizer.chat_template")
        if not template:
            raise PolicyError(f"{self.path} carries no chat template (tokenizer.chat_template)")
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


def common_prefix(a, b) -> int:
    """How many leading tokens `a` and `b` share."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def min_p_keep(logits, min_p: float) -> np.ndarray | None:
    """Which tokens min-p sampling may draw: those at least `min_p` times as likely as the likeliest
    at T = 1 (logit >= top + log min_p), as llama.cpp's min-p sampler keeps them; None when min_p is
    0 (all of them)."""
    if min_p <= 0:
        return None
    raw = np.asarray(logits, dtype=np.float64)
    return raw >= float(raw.max()) + math.log(min_p)


def log_softmax(logits, temperature: float) -> np.ndarray:
    """log softmax(logits / T) in float64; T = 0 (greedy) is scored under the raw softmax."""
    scaled = np.asarray(logits, dtype=np.float64)
    if temperature > 0:
        scaled = scaled / temperature
    top = float(scaled.max())
    return scaled - (top + math.log(float(np.exp(scaled - top).sum())))
