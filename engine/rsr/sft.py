"""SFT with QLoRA: a LoRA adapter on a 4-bit NF4 base (bitsandbytes; the same code on the CPU).

Read top to bottom: load the base (quantized when `load_4bit`), wrap it with a peft LoRA adapter,
then for each epoch shuffle the samples and take one optimizer step per batch of whole samples.
A batch is padded rows, one sample each, or with `packing` several samples per row under a
block-diagonal causal mask with positions restarting per sample, so in both cases no sample
attends to another and the loss is the same. The loss is the mean cross-entropy over action
tokens only: labels are -100 wherever the sample's mask is 0, and logits are computed only at
those positions (`action_loss`), which is what keeps peak memory below TRL's.

The checkpoint is the adapter plus `trsi-checkpoint.json`: base model, data hash, config and
metrics. `on_step(step, loss, tokens)` reports progress (the RSR round's SFT phase logs it to the store).

A stop (`should_stop`) is honoured between steps and inside a step's forward and backward passes
(engine/training/stop.py); the run then keeps its last finished step (engine/training/partial.py)
and the next run of the same training continues from there.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import resource
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from engine.store.records import Sample
from engine.training.loader import LORA_TARGETS, LoraShape, load_base, model_device
from engine.training.memory import release_freed_memory
from engine.training.partial import discard_partial, load_partial, save_partial
from engine.training.precision import Precision, autocast, compute_dtype
from engine.training.stop import stoppable

log = logging.getLogger(__name__)

METADATA = "trsi-checkpoint.json"


@dataclass(frozen=True)
class SftConfig:
    rank: int = 8
    alpha: int = 16
    dropout: float = 0.0
    learning_rate: float = 2e-4
    epochs: int = 3
    # A small dataset repeats (reshuffled) until this many optimizer steps: with 4 samples, 3
    # epochs are 3 steps, which measurably teaches less than 12 (docs/results.md).
    min_steps: int = 0
    batch_samples: int = 4
    max_len: int = 2048  # longer samples keep their first max_len tokens
    grad_clip: float = 1.0
    load_4bit: bool = True
    # Pack each step's samples into as few rows of max_len as fit, with a block-diagonal mask and
    # positions restarting per sample: less padding, and still no sample attends to another.
    packing: bool = False
    # "bf16": forward passes under bf16 autocast; "auto": where the hardware does bf16 natively
    # (engine/training/precision.py).
    precision: Precision = "fp32"
    seed: int = 0
    target_modules: tuple[str, ...] = LORA_TARGETS


@dataclass(frozen=True)
class SftResult:
    checkpoint: Path
    steps: int
    tokens: int
    action_tokens: int
    losses: tuple[float, ...]
    seconds: float
    peak_rss_mb: float
    metadata: dict = field(default_factory=dict)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0


def data_hash(samples: list[Sample]) -> str:
    return hashlib.sha256("".join(sorted(s.digest for s in samples)).encode()).hexdigest()[:16]


def load_trainable(base: str, config: SftConfig, adapter: str | None = None):
    """The base model (NF4 when asked) with a LoRA adapter, fresh or continued from `adapter`
    (whose own rank and targets then apply); only the adapter trains."""
    from peft import PeftModel, get_peft_model

    model = load_base(base, load_4bit=config.load_4bit)
    if adapter:
        return PeftModel.from_pretrained(model, adapter, is_trainable=True)
    shape = LoraShape(config.rank, config.alpha, config.dropout, config.target_modules)
    return get_peft_model(model, shape.peft_config())


def _never() -> bool:
    return False


def partial_key(base: str, samples: list[Sample], config: SftConfig, adapter: str | None) -> dict:
    """What a stopped run's kept state must match to be continued: the same training."""
    return {
        "base_model": base,
        "parent_adapter": adapter or "",
        "data_hash": data_hash(samples),
        "config": {**asdict(config), "target_modules": list(config.target_modules)},
    }


