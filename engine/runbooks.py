"""Runbook drafts and their reviews, as stored and as shown in the TUI's queue.

A runbook is the planner's distillation of one verified success. Two reviews gate it: a
deterministic leak scan (`LeakReport`) and a reviewer agent's structured verdict
(`ReviewVerdict`). A draft is `pending` until approved or rejected, automatically or by a
person; an edit keeps the original text so the change stays visible.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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
