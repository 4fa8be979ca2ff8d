"""The pipeline's stage table (one row per stage) and each stage's finished evaluation episodes."""

from __future__ import annotations

import os
from dataclasses import asdict

from engine.store.jobs import JobRepository
from engine.store.records import StageRecord
from engine.store.schema import Database, now, pid_alive


class StageRepository:
    def __init__(self, database: Database, jobs: JobRepository) -> None:
        self._d, self._jobs = database, jobs

    def put(self, stage: StageRecord) -> None:
        # A running stage names the process running it, so that one left behind by a dead process
        # can be told apart from one still at work (mark_dead).
        pid = os.getpid() if stage.status == "running" else None
        with self._d.lock:
            self._d.db["stages"].upsert(
                {**asdict(stage), "updated_at": stage.updated_at or now(), "pid": pid}, pk="name"
            )

    def mark_dead(self) -> None:
        """Stages left 'running' by a process that no longer exists were interrupted."""
        with self._d.lock:
            for row in self._d.rows("SELECT name, pid FROM stages WHERE status = 'running'"):  # whole, before writing
                if not pid_alive(row["pid"]):
                    self._d.db["stages"].update(
                        row["name"],
                        {"status": "interrupted", "detail": "its process ended; run the pipeline again to resume"},
                    )

    def all(self) -> dict[str, StageRecord]:
        rows = self._d.rows("SELECT * FROM stages")
        return {
            r["name"]: StageRecord(
                **{
                    k: (r[k] if r[k] is not None or k not in ("lineage", "detail") else "")
                    for k in StageRecord.__dataclass_fields__
                }
            )
            for r in rows
        }