def batches(samples: list[Sample], config: SftConfig, epoch: int) -> list[list[Sample]]:
    order = list(samples)
    random.Random(config.seed * 1000 + epoch).shuffle(order)
    return [order[i : i + config.batch_samples] for i in range(0, len(order), config.batch_samples)]


def planned_steps(n_samples: int, config: SftConfig) -> int:
    """Optimizer steps a run of `n_samples` takes: whole epochs, or min_steps if that is more."""
    per_epoch = -(-n_samples // config.batch_samples)
    return max(config.epochs * per_epoch, config.min_steps)


def collate(batch: list[Sample], max_len: int, pad_id: int):
    import torch

    width = min(max_len, max(len(s.ids) for s in batch))
    input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), width), -100, dtype=torch.long)
    attention = torch.zeros((len(batch), width), dtype=torch.long)
    for row, s in enumerate(batch):
        ids, mask = s.ids[:width], s.mask[:width]
        input_ids[row, : len(ids)] = torch.tensor(ids)
        labels[row, : len(ids)] = torch.tensor([t if m else -100 for t, m in zip(ids, mask)])
        attention[row, : len(ids)] = 1
    return input_ids, labels, attention


def action_loss(model, input_ids, attention_mask, labels, position_ids=None):
    """Mean cross-entropy over the labelled (action) positions, computing logits only there.

    The same value as the model's own `labels=` loss, without materializing vocabulary-sized
    logits for every prompt and observation token: with a 49k vocabulary those dominate memory.
    """
    import torch.nn.functional as F

    causal_lm = model.get_base_model() if hasattr(model, "get_base_model") else model
    hidden = causal_lm.model(
        input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False
    ).last_hidden_state
    targets = labels[:, 1:]
    where = targets != -100
    logits = causal_lm.lm_head(hidden[:, :-1][where]).float()
    return F.cross_entropy(logits, targets[where])


def collate_packed(batch: list[Sample], max_len: int, pad_id: int):
    """First-fit rows of at most max_len tokens; a 4D mask keeps each sample to itself."""
    import torch

    rows: list[list[Sample]] = []
    for s in sorted(batch, key=lambda s: -len(s.ids)):
        size = min(len(s.ids), max_len)
        for row in rows:
            if sum(min(len(x.ids), max_len) for x in row) + size <= max_len:
                row.append(s)
                break
        else:
            rows.append([s])
    width = max(sum(min(len(x.ids), max_len) for x in row) for row in rows)
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    positions = torch.zeros((len(rows), width), dtype=torch.long)
    allowed = torch.zeros((len(rows), 1, width, width), dtype=torch.bool)
    for r, row in enumerate(rows):
        start = 0
        for s in row:
            ids, mask = s.ids[:max_len], s.mask[:max_len]
            end = start + len(ids)
            input_ids[r, start:end] = torch.tensor(ids)
            labels[r, start:end] = torch.tensor([t if m else -100 for t, m in zip(ids, mask)])
            positions[r, start:end] = torch.arange(len(ids))
            allowed[r, 0, start:end, start:end] = torch.tril(torch.ones(len(ids), len(ids), dtype=torch.bool))
            start = end
        for i in range(start, width):  # padding attends to itself only, so no row of the mask is empty
            allowed[r, 0, i, i] = True
    attention = torch.zeros(allowed.shape, dtype=torch.float32).masked_fill(~allowed, torch.finfo(torch.float32).min)
    real_tokens = int(sum(min(len(s.ids), max_len) for s in batch))
    return input_ids, labels, attention, positions, real_tokens


def batch_loss(model, batch: list[Sample], config: SftConfig, pad_id: int, device):
    """The batch's action loss, its labels and its real (unpadded) token count."""
    if config.packing:
        input_ids, labels, attention, positions, real = collate_packed(batch, config.max_len, pad_id)
        input_ids, labels, attention, positions = (t.to(device) for t in (input_ids, labels, attention, positions))
        return action_loss(model, input_ids, attention, labels, positions), labels, real
    input_ids, labels, attention = collate(batch, config.max_len, pad_id)
    input_ids, labels, attention = (t.to(device) for t in (input_ids, labels, attention))
    return action_loss(model, input_ids, attention, labels), labels, int(attention.sum())


