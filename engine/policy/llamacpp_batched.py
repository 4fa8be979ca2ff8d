"""llama.cpp serving every concurrent episode from one context: continuous batching.

Each episode's generation is one llama.cpp *sequence*. One scheduler thread owns the context and,
at every step, puts the next token of each decoding sequence (and chunks of the prompts still
being read) into a single batch, so the weights are read once per step for all of them. An
episode joins or leaves between steps: while one episode's command runs in its sandbox, the
others keep decoding.

KV cache (one stream of `n_ctx` cells per slot, not one unified pool: in a unified cache every
token attends over every sequence's cells, masked, and decoding at batch 8 ran at half the speed):
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

Flash attention stays off: with it, the log-probabilities moved by up to 0.18 nats from the
single-sequence path; without it, both paths give the same tokens and log-probabilities.

Sampling is exact and per episode: each request draws from softmax(logits / T) with its own
`numpy` generator seeded by the request's seed (argmax at T = 0) and records the log-probability
of each sampled token under that distribution, as the single-sequence backend does. No
truncation (top-k, top-p, min-p) and no penalties.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.policy.base import Generation, PolicyError, StopAt
from engine.policy.llamacpp import GgufChat, common_prefix, load_llama, log_softmax

log = logging.getLogger(__name__)

# Tokens per llama_decode call: one sequence's prompt chunk, or the next token of every sequence.
N_BATCH = 512
# A shared prefix shorter than this is not worth copying cells for.
MIN_SHARED_PREFIX = 16
# One batch computes at a time in this process, whichever context it is for (an RSR planner
# served apart from the actor, two runs started from the TUI). Each context's threads take all
# the cores and wait for each other at every operation by spinning; two contexts computing at
# once would leave each thread spinning through the time slice of a thread it waits for.
_COMPUTE = threading.Lock()


def put_token(batch, i: int, token: int, pos: int, seq: int, logits: bool) -> None:
    """Entry `i` of a llama_batch: `token` at position `pos` of sequence `seq`, its logits kept
    or not."""
    batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.seq_id[i][0], batch.logits[i] = token, pos, 1, seq, logits


@dataclass(eq=False)
class _Request:
    prompt: list[int]
    budget: int
    temperature: float
    rng: np.random.Generator
    stop_at: StopAt
    stop_ids: frozenset[int]
    pending: list[int] = field(default_factory=list)  # prompt tokens not yet in the KV cache
    ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    text: bytearray = field(default_factory=bytearray)
    finish: str = "length"
    error: str = ""
    slot: _Slot | None = None
    done: threading.Event = field(default_factory=threading.Event)
    cancelled: bool = False
    row: np.ndarray | None = None  # with want_row: the first step's log-softmax(logits / T), whole
    want_row: bool = False
    started: float = field(default_factory=time.monotonic)


@dataclass(eq=False)
class _Slot:
    seq: int
    tokens: list[int] = field(default_factory=list)  # the tokens whose KV cells this sequence holds, in order
    request: _Request | None = None
    last_used: float = 0.0


def sample_token(logits: np.ndarray, temperature: float, rng: np.random.Generator) -> tuple[int, float]:
    """A token drawn from softmax(logits / T) and its log-probability under it (argmax at T = 0,
    scored under the raw softmax)."""
    logp = log_softmax(logits, temperature)
    if temperature > 0:
        cdf = np.cumsum(np.exp(logp))
        token = min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")), len(cdf) - 1)
    else:
        token = int(np.argmax(logp))
    return token, float(logp[token])


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


class _Scheduler:
    """Owns the llama.cpp context; only its thread touches it. Holds no reference to the policy,
    so a policy that is dropped stops its scheduler and frees the context."""

    def __init__(self, llm, *, slots: int, sequences: int, n_ctx: int, threads: int, lora: Path | None, detok):
        import llama_cpp as L

        self.L = L
        self._llm = llm  # keeps the model alive as long as the context
        self._detok = detok
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
        self.slots = [_Slot(i) for i in range(slots)]
        self.sequences = max(1, sequences)
        self.n_ctx = n_ctx
        self.queue: deque[_Request] = deque()
        self.releases: list[list[int]] = []
        self.active: list[_Request] = []
        self.cond = threading.Condition()
        self.closed = False
        # Counters for benches and tests. The time split says where a run's generation time
        # went: batches of next tokens, against chunks of prompts read one sequence at a time.
        self.batch_tokens = 0
        self.shared_prefix_tokens = 0
        self.moved_sequences = 0
        self.decode_steps = 0
        self.decode_passes = 0  # runs of consecutive sequence ids: llama.cpp's passes over the weights
        self.decode_tokens = 0
        self.decode_seconds = 0.0
        self.prompt_tokens = 0
        self.prompt_seconds = 0.0
        self.thread = threading.Thread(target=self._loop, name="llama-batch", daemon=True)
        self.thread.start()

    # -- called from episode threads ---------------------------------------------------------
    def release(self, ids: list[int]) -> None:
        """An episode whose buffer is `ids` has ended: empty the idle slot that holds it."""
        with self.cond:
            self.releases.append(list(ids))
            self.cond.notify()

    def submit(self, req: _Request) -> None:
        with self.cond:
            if self.closed:
                raise PolicyError("the batched llama.cpp policy is closed")
            self.queue.append(req)
            self.cond.notify()

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify()
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout=30)

    # -- the scheduler thread ----------------------------------------------------------------
    def _loop(self) -> None:
        try:
            while True:
                with self.cond:
                    while not self.closed and not self.queue and not self.active and not self.releases:
                        self.cond.wait()
                    if self.closed:
                        break
                    self._release_ended()
                    self._admit()
                if self.active:
                    self._step()
        except Exception as exc:  # a bug here must fail the waiting episodes, not hang them
            log.exception("the llama.cpp batch scheduler failed")
            for req in [*self.active, *self.queue]:
                self._finish(req, error=f"the llama.cpp batch scheduler failed: {exc}")
        finally:
            for req in [*self.active, *self.queue]:
                self._finish(req, error="the batched llama.cpp policy was closed")
            self.L.llama_batch_free(self.batch)
            self.L.llama_free(self.ctx)
            if self._adapter:
                self.L.llama_adapter_lora_free(self._adapter)

    def _release_ended(self) -> None:
        for ids in self.releases:
            for slot in self.slots:
                if slot.request is None and slot.tokens and common_prefix(slot.tokens, ids) == len(slot.tokens):
                    self._drop_cache(slot)
        self.releases.clear()

    def _admit(self) -> None:
        while self.queue and len(self.active) < self.sequences:
            idle = [s for s in self.slots if s.request is None]
            if not idle:
                return
            req = self.queue.popleft()
            if req.cancelled:
                req.done.set()
                continue
            self._assign(req, idle)
            self.active.append(req)

    def _assign(self, req: _Request, idle: list[_Slot]) -> None:
        prompt = req.prompt
        # The episode's own slot: every cell it holds is a prefix of the prompt (its token buffer
        # only grows), so the next turn appends after them.
        own = [s for s in idle if s.tokens and common_prefix(s.tokens, prompt) == len(s.tokens)]
        if own:
            slot = max(own, key=lambda s: len(s.tokens))
            keep = min(len(slot.tokens), len(prompt) - 1)  # the last prompt token is read again for its logits
        else:
            # Never cut into another episode's cells: an empty slot, else the least recently used,
            # cleared whole. Cells written into an emptied stream lie in the same order whatever
            # ran before, so the episode's numbers do not depend on the slot's history.
            empty = [s for s in idle if not s.tokens]
            slot = empty[0] if empty else min(idle, key=lambda s: s.last_used)
            self._drop_cache(slot)
            keep = 0
            donor, shared = None, 0
            for other in self.slots:
                n = min(common_prefix(other.tokens, prompt), len(prompt) - 1)
                if other is not slot and n > shared:
                    donor, shared = other, n
            if donor is not None and shared >= MIN_SHARED_PREFIX and self._copy_cells(donor.seq, slot.seq):
                self.shared_prefix_tokens += shared
                keep = shared
        self.L.llama_memory_seq_rm(self.mem, slot.seq, keep, -1)
        slot.tokens = prompt[:keep]
        slot.request = req
        req.slot = slot
        req.pending = prompt[keep:]

    def _copy_cells(self, src: int, dst: int) -> bool:
        """Copy sequence `src`'s KV cells into `dst` (across streams, llama.cpp's seq_cp copies only
        whole buffers, and lazily; the sequence state copies now)."""
        state = self._save(src)
        if state is not None and self._load(state, dst):
            return True
        log.warning("copying KV cells from sequence %d to %d failed; the prompt is read again", src, dst)
        self.L.llama_memory_seq_rm(self.mem, dst, -1, -1)
        return False

    def _save(self, seq: int):
        """Sequence `seq`'s KV cells as bytes (None if llama.cpp wrote none)."""
        L = self.L
        size = L.llama_state_seq_get_size(self.ctx, seq)
        buf = (ctypes.c_uint8 * size)()
        written = L.llama_state_seq_get_data(self.ctx, buf, size, seq)
        return (buf, written) if written else None

    def _load(self, state, seq: int) -> bool:
        """Saved cells into sequence `seq`, whose stream holds nothing."""
        buf, written = state
        return self.L.llama_state_seq_set_data(self.ctx, buf, written, seq) == written

    def _step(self) -> None:
        L, b = self.L, self.batch
        n = 0
        outputs: list[tuple[_Request, int]] = []
        fed: list[tuple[_Request, list[int]]] = []

        def add(token: int, pos: int, seq: int, logits: bool) -> None:
            nonlocal n
            put_token(b, n, token, pos, seq, logits)
            n += 1

        for req in [r for r in self.active if r.cancelled]:
            self._finish(req, error="cancelled")
        # One sequence's prompt chunk per call, never mixed with other sequences' tokens: llama.cpp
        # computes a token's KV slightly differently in a ubatch shared with other streams, and
        # then the same episode would not give the same tokens in a different company.
        reading = next((r for r in self.active if r.pending), None)
        if reading is not None:
            slot = reading.slot
            chunk = reading.pending[:N_BATCH]
            for i, token in enumerate(chunk):
                add(token, len(slot.tokens) + i, slot.seq, i == len(reading.pending) - 1)
            if len(chunk) == len(reading.pending):
                outputs.append((reading, n - 1))
            fed.append((reading, chunk))
        else:  # every active sequence decodes its next token, all in one batch
            self._compact()
            # In sequence order: llama.cpp computes a batch over per-sequence streams in runs of
            # consecutive, increasing sequence ids, one run per pass over the weights. In the
            # order episodes happened to arrive, a batch of 3.5 sequences took 2.1 passes.
            seqs = sorted(r.slot.seq for r in self.active)
            passes = 1 + sum(b != a + 1 for a, b in zip(seqs, seqs[1:]))
            for req in sorted(self.active, key=lambda r: r.slot.seq):
                slot = req.slot
                add(req.ids[-1], len(slot.tokens), slot.seq, True)
                outputs.append((req, n - 1))
                fed.append((req, [req.ids[-1]]))
        if n == 0:
            return
        b.n_tokens = n
        started = time.perf_counter()
        with _COMPUTE:
            rc = L.llama_decode(self.ctx, b)
        if rc == 1:  # a sequence's stream is full (the budget should prevent it): fail the largest
            victim = max(self.active, key=lambda r: len(r.slot.tokens) + len(r.pending))
            self._finish(victim, error=f"the KV cache of a sequence ({self.n_ctx} tokens) is full")
            return
        if rc != 0:
            for req, _ in fed:
                self._drop_cache(req.slot)
                self._finish(req, error=f"llama_decode failed (code {rc})")
            return
        self.batch_tokens += n
        for req, tokens in fed:
            req.slot.tokens.extend(tokens)
            if req.pending:
                del req.pending[: len(tokens)]
        for req, row in outputs:
            logits = np.ctypeslib.as_array(L.llama_get_logits_ith(self.ctx, row), shape=(self.n_vocab,))
            if req.want_row:
                req.row = log_softmax(logits, req.temperature or 1.0)
            token, logprob = sample_token(logits, req.temperature, req.rng)
            req.ids.append(token)
            req.logprobs.append(logprob)
            if token in req.stop_ids:
                req.finish = "stop"
            elif req.stop_at is not None:
                req.text += self._detok([token])
                try:
                    complete = req.stop_at(req.text.decode("utf-8", errors="ignore"))
                except Exception as exc:  # the caller's check fails its own episode, not the batch
                    log.exception("stop_at raised")
                    self._finish(req, error=f"stop_at raised {type(exc).__name__}: {exc}")
                    continue
                if complete:
                    req.finish = "action"
            if req.finish != "length" or len(req.ids) >= req.budget:
                self._finish(req)
        elapsed = time.perf_counter() - started
        if reading is not None:
            self.prompt_tokens += n
            self.prompt_seconds += elapsed
        else:
            self.decode_steps += 1
            self.decode_passes += passes
            self.decode_tokens += n
            self.decode_seconds += elapsed

    def _compact(self) -> None:
        """Move decoding sequences down into the slots below them that decode nothing, so that the
        batch's sequence ids run without gaps: each gap costs llama.cpp another pass over the
        weights. Gaps open as episodes end (most often at the end of a wave, with no new episode
        to take the slot) and, with more slots than sequences per batch, wherever the waiting
        episodes' slots lie. A slot below that holds a waiting episode's cells trades places
        with the decoding one. Cells are copied whole into an emptied stream, where they lie as
        a fresh read would put them, so no episode's numbers change."""
        while self.active:
            top = max((r.slot for r in self.active), key=lambda s: s.seq)
            hole = next((s for s in self.slots if s.seq < top.seq and s.request is None), None)
            if hole is None or not self._swap(top, hole):
                return
            self.moved_sequences += 1

    def _swap(self, busy: _Slot, idle: _Slot) -> bool:
        """Trade the cells and the episodes of two slots, `busy` decoding and `idle` not."""
        L = self.L
        saved = {}
        for slot in (busy, idle):
            if slot.tokens:
                saved[slot.seq] = self._save(slot.seq)
                if saved[slot.seq] is None:
                    return False
        for slot in (busy, idle):
            L.llama_memory_seq_rm(self.mem, slot.seq, -1, -1)
        ok = [self._load(saved[src.seq], dst.seq) for src, dst in ((busy, idle), (idle, busy)) if src.seq in saved]
        req = busy.request
        busy.tokens, idle.tokens = idle.tokens, busy.tokens
        busy.last_used, idle.last_used = idle.last_used, busy.last_used
        busy.request, idle.request, req.slot = None, req, idle
        if not all(ok):  # never seen: llama.cpp refused cells into an empty stream
            log.error("moving KV cells between sequences %d and %d failed", busy.seq, idle.seq)
            self._drop_cache(busy)  # the waiting episode's next turn reads its prompt again
            self._finish(req, error="moving the sequence's KV cells in llama.cpp failed")
            return False
        return True

    def _drop_cache(self, slot: _Slot | None) -> None:
        if slot is not None:
            self.L.llama_memory_seq_rm(self.mem, slot.seq, -1, -1)
            slot.tokens = []

    def _finish(self, req: _Request, *, error: str = "") -> None:
        req.error = error
        if req in self.active:
            self.active.remove(req)
        if req.slot is not None:
            req.slot.request = None
            req.slot.last_used = time.monotonic()
            if error:
                self._drop_cache(req.slot)
        req.done.set()

    # -- inspection (the scheduler thread's own state; for tests and benches) ----------------
    def cells_in_use(self) -> list[int]:
        """Per slot, the cells llama.cpp holds for its sequence (pos_max + 1, 0 when empty)."""
        return [int(self.L.llama_memory_seq_pos_max(self.mem, s.seq)) + 1 for s in self.slots]


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
    ) -> None:
        self.name = name or f"gguf:{path}"
        self.path = Path(path)
        # This Llama is the tokenizer and owns the weights; its own context is tiny and unused.
        llm = load_llama(path, n_ctx=64, n_batch=64, n_threads=1)
        self._init_chat(llm, self.path, n_ctx)
        slots = max(1, slots)
        self._scheduler = _Scheduler(
            llm,
            slots=slots,
            sequences=min(sequences, slots),
            n_ctx=n_ctx,
            threads=threads or os.cpu_count() or 1,
            lora=lora,
            detok=llm.detokenize,
        )
        self._finalizer = weakref.finalize(self, self._scheduler.close)

    def close(self) -> None:
        self._finalizer()

    @property
    def scheduler(self) -> _Scheduler:
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
        return _Request(
            list(prompt), budget, temperature, np.random.default_rng(seed), stop_at, frozenset(self._stop_ids)
        )

    def _wait(self, req: _Request) -> None:
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
