"""The pipeline's stage table (one row per stage) and each stage's finished evaluation episodes."""

from __future__ import annotations

from dataclasses import asdict

from engine.store.jobs import JobRepository
from engine.store.records import StageRecord
from engine.store.schema import Database, now


class StageRepository:
    def __init__(self, database: Database, jobs: JobRepository) -> None:
        self._d, self._jobs = database, jobs

    def put(self, stage: StageRecord) -> None:
        with self._d.lock:
            self._d.db["stages"].upsert({**asdict(stage), "updated_at": stage.updated_at or now()}, pk="name")

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
