"""Finished keyed jobs of resumable stages, in one table.

A stage that must resume without repeating itself gives each job a key and records the episode
that finished it under a scope naming the stage and its part: "rsr/1/explore", "rpr/1/3",
"stage/Base". After a kill, jobs whose keys are recorded are not run again.
"""

from __future__ import annotations

from engine.store.records import JobRecord
from engine.store.schema import Database, storable


class JobRepository:
    def __init__(self, database: Database) -> None:
        self._d = database

    def done(self, scope: str, key: str, run_id: str, episode_id: str, success: bool) -> None:
        with self._d.lock:
            self._d.db["jobs"].upsert(
                storable(
                    {"scope": scope, "key": key, "run_id": run_id, "episode_id": episode_id, "success": int(success)}
                ),
                pk=("scope", "key"),
            )

    def finished(self, scope: str) -> dict[str, JobRecord]:
        """key -> the job's record, in the order the jobs finished."""
        rows = self._d.rows("SELECT * FROM jobs WHERE scope = ? ORDER BY rowid", [scope])
        return {r["key"]: JobRecord(r["key"], r["run_id"], r["episode_id"], bool(r["success"])) for r in rows}
