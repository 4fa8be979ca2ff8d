"""A training run's state at its last finished optimizer step, kept when it is stopped part-way.

A stopped SFT run keeps what it has done: its adapter and optimizer state, the step count and
running totals, under `<out>/partial/`. The next run of the same training (same `key`: data,
base, parent adapter and config) continues from that step instead of starting over; any other
run ignores and replaces it. It is written under `partial.tmp` and renamed, so a kill during the
save leaves the previous one (or none) whole.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

PARTIAL = "partial"
STATE_FILE = "state.pt"
KEY_FILE = "key.json"


@dataclass(frozen=True)
class PartialState:
    adapter: Path  # the adapter as it was after `step` steps (a peft directory)
    optimizer: dict
    step: int
    totals: dict = field(default_factory=dict)  # the run's running counters (tokens, losses, ...)


def partial_dir(out_dir: Path) -> Path:
    return Path(out_dir) / PARTIAL


def save_partial(out_dir: Path, key: dict, model, optimizer, step: int, totals: dict) -> Path:
    """Keep `model`'s adapter and `optimizer`'s state after `step` steps as the partial run of `key`."""
    import torch

    final = partial_dir(out_dir)
    tmp = final.with_name(f"{PARTIAL}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save_pretrained(tmp / "adapter")
    torch.save({"optimizer": optimizer.state_dict(), "step": step, "totals": totals}, tmp / STATE_FILE)
    (tmp / KEY_FILE).write_text(json.dumps(key, sort_keys=True))
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    return final


def load_partial(out_dir: Path, key: dict) -> PartialState | None:
    """The partial run kept under `out_dir` if it is one of `key`; None otherwise (a partial run of
    other training is removed: it can never be continued)."""
    import torch

    directory = partial_dir(out_dir)
    shutil.rmtree(directory.with_name(f"{PARTIAL}.tmp"), ignore_errors=True)
    if not (directory / STATE_FILE).is_file():
        return None
    try:
        kept = json.loads((directory / KEY_FILE).read_text())
    except (OSError, ValueError) as exc:
        log.warning("ignoring the partial training state in %s: %s", directory, exc)
        kept = None
    if kept != json.loads(json.dumps(key, sort_keys=True)):
        log.info("the partial training state in %s is of other training; starting afresh", directory)
        discard_partial(out_dir)
        return None
    state = torch.load(directory / STATE_FILE, map_location="cpu", weights_only=False)
    return PartialState(directory / "adapter", state["optimizer"], int(state["step"]), dict(state["totals"]))


def discard_partial(out_dir: Path) -> None:
    shutil.rmtree(partial_dir(out_dir), ignore_errors=True)
