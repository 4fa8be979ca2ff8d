"""Scalar training and evaluation metrics, and pipeline stage records, as the store keeps them.

Training loops (SFT, PPO) log `MetricPoint`s per step; the TUI's curves read them back. A
`StageRecord` is one row of the pipeline's stage table (Base, RSR-1, RPR-1, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

PIPELINE_STAGES: tuple[str, ...] = ("Base", "RSR-1", "RPR-1", "RSR-2", "RPR-2")
StageStatus = Literal["pending", "running", "done", "failed"]


@dataclass(frozen=True)
class MetricPoint:
    run_id: str
    stage: str
    name: str  # e.g. "sft/loss", "ppo/value_loss", "ppo/kl"
    step: int
    value: float


@dataclass(frozen=True)
class StageRecord:
    name: str
    status: StageStatus
    checkpoint: str = ""
    parent: str = ""
    eval_run_id: str = ""
    pass_at_1: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    updated_at: str = ""
    lineage: str = ""  # JSON: parent checkpoint, training data, config
    detail: str = ""  # what the stage is doing now, or why it failed

    @property
    def pass_text(self) -> str:
        if self.pass_at_1 is None:
            return "-"
        if self.ci_low is None or self.ci_high is None:
            return f"{self.pass_at_1:.3f}"
        return f"{self.pass_at_1:.3f} [{self.ci_low:.3f}, {self.ci_high:.3f}]"
