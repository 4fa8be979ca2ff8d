"""SQLite persistence: one `Store` over one connection, with a repository per area.

    store.runs       runs, episodes, checks, steps, token buffers   (runs.py)
    store.runbooks   runbook drafts, reviews, decisions             (runbooks.py)
    store.rsr        RSR rounds and SFT samples                     (rsr.py)
    store.rpr        RPR stages                                     (rpr.py)
    store.jobs       finished keyed jobs of resumable stages        (jobs.py)
    store.metrics    training metrics                               (metrics.py)
    store.stages     the pipeline's stage table                     (stages.py)

Every read returns typed records (records.py); the schema and its migrations are in schema.py.
"""

from __future__ import annotations

from pathlib import Path

from engine.store.jobs import JobRepository
from engine.store.metrics import MetricRepository
from engine.store.rpr import RprRepository
from engine.store.rsr import RsrRepository
from engine.store.runbooks import RunbookRepository
from engine.store.runs import RunRepository
from engine.store.schema import MIGRATIONS, SCHEMA_VERSION, Database, StoreError
from engine.store.stages import StageRepository

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Store", "StoreError"]


class Store:
    def __init__(self, path: Path | str) -> None:
        self.database = Database(path)
        self.path = self.database.path
        self.db = self.database.db  # the sqlite-utils handle, for tests and one-off maintenance
        self.jobs = JobRepository(self.database)
        self.runs = RunRepository(self.database)
        self.runbooks = RunbookRepository(self.database)
        self.rsr = RsrRepository(self.database, self.jobs)
        self.rpr = RprRepository(self.database, self.jobs)
        self.metrics = MetricRepository(self.database)
        self.stages = StageRepository(self.database, self.jobs)
        self.runs.mark_dead()
        self.stages.mark_dead()

    def schema_version(self) -> int:
        return self.database.schema_version()

    def close(self) -> None:
        self.database.close()
