"""The batched llama.cpp backend's scheduler: one thread that owns the context and serves every
concurrent episode's generation as one sequence of it (`llamacpp_batched.py` tells the design).

Each step puts the next token of every decoding sequence, or one chunk of a prompt still being
read, into a single batch. Sampling is exact and per episode: each request draws from
softmax(logits / T) with its own `numpy` generator seeded by the request's seed (argmax at
T = 0) and records the log-probability of each sampled token under that distribution, as the
single-sequence backend does. No truncation (top-k, top-p, min-p) and no penalties.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.policy.base import PolicyError, StopAt
from engine.policy.llamacpp_chat import common_prefix, log_softmax, min_p_keep
from engine.policy.llamacpp_context import N_BATCH, BatchContext

log = logging.getLogger(__name__)

# A shared prefix shorter than this is not worth copying cells for.
MIN_SHARED_PREFIX = 16


@dataclass(eq=False)
class Request:
    prompt: list[int]
    budget: int
    temperature: float
    rng: np.random.Generator
    stop_at: StopAt
    stop_ids: frozenset[int]
    min_p: float = 0.0
    pending: list[int] = field(default_factory=list)  # prompt tokens not yet in the KV cache
    ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    text: bytearray = field(default_factory=bytearray)
    finish: str = "length"
    error: str = ""
    slot: Slot | None = None
    done: threading.Event = field(default_factory=threading.Event)
    cancelled: bool = False
    row: np.ndarray | None = None  # with want_row: the first step's log-softmax(logits / T), whole
    want_row: bool = False
    started: float = field(default_factory=time.monotonic)


@dataclass(eq=False)
class Slot:
    seq: int
    tokens: list[int] = field(default_factory=list)  # the tokens whose KV cells this sequence holds, in order
    request: Request | None = None
    last_used: float = 0.0


def sample_token(
    logits: np.ndarray, temperature: float, rng: np.random.Generator, min_p: float = 0.0
) -> tuple[int, float]:
    """A token drawn from softmax(logits / T), among those min-p keeps (`min_p_keep`), and its
    log-probability under the whole softmax(logits / T), the distribution the trainers compute
    (argmax at T = 0, scored under the raw softmax)."""
    logp = log_softmax(logits, temperature)
    if temperature > 0:
        probs = np.exp(logp)
        keep = min_p_keep(logits, min_p)
        if keep is not None:
            probs = np.where(keep, probs, 0.0)
        cdf = np.cumsum(probs)
        token = min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")), len(cdf) - 1)
    else:
        token = int(np.argmax(logp))
    return token, float(logp[token])


class Scheduler:
    """Owns the llama.cpp context; only its thread touches it. Holds no reference to the policy,
    so a policy that is dropped stops its scheduler and frees the context."""

    def __init__(self, llm, *, slots: int, sequences: int, n_ctx: int, threads: int, lora: Path | None, detok):
        self.cx = BatchContext(llm, slots=slots, n_ctx=n_ctx, threads=threads, lora=lora)
        self._detok = detok
        self.slots = [Slot(i) for i in range(slots)]
        self.sequences = max(1, sequences)
        self.n_ctx = n_ctx
        self.queue: deque[Request] = deque()
        self.releases: list[list[int]] = []
        self.active: list[Request] = []
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

    def submit(self, req: Request) -> None:
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
            self.cx.free()

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

    def _assign(self, req: Request, idle: list[Slot]) -> None:
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
        self.cx.remove(slot.seq, keep)
        slot.tokens = prompt[:keep]
        slot.request = req
        req.slot = slot
        req.pending = prompt[keep:]

    def _copy_cells(self, src: int, dst: int) -> bool:
        """Copy sequence `src`'s KV cells into `dst` (across streams, llama.cpp's seq_cp copies only
        whole buffers, and lazily; the sequence state copies now)."""
        state = self.cx.save(src)
        if state is not None and self.cx.load(state, dst):
            return True
        log.warning("copying KV cells from sequence %d to %d failed; the prompt is read again", src, dst)
        self.cx.remove(dst)
        return False

    def _step(self) -> None:
        n = 0
        outputs: list[tuple[Request, int]] = []
        fed: list[tuple[Request, list[int]]] = []

        def add(token: int, pos: int, seq: int, logits: bool) -> None:
            nonlocal n
            self.cx.put(n, token, pos, seq, logits)
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
        started = time.perf_counter()
        rc = self.cx.decode(n)
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
            logits = self.cx.logits(row)
            if req.want_row:
                req.row = log_softmax(logits, req.temperature or 1.0)
            token, logprob = sample_token(logits, req.temperature, req.rng, req.min_p)
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

    def _swap(self, busy: Slot, idle: Slot) -> bool:
        """Trade the cells and the episodes of two slots, `busy` decoding and `idle` not."""
        saved = {}
        for slot in (busy, idle):
            if slot.tokens:
                saved[slot.seq] = self.cx.save(slot.seq)
                if saved[slot.seq] is None:
                    return False
        for slot in (busy, idle):
            self.cx.remove(slot.seq)
        ok = [self.cx.load(saved[src.seq], dst.seq) for src, dst in ((busy, idle), (idle, busy)) if src.seq in saved]
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

    def _drop_cache(self, slot: Slot | None) -> None:
        if slot is not None:
            self.cx.remove(slot.seq)
            slot.tokens = []

    def _finish(self, req: Request, *, error: str = "") -> None:
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
        return [self.cx.cells(s.seq) for s in self.slots]
