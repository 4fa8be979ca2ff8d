"""RSR: each round's cursor and checkpoint, its finished jobs, and the SFT samples it produced."""

from __future__ import annotations

import json

from engine.keys import RSR_EXPLORE_SCOPE_LIKE, ExploreKey, rsr_round_of_scope, rsr_scope
from engine.store.jobs import JobRepository
from engine.store.records import Provenance, RsrRoundRecord, Sample
from engine.store.schema import Database, now, storable


class RsrRepository:
    def __init__(self, database: Database, jobs: JobRepository) -> None:
        self._d, self._jobs = database, jobs

    def round(self, round: int) -> RsrRoundRecord | None:
        rows = self._d.rows("SELECT * FROM rsr_rounds WHERE round = ?", [round])
        if not rows:
            return None
        r = rows[0]
        return RsrRoundRecord(
            r["round"],
            r["model"] or "",
            r["tasks_path"] or "",
            r["settings"] or "{}",
            r["stage"] or "",
            r["checkpoint"] or "",
            r["detail"] or "",
            r["updated_at"] or "",
        )

    def next_round(self) -> int:
        with self._d.lock:
            row = self._d.db.execute("SELECT MAX(round) FROM rsr_rounds").fetchone()
        return (row[0] or 0) + 1

    def put_round(self, round: int, **fields: object) -> None:
        with self._d.lock:
            self._d.db["rsr_rounds"].upsert({"round": round, **fields, "updated_at": now()}, pk="round")

    def jobs(self, round: int, stage: str) -> dict[str, tuple[str, bool]]:
        """Finished jobs of a stage: key -> (episode id, success)."""
        return {k: (j.episode_id, j.success) for k, j in self._jobs.finished(rsr_scope(round, stage)).items()}

    def explore_outcomes(self, round: int) -> dict[str, list[tuple[bool, float]]]:
        """task -> (success, reward) of each explore attempt of RSR round `round`, aided or not."""
        rows = self._d.rows(
            "SELECT j.key, j.success, e.reward FROM jobs j JOIN episodes e ON e.id = j.episode_id "
            "WHERE j.scope = ? ORDER BY j.rowid",
            [rsr_scope(round, "explore")],
        )
        found: dict[str, list[tuple[bool, float]]] = {}
        for r in rows:
            found.setdefault(ExploreKey.parse(r["key"]).task, []).append((bool(r["success"]), r["reward"] or 0.0))
        return found

    def latest_explore_outcomes(self) -> dict[str, tuple[int, list[tuple[bool, float]]]]:
        """task -> (the newest RSR round that explored it, its (success, reward) per unaided attempt
        there: attempts shown worked examples (keys ending `|aided`) say little of the pass rate)."""
        rows = self._d.rows(
            "SELECT j.scope, j.key, j.success, e.reward FROM jobs j JOIN episodes e ON e.id = j.episode_id "
            "WHERE j.scope LIKE ? ORDER BY j.rowid",
            [RSR_EXPLORE_SCOPE_LIKE],
        )
        found: dict[str, tuple[int, list[tuple[bool, float]]]] = {}
        for r in rows:
            key = ExploreKey.parse(r["key"])
            if key.aided:
                continue
            round_, task = rsr_round_of_scope(r["scope"]), key.task
            newest, attempts = found.get(task, (round_, []))
            if round_ > newest:
                newest, attempts = round_, []
            if round_ == newest:
                attempts.append((bool(r["success"]), r["reward"] or 0.0))
                found[task] = (newest, attempts)
        return found

    def add_samples(self, round: int, samples: list[Sample]) -> int:
        """Store SFT samples; a sample already stored for the round (same tokens) is skipped."""
        rows = [
            {
                "round": round,
                "digest": s.digest,
                "ids": json.dumps(list(s.ids)),
                "mask": json.dumps(list(s.mask)),
                "task": s.provenance.task,
                "harness": s.provenance.harness,
                "source_episode_id": s.provenance.source_episode_id,
                "replay_episode_id": s.provenance.replay_episode_id,
                "runbook_id": s.provenance.runbook_id,
            }
            for s in samples
        ]
        with self._d.lock, self._d.db.atomic():
            before = self._d.db["sft_samples"].count
            self._d.db["sft_samples"].insert_all(map(storable, rows), pk=("round", "digest"), ignore=True)
            return self._d.db["sft_samples"].count - before

    def samples(self, round: int) -> list[Sample]:
        rows = self._d.rows("SELECT * FROM sft_samples WHERE round = ? ORDER BY rowid", [round])
        return [
            Sample(
                tuple(json.loads(r["ids"])),
                tuple(json.loads(r["mask"])),
                Provenance(r["task"], r["harness"], r["source_episode_id"], r["replay_episode_id"], r["runbook_id"]),
            )
            for r in rows
        ]
