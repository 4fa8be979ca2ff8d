"""RPR: each stage's settings and where it stands (round cursor, final actor), and its rollouts."""

from __future__ import annotations

from engine.store.jobs import JobRepository
from engine.store.records import RprRunRecord
from engine.store.schema import Database, now


def round_scope(round: int, iteration: int) -> str:
    """Where the rollouts of one RPR iteration are keyed in `jobs`."""
    return f"rpr/{round}/{iteration}"


def probe_scope(round: int, index: int) -> str:
    """Where the rollouts of probe `index` (the actor after that many joint rounds) are keyed."""
    return f"rpr/{round}/probe{index}"


class RprRepository:
    def __init__(self, database: Database, jobs: JobRepository) -> None:
        self._d, self._jobs = database, jobs

    def run(self, round: int) -> RprRunRecord | None:
        rows = self._d.rows("SELECT * FROM rpr_runs WHERE round = ?", [round])
        if not rows:
            return None
        r = rows[0]
        return RprRunRecord(
            r["round"],
            r["model"] or "",
            r["tasks_path"] or "",
            r["settings"] or "{}",
            r["status"] or "",
            r["iteration"] or 0,
            r["checkpoint"] or "",
            r["start_adapter"] or "",
            r["critic_from"] or "",
            r["detail"] or "",
            r["updated_at"] or "",
        )

    def put_run(self, round: int, **fields: object) -> None:
        with self._d.lock:
            self._d.db["rpr_runs"].upsert({"round": round, **fields, "updated_at": now()}, pk="round")

    def finished(self, scope: str) -> dict[str, str]:
        """Finished rollouts under `scope` (round_scope or probe_scope): key -> episode id."""
        return {k: j.episode_id for k, j in self._jobs.finished(scope).items()}

    def jobs(self, round: int, iteration: int) -> dict[str, str]:
        """Finished rollouts of one RPR iteration: key -> episode id."""
        return self.finished(round_scope(round, iteration))

    def probe_jobs(self, round: int, index: int) -> dict[str, str]:
        """Finished rollouts of probe `index` (the actor after that many joint rounds): key -> episode id."""
        return self.finished(probe_scope(round, index))
