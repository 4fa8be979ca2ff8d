"""Resuming: the stage's record, and the trainer it continues from.

Reads the stage's record (store.rpr.run) and its newest checkpoint (`latest`, or the critic of
`critic_from` for a fresh stage). Writes the record of a stage seen for the first time. Returns
whether the stage is already finished (`open_record`) and the `TrainerState` its next round
starts from (`load_trainer`): the ActorCritic, optimizers, schedulers, PPO rng, cursor, global
step and the actor being served.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from engine.config import RprConfig
from engine.rpr import checkpoints
from engine.store import Store


class RprError(RuntimeError):
    pass


@dataclass(frozen=True)
class StageSpec:
    """What RPR stage `number` is started from, as its record keeps it."""

    number: int
    model: str
    tasks_path: Path
    settings: RprConfig
    start_adapter: str | None
    critic_from: Path | None


def open_record(store: Store, spec: StageSpec) -> bool:
    """Create the stage's record, or check that the stored one is of the same model; True when
    the stage already finished (nothing is left to run)."""
    record = store.rpr.run(spec.number)
    if record is None:
        store.rpr.put_run(
            spec.number,
            model=spec.model,
            tasks_path=str(spec.tasks_path),
            settings=spec.settings.model_dump_json(),
            status="running",
            iteration=0,
            checkpoint="",
            start_adapter=spec.start_adapter or "",
            critic_from=str(spec.critic_from or ""),
            detail="",
        )
        return False
    if record.model != spec.model:
        raise RprError(
            f"RPR stage {spec.number} was started with model {record.model!r}, not {spec.model!r}; "
            "resume it with the same model or pick another stage number"
        )
    return record.status == "done" and bool(record.checkpoint)


@dataclass(frozen=True)
class TrainerState:
    """The trainer between two rounds. `ac`, the optimizers, schedulers and `rng` are the live
    objects the next update moves; the rest is replaced after each round."""

    ac: object  # ActorCritic (torch is imported only once a stage runs)
    optimizers: tuple
    schedulers: tuple
    rng: random.Random
    cursor: int  # rounds finished
    global_step: int
    served: str  # the spec the rollouts sample the actor from


def load_trainer(*, spec: StageSpec, base: str, latest: Path | None, seed: int) -> TrainerState:
    """The trainer from `latest`, or a fresh one (the stage-start actor, and the critic of
    `critic_from` when given) when no round is checkpointed yet."""
    import torch

    from engine.rpr.actor_critic import ActorCritic
    from engine.rpr.ppo import make_optimizers
    from engine.training.loader import LoraShape

    s, start_adapter = spec.settings, spec.start_adapter
    critic_src = latest or spec.critic_from
    torch.manual_seed(seed)  # fresh adapters start from the same random A matrices every time
    ac = ActorCritic.load(
        base,
        actor_adapter=Path(latest / "actor") if latest else (Path(start_adapter) if start_adapter else None),
        critic_adapter=critic_src / "critic" if critic_src else None,
        value_head=critic_src / "value_head.pt" if critic_src else None,
        reference=s.reference,
        reference_adapter=Path(start_adapter) if start_adapter else None,
        lora=LoraShape(s.rank, s.alpha),
        load_4bit=s.load_4bit,
        temperature=s.temperature,
        precision=s.precision,
        critic_layers=s.critic_layers,
    )
    optimizers, schedulers = make_optimizers(ac, s)
    rng = random.Random(seed)
    if latest is None:
        return TrainerState(ac, optimizers, schedulers, rng, 0, 0, spec.model)
    saved = checkpoints.load_state(latest, optimizers, schedulers, rng)
    return TrainerState(ac, optimizers, schedulers, rng, saved.cursor, saved.global_step, saved.served)
