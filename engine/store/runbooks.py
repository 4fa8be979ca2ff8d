"""Runbook drafts, their reviews and a person's decisions; an edit keeps the original beside it."""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict

from engine.store.records import RUNBOOK_STATUSES, LeakReport, ReviewVerdict, Runbook, RunbookDraft
from engine.store.schema import Database, now, storable


class RunbookRepository:
    def __init__(self, database: Database) -> None:
        self._d = database

    def add(self, draft: RunbookDraft, *, status: str = "pending", decided_by: str = "") -> str:
        runbook_id = uuid.uuid4().hex[:12]
        stamp = now()
        with self._d.lock:
            self._d.db["runbooks"].insert(
                storable(
                    {
                        "id": runbook_id,
                        "task": draft.task,
                        "round": draft.round,
                        "source_episode_id": draft.source_episode_id,
                        "harness": draft.harness,
                        "status": status,
                        "text": draft.text,
                        "original_text": draft.text,
                        "leak": json.dumps(asdict(draft.leak)) if draft.leak else None,
                        "verdict": json.dumps(asdict(draft.verdict)) if draft.verdict else None,
                        "decided_by": decided_by,
                        "note": "",
                        "created_at": stamp,
                        "updated_at": stamp,
                        "author": draft.author,
                        "reviewer_raw": draft.reviewer_raw,
                    }
                )
            )
        return runbook_id

    def list(self, status: str | None = None, round: int | None = None) -> list[Runbook]:
        """Drafts in the order they were written, optionally of one status and one RSR round."""
        where, args = [], []
        if status:
            where.append("status = ?")
            args.append(status)
        if round is not None:
            where.append("round = ?")
            args.append(round)
        sql = "SELECT * FROM runbooks" + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY rowid"
        return [_runbook(r) for r in self._d.rows(sql, args)]

    def get(self, runbook_id: str) -> Runbook:
        rows = self._d.rows("SELECT * FROM runbooks WHERE id = ?", [runbook_id])
        if not rows:
            raise KeyError(runbook_id)
        return _runbook(rows[0])

    def edit(self, runbook_id: str, text: str) -> Runbook:
        """A person's edit; the original stays stored beside it."""
        self.get(runbook_id)
        with self._d.lock:
            self._d.db["runbooks"].update(runbook_id, {"text": text, "updated_at": now()})
        return self.get(runbook_id)

    def decide(self, runbook_id: str, status: str, *, by: str, note: str = "") -> Runbook:
        if status not in RUNBOOK_STATUSES:
            raise ValueError(f"unknown runbook status {status!r}")
        self.get(runbook_id)
        with self._d.lock:
            self._d.db["runbooks"].update(
                runbook_id, {"status": status, "decided_by": by, "note": note, "updated_at": now()}
            )
        return self.get(runbook_id)


def _runbook(r: dict) -> Runbook:
    leak = json.loads(r["leak"]) if r["leak"] else None
    verdict = json.loads(r["verdict"]) if r["verdict"] else None
    return Runbook(
        r["id"],
        r["task"],
        r["round"],
        r["source_episode_id"] or "",
        r["harness"] or "",
        r["status"],
        r["text"],
        r["original_text"],
        LeakReport(leak["score"], tuple(leak["matches"])) if leak else None,
        ReviewVerdict(**{**verdict, "reasons": tuple(verdict["reasons"])}) if verdict else None,
        r["decided_by"] or "",
        r["note"] or "",
        r["created_at"],
        r["updated_at"],
        r.get("author") or "",
        r.get("reviewer_raw") or "",
    )
