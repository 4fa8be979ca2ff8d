"""The typed records the store keeps and returns, one dataclass per kind of row.

- runs and episodes: `RunRecord`, `EpisodeRecord`, `CheckRecord`, `ModelRecord`;
- runbooks: `RunbookDraft` and the stored `Runbook`, with the leak scan's `LeakReport` and the
  reviewer's `ReviewVerdict` (a draft is `pending` until approved or rejected, automatically or
  by a person; an edit keeps the original text so the change stays visible);
- RSR's SFT `Sample`s with their `Provenance`, RSR rounds and RPR stages;
- training metrics: `MetricPoint` per step (the TUI's curves read them back);
- `StageRecord`: one row of the pipeline's stage table (Base, RSR-1, RPR-1, ...);
- `JobRecord`: a finished keyed job of a resumable stage.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Literal

PIPELINE_STAGES: tuple[str, ...] = ("Base", "RSR-1", "RPR-1", "RSR-2", "RPR-2")
# "interrupted": it was running in a process that ended without saying so (killed, or its terminal
# closed); the next `pipeline run` resumes it.
StageStatus = Literal["pending", "running", "done", "failed", "interrupted"]


@dataclass(frozen=True)
class MetricPoint:
    run_id: str
    stage: str
    name: str  # e.g. "sft/loss", "ppo/value_loss", "ppo/kl"
    step: int
    value: float
    # Where it sits in the store's write order (0 until stored): incremental readers resume after it.
    seq: int = field(default=0, compare=False)


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
        from engine.stats import interval_text

        return interval_text(self.pass_at_1, self.ci_low, self.ci_high)


RunbookStatus = Literal["pending", "approved", "rejected"]
RUNBOOK_STATUSES: tuple[str, ...] = ("pending", "approved", "rejected")


@dataclass(frozen=True)
class LeakReport:
    """Overlap between a runbook and what the agent must never see (tests, solution, canary)."""

    score: float  # 0 = no overlap, 1 = the runbook quotes protected text wholesale
    matches: tuple[str, ...] = ()  # the protected fragments found, for a person to judge

    @property
    def leaked(self) -> bool:
        return bool(self.matches)


@dataclass(frozen=True)
class ReviewVerdict:
    format_ok: bool
    artifacts_named: bool
    leakage_suspected: bool
    approve: bool
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunbookDraft:
    task: str
    round: int
    source_episode_id: str
    text: str
    harness: str = ""
    leak: LeakReport | None = None
    verdict: ReviewVerdict | None = None
    author: str = "planner"  # "planner" (the model wrote it) or "template" (built from the commands)
    reviewer_raw: str = ""  # the reviewer model's last reply, as it came


@dataclass(frozen=True)
class Runbook:
    id: str
    task: str
    round: int
    source_episode_id: str
    harness: str
    status: RunbookStatus
    text: str
    original_text: str
    leak: LeakReport | None
    verdict: ReviewVerdict | None
    decided_by: str  # "", "auto" or "human"
    note: str
    created_at: str
    updated_at: str
    author: str = "planner"
    reviewer_raw: str = ""

    @property
    def edited(self) -> bool:
        return self.text != self.original_text


@dataclass(frozen=True)
class Provenance:
    task: str
    harness: str
    source_episode_id: str
    replay_episode_id: str
    runbook_id: str = ""


@dataclass(frozen=True)
class Sample:
    ids: tuple[int, ...]
    mask: tuple[int, ...]
    provenance: Provenance

    @property
    def digest(self) -> str:
        """Identity for deduplication: the same tokens are the same sample, whatever produced them."""
        return hashlib.sha256(json.dumps([self.ids, self.mask]).encode()).hexdigest()[:32]

    @property
    def action_tokens(self) -> int:
        return sum(self.mask)


@dataclass(frozen=True)
class RunRecord:
    id: str
    kind: str
    created_at: str
    finished_at: str | None
    status: str
    backend: str
    agent: str
    tasks_path: str
    total: int
    summary: dict

    @property
    def success_rate(self) -> float | None:
        value = self.summary.get("success_rate")
        return float(value) if value is not None else None


@dataclass(frozen=True)
class EpisodeRecord:
    id: str
    run_id: str
    task: str
    split: str | None
    agent: str
    status: str
    success: bool
    checks_passed: int
    checks_total: int
    reward: float | None
    failure_mode: str
    error: str
    duration_s: float
    resource_events: tuple[str, ...] = ()
    stop_reason: str = ""


@dataclass(frozen=True)
class ModelRecord:
    ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    messages: list[dict] = field(default_factory=list)
    harness: str = ""
    model: str = ""


@dataclass(frozen=True)
class CheckRecord:
    name: str
    status: str
    message: str


@dataclass(frozen=True)
class JobRecord:
    key: str
    run_id: str
    episode_id: str
    success: bool


@dataclass(frozen=True)
class RsrRoundRecord:
    round: int
    model: str
    tasks_path: str
    settings: str  # JSON of the round's RsrConfig
    stage: str  # explore, runbooks, approval, replay, dataset, sft, done
    checkpoint: str
    detail: str
    updated_at: str


@dataclass(frozen=True)
class RprRunRecord:
    round: int
    model: str
    tasks_path: str
    settings: str  # JSON of the stage's RprConfig
    status: str  # running, done
    iteration: int  # rounds finished so far
    checkpoint: str
    start_adapter: str
    critic_from: str
    detail: str
    updated_at: str


@dataclass(frozen=True)
class EpisodeOutcome:
    """An episode's outcome only, for curves that grow as episodes are stored."""

    seq: int  # position in the store's write order
    success: bool
    reward: float | None