def train_sft(
    base: str,
    samples: list[Sample],
    out_dir: Path,
    config: SftConfig = SftConfig(),
    *,
    on_step: Callable[[int, float, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    adapter: str | None = None,
) -> SftResult:
    """`adapter`: a peft adapter directory to continue training (the parent checkpoint's actor)."""
    import torch

    if not samples:
        raise ValueError("SFT needs at least one sample")
    stop = should_stop or _never
    torch.manual_seed(config.seed)
    release_freed_memory()
    key = partial_key(base, samples, config, adapter)
    resumed = load_partial(out_dir, key)
    model = load_trainable(base, config, str(resumed.adapter) if resumed else adapter)
    if stop():  # loading takes seconds on a loaded CPU: do not start a step after a stop
        raise InterruptedError("SFT stopped before it started")
    model.train()
    device = model_device(model)
    dtype = compute_dtype(config.precision, device)
    pad_id = model.config.pad_token_id if model.config.pad_token_id is not None else 0
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.learning_rate, weight_decay=0.0)
    losses: list[float] = []
    tokens = action_tokens = step = 0
    if resumed is not None:
        optimizer.load_state_dict(resumed.optimizer)
        step, tokens, action_tokens = resumed.step, resumed.totals["tokens"], resumed.totals["action_tokens"]
        losses = list(resumed.totals["losses"])
        log.info("SFT continues from step %d of %d (its stopped run)", step, planned_steps(len(samples), config))
    first_step, first_tokens = step, tokens
    started = time.monotonic()
    total_steps = planned_steps(len(samples), config)
    per_epoch = -(-len(samples) // config.batch_samples)
    try:
        with stoppable(model, stop, "SFT"):
            while step < total_steps:
                epoch, done_in_epoch = divmod(step, per_epoch)
                for batch in batches(samples, config, epoch)[done_in_epoch:]:
                    if step >= total_steps:
                        break
                    if stop():
                        raise InterruptedError("SFT stopped before it finished")
                    with autocast(dtype, device):
                        loss, labels, real = batch_loss(model, batch, config, pad_id, device)
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(params, config.grad_clip)
                    optimizer.step()
                    step += 1
                    tokens += real
                    action_tokens += int((labels != -100).sum())
                    losses.append(float(loss.detach()))
                    if on_step is not None:
                        on_step(step, losses[-1], tokens)
    except InterruptedError:
        # The parameters are those after `step` steps (a step interrupted part-way never reached
        # its optimizer step): keep them, so that the next run goes on from there.
        if step > first_step:
            totals = {"tokens": tokens, "action_tokens": action_tokens, "losses": losses}
            save_partial(out_dir, key, model, optimizer, step, totals)
            log.info("SFT stopped after step %d of %d; the next run continues from there", step, total_steps)
        raise
    seconds = time.monotonic() - started
    out_dir = Path(out_dir)
    adapter_dir = out_dir / "adapter"
    model.save_pretrained(adapter_dir)
    metadata = {
        "kind": "sft-lora",
        "base_model": base,
        "parent_adapter": adapter or "",
        "data_hash": data_hash(samples),
        "samples": len(samples),
        "config": {**asdict(config), "target_modules": list(config.target_modules)},
        "metrics": {
            "steps": step,
            "epochs": round(step / -(-len(samples) // config.batch_samples), 2),
            "tokens": tokens,
            "action_tokens": action_tokens,
            "first_loss": losses[0],
            "final_loss": losses[-1],
            "compute_dtype": dtype,
            "seconds": round(seconds, 2),  # of this run (a continued one: since it continued)
            "tokens_per_second": round((tokens - first_tokens) / seconds, 1) if seconds else None,
        },
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    (out_dir / METADATA).write_text(json.dumps(metadata, indent=2))
    discard_partial(out_dir)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return SftResult(adapter_dir, step, tokens, action_tokens, tuple(losses), seconds, peak, metadata)
