"""Training metrics: one scalar per (run, name, step); a resumed step overwrites, never duplicates."""

from __future__ import annotations

from dataclasses import asdict

from engine.store.records import MetricPoint
from engine.store.schema import Database


class MetricRepository:
    def __init__(self, database: Database) -> None:
        self._d = database

    def log(self, points: list[MetricPoint]) -> None:
        with self._d.lock, self._d.db.atomic():
            self._d.db["metrics"].upsert_all(
                ({k: v for k, v in asdict(p).items() if k != "seq"} for p in points), pk=("run_id", "name", "step")
            )

    def points(self, run_id: str, name: str | None = None, after_rowid: int = 0) -> list[MetricPoint]:
        """A run's points by name and step; `after_rowid` reads only points written after an earlier read."""
        sql, args = "SELECT rowid AS rid, * FROM metrics WHERE run_id = ? AND rowid > ?", [run_id, after_rowid]
        if name:
            sql += " AND name = ?"
            args.append(name)
        rows = self._d.rows(sql + " ORDER BY name, step", args)
        return [MetricPoint(r["run_id"], r["stage"] or "", r["name"], r["step"], r["value"], r["rid"]) for r in rows]

    def runs(self) -> list[str]:
        return [r["run_id"] for r in self._d.rows("SELECT DISTINCT run_id FROM metrics ORDER BY rowid")]
