"""RPR: each stage's settings and where it stands (round cursor, final actor), and its rollouts.

A stage is named by its number (RPR-N); the table's column keeps its old name, `round`.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.keys import rpr_probe_scope, rpr_round_scope
from engine.store.jobs import JobRepository
from engine.store.records import RprRunRecord
from engine.store.schema import Database, now


@dataclass(frozen=True)
class RolloutOutcome:
    """How one scored rollout of a stage ended: what a round's task choice is decided from."""

    task: str
    success: bool
    reward: float


@dataclass(frozen=True)
class RoundCounts:
    """The stored rollouts of one PPO round of a stage, and how many of them succeeded."""

    iteration: int
    episodes: int
    successes: int


class RprRepository:
    def __init__(self, database: Database, jobs: JobRepository) -> None:
        self._d, self._jobs = database, jobs

    def run(self, number: int) -> RprRunRecord | None:
        rows = self._d.rows("SELECT * FROM rpr_runs WHERE round = ?", [number])
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

    def put_run(self, number: int, **fields: object) -> None:
        with self._d.lock:
            self._d.db["rpr_runs"].upsert({"round": number, **fields, "updated_at": now()}, pk="round")

    def finished(self, scope: str) -> dict[str, str]:
        """Finished rollouts under `scope` (rpr_round_scope or rpr_probe_scope): key -> episode id."""
        return {k: j.episode_id for k, j in self._jobs.finished(scope).items()}

    def jobs(self, number: int, iteration: int) -> dict[str, str]:
        """Finished rollouts of one PPO round of stage `number`: key -> episode id."""
        return self.finished(rpr_round_scope(number, iteration))

    def probe_jobs(self, number: int, index: int) -> dict[str, str]:
        """Finished rollouts of probe `index` (the actor after that many joint rounds): key -> episode id."""
        return self.finished(rpr_probe_scope(number, index))

    def scored_before(self, number: int, iteration: int) -> list[RolloutOutcome]:
        """The scored rollouts of stage `number`'s rounds before `iteration` (infrastructure
        failures, which have no reward, left out), in the order their episodes are read back."""
        episode_ids = [e for i in range(iteration) for e in self.jobs(number, i).values()]
        found: list[RolloutOutcome] = []
        # The same chunked query as RunRepository.episodes_by_id: the rows come back in the order
        # SQLite returns them, and the task choice sums the outcomes in that order.
        for start in range(0, len(episode_ids), 500):  # SQLite caps the number of bound parameters
            chunk = episode_ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for r in self._d.rows(f"SELECT * FROM episodes WHERE id IN ({marks})", chunk):
                if r["reward"] is not None:
                    found.append(RolloutOutcome(r["task"], bool(r["success"]), r["reward"]))
        return found

    def round_counts(self, number: int, rounds: int) -> list[RoundCounts]:
        """Episodes and successes of each of stage `number`'s first `rounds` PPO rounds (probes not counted)."""
        counts = []
        for iteration in range(rounds):
            rows = self._d.rows(
                "SELECT e.success FROM jobs j JOIN episodes e ON e.id = j.episode_id WHERE j.scope = ?",
                [rpr_round_scope(number, iteration)],
            )
            counts.append(RoundCounts(iteration, len(rows), sum(bool(r["success"]) for r in rows)))
        return counts
