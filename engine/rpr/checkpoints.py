"""An RPR stage's checkpoints: one directory per finished round, and `latest` naming the newest.

A round's directory holds both adapters and the value head (ActorCritic.save), the actor
exported as a llama.cpp LoRA (actor.gguf) when llama.cpp serves it, the trainer state
(optimizers, schedulers, torch and Python RNG, the rollout cursor, the global step) and the
lineage. It is written under a temporary name and renamed, and only then named in `latest`, so
a kill at any point leaves the previous checkpoint whole.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

STATE_FILE = "trainer_state.pt"
METADATA = "trsi-checkpoint.json"


def latest(directory: Path) -> Path | None:
    pointer = Path(directory) / "latest"
    if not pointer.is_file():
        return None
    path = Path(directory) / pointer.read_text().strip()
    return path if (path / STATE_FILE).is_file() else None


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

    name = f"iter-{iteration + 1:03d}"
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
    final = directory / name
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
