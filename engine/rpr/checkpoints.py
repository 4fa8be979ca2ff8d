"""An RPR stage's checkpoints: one directory per finished round, and `latest` naming the newest.

A round's directory holds both adapters and the value head (ActorCritic.save), the actor
exported as a llama.cpp LoRA (actor.gguf) when llama.cpp serves it, the trainer state
(optimizers, schedulers, torch and Python RNG, the rollout cursor, the global step) and the
lineage. It is written under a temporary name and renamed, and only then named in `latest`, so
a kill at any point leaves the previous checkpoint whole.

Reads and writes only the stage's checkpoint directory; `load_state` returns what a resume
continues from (`SavedState`).
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import dataclass
from pathlib import Path

from engine.config import RprConfig
from engine.policy.spec import served_spec

STATE_FILE = "trainer_state.pt"
METADATA = "trsi-checkpoint.json"


def iteration_dir(directory: Path, iteration: int) -> Path:
    """Where the checkpoint after PPO round `iteration` (0-based) ends up."""
    return Path(directory) / f"iter-{iteration + 1:03d}"


def latest(directory: Path) -> Path | None:
    pointer = Path(directory) / "latest"
    if not pointer.is_file():
        return None
    path = Path(directory) / pointer.read_text().strip()
    return path if (path / STATE_FILE).is_file() else None


def clear_partial(directory: Path) -> None:
    """Create the stage's directory, removing what a save killed half-way left behind."""
    directory.mkdir(parents=True, exist_ok=True)
    for tmp in directory.glob("*.tmp"):
        shutil.rmtree(tmp, ignore_errors=True) if tmp.is_dir() else tmp.unlink()


def served_actor(directory: Path, iteration: int, model: str) -> str:
    """The spec serving the actor saved after round `iteration`: from the checkpoint's final
    directory (written as .tmp, then renamed), as llama.cpp's GGUF export for a bundled model."""
    actor_dir = iteration_dir(directory, iteration) / "actor"
    return served_spec(model, actor_dir, actor_dir.with_suffix(".gguf") if model.startswith("bundled:") else None)


def lineage(*, stage: str, model: str, base: str, critic_from: Path | None, tasks: Path, settings: RprConfig) -> dict:
    """What every checkpoint of the stage records of where it came from."""
    return {
        "kind": "rpr",
        "stage": stage,
        "parent": model,
        "base_model": base,
        "critic_from": str(critic_from or ""),
        "tasks": str(tasks),
        "split": settings.split,
        "config": json.loads(settings.model_dump_json()),
    }


def save(
    directory: Path,
    ac,
    optimizers,
    schedulers,
    rng: random.Random,
    *,
    iteration: int,
    global_step: int,
    served: str,
    lineage: dict,
    export_base: str | None,
) -> Path:
    """`export_base`: also export the actor as a llama.cpp LoRA (actor.gguf), against this base."""
    import torch

    from engine.training.gguf_export import export_lora_gguf

    final = iteration_dir(directory, iteration)
    name = final.name
    tmp = directory / f"{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    ac.save(tmp)
    if export_base is not None:
        export_lora_gguf(tmp / "actor", Path(export_base), tmp / "actor.gguf")
    torch.save(
        {
            "optimizers": [o.state_dict() for o in optimizers],
            "schedulers": [s.state_dict() for s in schedulers],
            "torch_rng": torch.get_rng_state(),
            "python_rng": rng.getstate(),
            "cursor": iteration + 1,
            "global_step": global_step,
        },
        tmp / STATE_FILE,
    )
    metadata = {**lineage, "iteration": iteration + 1, "global_step": global_step, "actor_spec": served}
    (tmp / METADATA).write_text(json.dumps(metadata, indent=2))
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    pointer = directory / "latest.tmp"
    pointer.write_text(name)
    pointer.rename(directory / "latest")
    for old in sorted(directory.glob("iter-*")):
        # A resume needs only the latest; the served actor may live in an earlier one.
        if old.is_dir() and old.name != name and str(old / "actor") not in served:
            shutil.rmtree(old, ignore_errors=True)
    return final


@dataclass(frozen=True)
class SavedState:
    cursor: int  # rounds finished
    global_step: int
    served: str  # the actor's spec when the checkpoint was written


def load_state(checkpoint: Path, optimizers, schedulers, rng: random.Random) -> SavedState:
    """Restore the optimizers, schedulers, torch RNG and `rng` saved in `checkpoint`."""
    import torch

    state = torch.load(checkpoint / STATE_FILE, map_location="cpu", weights_only=False)
    for obj, saved in zip([*optimizers, *schedulers], [*state["optimizers"], *state["schedulers"]]):
        obj.load_state_dict(saved)
    torch.set_rng_state(state["torch_rng"])
    rng.setstate(state["python_rng"])
    served = json.loads((checkpoint / METADATA).read_text())["actor_spec"]
    return SavedState(state["cursor"], state["global_step"], served)
