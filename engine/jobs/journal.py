"""The events journal: every event of a job, appended to the store's `events` table, so that live
events reach any process (`trsi-tui jobs attach` follows a job started in another terminal) and a
finished episode can be replayed as it happened, shell output included.

`EventJournal` subscribes to an `EventBus`. Emitting only appends the event to a list (no
SQLite, no JSON on the emitting thread); a writer thread with its own connection encodes and
inserts what has gathered every `FLUSH_S` in one transaction. `close()` writes what is left.

`EventTail` reads them back, typed, after a given id; readers and the writer are different
processes, which the database allows: it is in WAL mode (readers never block the writer) and
every connection waits up to 30 s for a lock instead of failing.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from engine.events import Event, EventBus
from engine.jobs.codec import UnknownEvent, decode, encode

log = logging.getLogger(__name__)

FLUSH_S = 0.05
BUSY_TIMEOUT_S = 30.0


def connect(database: Path | str) -> sqlite3.Connection:
    """A connection of its own to the store's database (WAL is set there already, by the store)."""
    return sqlite3.connect(str(database), timeout=BUSY_TIMEOUT_S, check_same_thread=False)


class EventJournal:
    """Appends every event of `bus` to the `events` table under `job`, from a writer thread."""

    def __init__(self, database: Path | str, job: str, bus: EventBus, *, flush_s: float = FLUSH_S) -> None:
        self.database, self.job, self.flush_s = Path(database), job, flush_s
        self._pending: list[tuple[float, Event]] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self.written = 0  # events stored so far
        self.dropped = 0  # events a failed write lost (logged)
        self._unsubscribe: Callable[[], None] | None = bus.subscribe(self._on_event)
        self._writer = threading.Thread(target=self._write_loop, name=f"journal-{job}", daemon=True)
        self._writer.start()

    def __enter__(self) -> "EventJournal":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _on_event(self, event: Event) -> None:
        item = (time.time(), event)
        with self._lock:
            self._pending.append(item)

    def _write_loop(self) -> None:
        conn = connect(self.database)
        try:
            while not self._closing.wait(self.flush_s):
                self._flush(conn)
            self._flush(conn)  # what came before close
        finally:
            conn.close()

    def _flush(self, conn: sqlite3.Connection) -> None:
        with self._lock:
            batch, self._pending = self._pending, []
        if not batch:
            return
        rows = [(self.job, ts, *encode(event)) for ts, event in batch]
        try:
            with conn:
                conn.executemany("INSERT INTO events (job, ts, type, payload) VALUES (?, ?, ?, ?)", rows)
            self.written += len(rows)
        except sqlite3.Error:
            self.dropped += len(rows)
            log.exception("the events journal of job %s lost %d events", self.job, len(rows))

    def close(self) -> None:
        """Stop listening, write what is pending, and end the writer. Idempotent."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._closing.set()
        self._writer.join()


@dataclass(frozen=True)
class JournalEntry:
    id: int
    job: str
    ts: float
    event: Event


def read_events(
    conn: sqlite3.Connection, *, after: int = 0, job: str | None = None, limit: int = 10_000
) -> list[JournalEntry]:
    """Stored events with an id above `after` (of `job` only, when given), oldest first, typed.
    An event of a type this version does not know is skipped (and logged)."""
    return _read(conn, after, job, limit)[0]


def _read(conn: sqlite3.Connection, after: int, job: str | None, limit: int) -> tuple[list[JournalEntry], int]:
    """The entries, and the last id read (skipped rows included; `after` when there were none)."""
    where, args = ("id > ? AND job = ?", [after, job]) if job else ("id > ?", [after])
    rows = conn.execute(
        f"SELECT id, job, ts, type, payload FROM events WHERE {where} ORDER BY id LIMIT ?", [*args, limit]
    ).fetchall()
    entries = []
    for id_, job_, ts, type_name, payload in rows:
        try:
            entries.append(JournalEntry(id_, job_, ts, decode(type_name, payload)))
        except (UnknownEvent, TypeError, ValueError):
            log.warning("skipped stored event %d of type %s: not readable by this trsi-tui", id_, type_name)
    return entries, (rows[-1][0] if rows else after)


class EventTail:
    """Follows the journal: each `poll()` returns the events stored since the previous one."""

    def __init__(self, database: Path | str, job: str | None = None, after: int = 0) -> None:
        self.job, self.after = job, after
        self._conn = connect(database)

    def poll(self, limit: int = 10_000) -> list[JournalEntry]:
        entries, self.after = _read(self._conn, self.after, self.job, limit)
        return entries

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> "EventTail":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
