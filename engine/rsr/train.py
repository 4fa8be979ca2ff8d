"""The SFT phase of an RSR round: QLoRA on the chosen samples, exported for llama.cpp, served as a spec.

The adapter is trained by engine/rsr/sft.py (continuing the model's own adapter when it carries
one), exported to GGUF (engine/training/gguf_export.py), and the round's result is the model
spec that serves it. A round whose checkpoint is stored does not train again; one stopped during
SFT continues from its last finished step (kept in checkpoints/rsr-N/partial/).

Reads: the round's stored checkpoint.
Writes: checkpoints/rsr-N/ (adapter, metadata, adapter.gguf), `sft/loss` metrics and
TrainingStep events per step, the checkpoint's served spec on the round's row; a progress line.
Returns: a `TrainResult` (the served spec, '' when nothing was trained, and notes).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.events import TrainingStep
from engine.policy.spec import served_spec, trainable_weights
from engine.rsr.sft import SftConfig
from engine.rsr.work import RoundWork
from engine.store.records import MetricPoint, Sample


@dataclass(frozen=True)
class TrainResult:
    checkpoint: str  # the served model spec of the trained adapter; '' when nothing was trained
    notes: tuple[str, ...] = ()


def train(work: RoundWork, samples: tuple[Sample, ...]) -> TrainResult:
    stored = work.records.checkpoint()
    if stored:
        return TrainResult(stored)
    if not samples:
        return TrainResult("", ("no verified samples: nothing to train on, the actor is unchanged",))
    from engine.rsr.sft import train_sft
    from engine.training.gguf_export import export_lora_gguf

    base, adapter = trainable_weights(work.model)
    notes = (f"continues the adapter {adapter} on {base}",) if adapter else ()
    run_id = f"rsr-{work.round}-sft"
    stage = f"RSR-{work.round}"  # the pipeline stage this round's curves belong to

    def on_step(step: int, loss: float, tokens: int) -> None:
        work.records.log_metric(MetricPoint(run_id, stage, "sft/loss", step, loss))
        work.bus.emit(TrainingStep(run_id, stage, "sft/loss", step, loss))

    work.progress("sft", f"QLoRA on {len(samples)} sample(s), base {base}")
    result = train_sft(
        base,
        list(samples),
        work.checkpoint_dir,
        sft_config(work),
        on_step=on_step,
        should_stop=work.should_stop,
        adapter=adapter,
    )
    gguf_file = export_lora_gguf(result.checkpoint, Path(base), work.checkpoint_dir / "adapter.gguf")
    served = served_spec(work.model, result.checkpoint, gguf_file if work.model.startswith("bundled:") else None)
    work.records.set_checkpoint(served)
    return TrainResult(served, notes)


def sft_config(work: RoundWork) -> SftConfig:
    s = work.settings.sft
    return SftConfig(
        rank=s.rank,
        alpha=s.alpha,
        learning_rate=s.learning_rate,
        epochs=s.epochs,
        min_steps=s.min_steps,
        batch_samples=s.batch_samples,
        max_len=s.max_len,
        load_4bit=s.load_4bit,
        packing=s.packing,
        precision=s.precision,
        seed=work.seed,
    )
