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

    def catch_up(self, keep_finished: int = 24) -> "CatchUp":
        """The job's events so far, thinned (`catch_up`); `poll` then goes on after them."""
        if self.job is None:
            raise ValueError("catching up needs a tail of one job")
        caught = catch_up(self._conn, self.job, keep_finished)
        self.after = max(self.after, caught.after)
        return caught

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> "EventTail":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# -- catching up: what a follower that arrives late needs ---------------------------------------
# Events about one episode's shell: of no use once the episode has finished (its verdict says how
# it went, its trajectory is stored).
SHELL_TYPES = ("SandboxOutput", "EpisodePhase", "AgentStepTaken")
# What an EpisodeFinished carries beyond its verdict (the trajectory, the token buffer): stored
# with the episode, left out of a catch-up.
HEAVY_RESULT_FIELDS = ("steps", "token_ids", "token_mask", "messages", "verifier_output", "verifier_source")
# Progress events where only the newest per key tells where things are: the key's JSON paths.
LAST_WINS = {
    "TrainingStep": ("$.run_id", "$.name"),
    "RsrProgress": ("$.round",),
    "RprProgress": ("$.round",),
    "PipelineProgress": (),
}


@dataclass(frozen=True)
class CatchUp:
    entries: list[JournalEntry]  # oldest first, typed
    after: int  # the last id it covers: follow with an `EventTail` from here
    skipped: int  # events left out (see `catch_up`)


def catch_up(conn: sqlite3.Connection, job: str, keep_finished: int = 24) -> CatchUp:
    """The events of `job` so far, thinned to what shows the job as it is now, quickly however long
    it has run: every event of the episodes still running (their shell output so far); of the
    finished ones only their EpisodeFinished (without the trajectory) and, for the newest
    `keep_finished`, their EpisodeStarted; the newest of each progress line (a training metric per
    run and name, an RSR or RPR round, the pipeline); every other event. The filtering happens in
    SQLite: the shell output of finished episodes is never decoded."""
    after = conn.execute("SELECT max(id) FROM events WHERE job = ?", [job]).fetchone()[0] or 0
    total = conn.execute("SELECT count(*) FROM events WHERE job = ? AND id <= ?", [job, after]).fetchone()[0]
    shell = ", ".join(f"'{t}'" for t in SHELL_TYPES)
    strip = ", ".join(f"'$.result.{f}'" for f in HEAVY_RESULT_FIELDS)
    last_wins = " ".join(
        f"WHEN '{t}' THEN id IN (SELECT max(id) FROM ev WHERE type = '{t}'{_group_by(paths)})"
        for t, paths in LAST_WINS.items()
    )
    sql = f"""
        WITH ev AS (SELECT id, ts, type, payload FROM events WHERE job = :job AND id <= :after),
        finished AS (SELECT id, json_extract(payload, '$.result.episode_id') AS episode FROM ev
                     WHERE type = 'EpisodeFinished'),
        recent AS (SELECT episode FROM finished ORDER BY id DESC LIMIT :keep)
        SELECT id, ts, type,
               CASE WHEN type = 'EpisodeFinished' THEN json_remove(payload, {strip}) ELSE payload END
        FROM ev
        WHERE CASE
            WHEN type IN ({shell}) THEN json_extract(payload, '$.episode_id') NOT IN (SELECT episode FROM finished)
            WHEN type = 'EpisodeStarted' THEN (
                json_extract(payload, '$.episode_id') NOT IN (SELECT episode FROM finished)
                OR json_extract(payload, '$.episode_id') IN (SELECT episode FROM recent))
            ELSE CASE type {last_wins} ELSE 1 END
        END
        ORDER BY id
    """
    rows = conn.execute(sql, {"job": job, "after": after, "keep": keep_finished}).fetchall()
    entries = []
    for id_, ts, type_name, payload in rows:
        try:
            entries.append(JournalEntry(id_, job, ts, decode(type_name, payload)))
        except (UnknownEvent, TypeError, ValueError):
            log.warning("skipped stored event %d of type %s: not readable by this trsi-tui", id_, type_name)
    return CatchUp(entries, after, total - len(rows))


def _group_by(paths: tuple[str, ...]) -> str:
    return " GROUP BY " + ", ".join(f"json_extract(payload, '{p}')" for p in paths) if paths else ""
