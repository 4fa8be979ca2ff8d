"""The one llama.cpp context the batched backend decodes in, and the raw operations on it.

`slots` sequences, each in its own stream of `n_ctx` KV cells (not one unified pool: in a unified
cache every token attends over every sequence's cells, masked, and decoding at batch 8 ran at
half the speed), the LoRA adapter applied, and one reusable batch of `N_BATCH` entries. Flash
attention stays off: with it, the log-probabilities moved by up to 0.18 nats from the
single-sequence path; without it, both paths give the same tokens and log-probabilities.
"""

from __future__ import annotations

import ctypes
import threading
from pathlib import Path

import numpy as np

from engine.policy.base import PolicyError

# Tokens per llama_decode call: one sequence's prompt chunk, or the next token of every sequence.
N_BATCH = 512
# One batch computes at a time in this process, whichever context it is for (an RSR planner
# served apart from the actor, two runs started from the TUI). Each context's threads take all
# the cores and wait for each other at every operation by spinning; two contexts computing at
# once would leave each thread spinning through the time slice of a thread it waits for.
_COMPUTE = threading.Lock()


def put_token(batch, i: int, token: int, pos: int, seq: int, logits: bool) -> None:
    """Entry `i` of a llama_batch: `token` at position `pos` of sequence `seq`, its logits kept
    or not."""
    batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.seq_id[i][0], batch.logits[i] = token, pos, 1, seq, logits


def context_params(*, n_ctx: int, slots: int, threads: int):
    """The llama.cpp context the scheduler decodes in (bench/rollout.py measures the same one)."""
    import llama_cpp as L

    params = L.llama_context_default_params()
    params.n_ctx = n_ctx * slots  # one stream of n_ctx cells per slot
    params.n_batch = N_BATCH
    params.n_ubatch = N_BATCH
    params.n_seq_max = slots
    params.n_threads = threads
    params.n_threads_batch = threads
    params.kv_unified = False
    params.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_DISABLED
    params.no_perf = True
    return params


class BatchContext:
    """A llama.cpp context of `slots` sequences over the weights `llm` holds, with its batch.
    Not thread-safe: one thread (the scheduler's) uses it, and `free` ends it."""

    def __init__(self, llm, *, slots: int, n_ctx: int, threads: int, lora: Path | None):
        import llama_cpp as L

        self.L = L
        self._llm = llm  # keeps the model alive as long as the context
        self.n_vocab = llm.n_vocab()
        params = context_params(n_ctx=n_ctx, slots=slots, threads=threads)
        self.ctx = L.llama_init_from_model(llm._model.model, params)  # noqa: SLF001 - the loaded model, shared with the tokenizer
        if not self.ctx:
            raise PolicyError(f"llama.cpp could not create a context of {n_ctx} tokens for each of {slots} sequences")
        self._adapter = None
        if lora is not None:
            self._adapter = L.llama_adapter_lora_init(llm._model.model, str(lora).encode())  # noqa: SLF001
            if not self._adapter:
                L.llama_free(self.ctx)
                raise PolicyError(f"llama.cpp could not load the LoRA adapter {lora}")
            adapters = (L.llama_adapter_lora_p_ctypes * 1)(self._adapter)
            scales = (ctypes.c_float * 1)(1.0)
            if L.llama_set_adapters_lora(self.ctx, adapters, 1, scales):
                L.llama_free(self.ctx)
                raise PolicyError(f"llama.cpp could not apply the LoRA adapter {lora}")
        self.mem = L.llama_get_memory(self.ctx)
        self.batch = L.llama_batch_init(N_BATCH, 0, 1)

    def put(self, i: int, token: int, pos: int, seq: int, logits: bool) -> None:
        put_token(self.batch, i, token, pos, seq, logits)

    def decode(self, n: int) -> int:
        """Compute the batch's first `n` entries; llama_decode's code (0 done, 1 no room left)."""
        self.batch.n_tokens = n
        with _COMPUTE:
            return self.L.llama_decode(self.ctx, self.batch)

    def logits(self, row: int) -> np.ndarray:
        """The logits of batch entry `row` of the last decode (llama.cpp's buffer, not a copy)."""
        return np.ctypeslib.as_array(self.L.llama_get_logits_ith(self.ctx, row), shape=(self.n_vocab,))

    def remove(self, seq: int, start: int = -1, end: int = -1) -> None:
        """Drop sequence `seq`'s cells at positions [start, end) (-1: open-ended)."""
        self.L.llama_memory_seq_rm(self.mem, seq, start, end)

    def save(self, seq: int):
        """Sequence `seq`'s KV cells as bytes (None if llama.cpp wrote none)."""
        L = self.L
        size = L.llama_state_seq_get_size(self.ctx, seq)
        buf = (ctypes.c_uint8 * size)()
        written = L.llama_state_seq_get_data(self.ctx, buf, size, seq)
        return (buf, written) if written else None

    def load(self, state, seq: int) -> bool:
        """Saved cells into sequence `seq`, whose stream holds nothing."""
        buf, written = state
        return self.L.llama_state_seq_set_data(self.ctx, buf, written, seq) == written

    def cells(self, seq: int) -> int:
        """The cells llama.cpp holds for sequence `seq` (pos_max + 1, 0 when empty)."""
        return int(self.L.llama_memory_seq_pos_max(self.mem, seq)) + 1

    def free(self) -> None:
        self.L.llama_batch_free(self.batch)
        self.L.llama_free(self.ctx)
        if self._adapter:
            self.L.llama_adapter_lora_free(self._adapter)
