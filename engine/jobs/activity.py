"""What a running job is doing now, read from its journal and the store (for `jobs list` and the
TUI attached to it): its newest progress line, and whether it waits for a person to decide runbooks.

An RSR round with manual approval says "approval" once, then polls the store until no runbook is
pending; whoever decides them (the TUI's Runbooks screen, in any process) unblocks it. So a job
waits for approval while its newest RSR progress is "approval" and runbooks are pending.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from engine.store.schema import Database

PROGRESS_TYPES = ("RsrProgress", "RprProgress", "PipelineProgress")


@dataclass(frozen=True)
class JobActivity:
    doing: str = ""  # its newest progress line ("" before its first)
    awaiting_approval: int = 0  # pending runbooks its RSR round waits for a person to decide

    @property
    def line(self) -> str:
        """One line for a job list: the approval wait when there is one, else what it is doing."""
        if self.awaiting_approval:
            n = self.awaiting_approval
            return f"waiting for approval: {n} runbook(s) (decide them in the TUI's Runbooks screen)"
        return self.doing


def job_activity(database: Database, job: str) -> JobActivity:
    newest = database.rows(
        f"SELECT type, payload FROM events WHERE job = ? AND type IN ({', '.join('?' * len(PROGRESS_TYPES))}) "
        "ORDER BY id DESC LIMIT 1",
        [job, *PROGRESS_TYPES],
    )
    doing = _line(newest[0]["type"], json.loads(newest[0]["payload"])) if newest else ""
    rsr = database.rows(
        "SELECT payload FROM events WHERE job = ? AND type = 'RsrProgress' ORDER BY id DESC LIMIT 1", [job]
    )
    waiting = 0
    if rsr and json.loads(rsr[0]["payload"]).get("stage") == "approval":
        waiting = database.rows("SELECT count(*) AS n FROM runbooks WHERE status = 'pending'")[0]["n"]
    return JobActivity(doing, waiting)


def _line(type_name: str, p: dict) -> str:
    if type_name == "RsrProgress":
        return f"RSR round {p.get('round')}: {p.get('stage')}: {p.get('detail')}"
    if type_name == "RprProgress":
        return f"RPR stage {p.get('round')}: {p.get('detail')}"
    return f"{p.get('stage')} {p.get('status')}: {p.get('detail')}"
