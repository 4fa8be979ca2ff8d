"""The database: one SQLite connection (WAL) and the schema's migrations.

The schema carries a version in `meta`; `MIGRATIONS[i]` takes version i to i+1, so an older
database is upgraded in place and a newer one is refused with a clear message rather than
misread.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

import sqlite_utils


class StoreError(RuntimeError):
    """The database cannot be used (corrupt, or written by a newer trsi-tui)."""


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _v1(db: sqlite_utils.Database) -> None:
    db["runs"].create(
        {
            "id": str,
            "kind": str,
            "created_at": str,
            "finished_at": str,
            "status": str,
            "pid": int,
            "backend": str,
            "agent": str,
            "tasks_path": str,
            "total": int,
            "config": str,
            "summary": str,
        },
        pk="id",
    )
    db["episodes"].create(
        {
            "id": str,
            "run_id": str,
            "task": str,
            "split": str,
            "agent": str,
            "backend": str,
            "attempt": int,
            "status": str,
            "success": int,
            "checks_passed": int,
            "checks_total": int,
            "reward": float,
            "failure_mode": str,
            "error": str,
            "verifier_source": str,
            "verifier_output": str,
            "started_at": str,
            "duration_s": float,
            "phase_s": str,
        },
        pk="id",
        foreign_keys=[("run_id", "runs", "id")],
    )
    db["episodes"].create_index(["run_id"])
    db["episodes"].create_index(["task"])
    db["checks"].create(
        {"episode_id": str, "idx": int, "name": str, "status": str, "message": str},
        pk=("episode_id", "idx"),
        foreign_keys=[("episode_id", "episodes", "id")],
    )
    db["steps"].create(
        {
            "episode_id": str,
            "idx": int,
            "command": str,
            "output": str,
            "exit_code": int,
            "timed_out": int,
            "duration_s": float,
        },
        pk=("episode_id", "idx"),
        foreign_keys=[("episode_id", "episodes", "id")],
    )


def _v2(db: sqlite_utils.Database) -> None:
    db["episodes"].add_column("resource_events", str)


def _v3(db: sqlite_utils.Database) -> None:
    for name, kind in (
        ("action_text", str),
        ("token_ids", str),
        ("logprobs", str),
        ("prompt_tokens", int),
        ("parse_error", str),
        ("generation_s", float),
    ):
        db["steps"].add_column(name, kind)
    db["episodes"].add_column("stop_reason", str)
    db["episode_tokens"].create(
        {"episode_id": str, "ids": str, "mask": str, "messages": str, "harness": str, "model": str},
        pk="episode_id",
        foreign_keys=[("episode_id", "episodes", "id")],
    )


def _v4(db: sqlite_utils.Database) -> None:
    db["runbooks"].create(
        {
            "id": str,
            "task": str,
            "round": int,
            "source_episode_id": str,
            "harness": str,
            "status": str,
            "text": str,
            "original_text": str,
            "leak": str,
            "verdict": str,
            "decided_by": str,
            "note": str,
            "created_at": str,
            "updated_at": str,
            "author": str,
            "reviewer_raw": str,
        },
        pk="id",
    )
    db["runbooks"].create_index(["status"])
    db["runbooks"].create_index(["round", "source_episode_id"])
    # RSR: one row per round (its stage cursor), one per finished job, and the SFT samples.
    db["rsr_rounds"].create(
        {
            "round": int,
            "model": str,
            "tasks_path": str,
            "settings": str,
            "stage": str,
            "checkpoint": str,
            "detail": str,
            "updated_at": str,
        },
        pk="round",
    )
    db["rsr_jobs"].create(
        {"round": int, "stage": str, "key": str, "run_id": str, "episode_id": str, "success": int},
        pk=("round", "stage", "key"),
    )
    db["sft_samples"].create(
        {
            "round": int,
            "digest": str,
            "ids": str,
            "mask": str,
            "task": str,
            "harness": str,
            "source_episode_id": str,
            "replay_episode_id": str,
            "runbook_id": str,
        },
        pk=("round", "digest"),
    )
    db["metrics"].create(
        {"run_id": str, "stage": str, "name": str, "step": int, "value": float}, pk=("run_id", "name", "step")
    )
    db["stages"].create(
        {
            "name": str,
            "status": str,
            "checkpoint": str,
            "parent": str,
            "eval_run_id": str,
            "pass_at_1": float,
            "ci_low": float,
            "ci_high": float,
            "updated_at": str,
        },
        pk="name",
    )


def _v5(db: sqlite_utils.Database) -> None:
    # RPR: one row per stage (its settings and where it stands), one per finished rollout.
    db["rpr_runs"].create(
        {
            "round": int,
            "model": str,
            "tasks_path": str,
            "settings": str,
            "status": str,
            "iteration": int,
            "checkpoint": str,
            "start_adapter": str,
            "critic_from": str,
            "detail": str,
            "updated_at": str,
        },
        pk="round",
    )
    db["rpr_jobs"].create(
        {"round": int, "iteration": int, "key": str, "run_id": str, "episode_id": str, "success": int},
        pk=("round", "iteration", "key"),
    )
    # Pipeline evaluations: one row per finished eval episode of a stage.
    db["stage_jobs"].create(
        {"stage": str, "key": str, "run_id": str, "episode_id": str, "success": int}, pk=("stage", "key")
    )
    # Which data, config and parent produced each stage's checkpoint (JSON), and what it is doing.
    db["stages"].add_column("lineage", str)
    db["stages"].add_column("detail", str)


def _v6(db: sqlite_utils.Database) -> None:
    # One keyed-jobs table for every resumable stage (RSR rounds, RPR stages, pipeline evaluations):
    # a job's scope names the stage and its part ("rsr/1/explore", "rpr/1/3", "stage/Base").
    db["jobs"].create({"scope": str, "key": str, "run_id": str, "episode_id": str, "success": int}, pk=("scope", "key"))
    db.execute(
        "INSERT INTO jobs SELECT 'rsr/' || round || '/' || stage, key, run_id, episode_id, success FROM rsr_jobs"
    )
    db.execute(
        "INSERT INTO jobs SELECT 'rpr/' || round || '/' || iteration, key, run_id, episode_id, success FROM rpr_jobs"
    )
    db.execute("INSERT INTO jobs SELECT 'stage/' || stage, key, run_id, episode_id, success FROM stage_jobs")
    for table in ("rsr_jobs", "rpr_jobs", "stage_jobs"):
        db[table].drop()


def _v7(db: sqlite_utils.Database) -> None:
    # The process running a stage: a stage left "running" by a process that is gone was interrupted.
    db["stages"].add_column("pid", int)


def _v8(db: sqlite_utils.Database) -> None:
    # Runs that outlive their terminal: every event a detached job emits, in order (AUTOINCREMENT:
    # an id is never reused, so a reader that resumes after the last id it saw misses nothing),
    # and the jobs themselves with the process running each.
    db.execute("CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, job TEXT, ts REAL, type TEXT, payload TEXT)")
    db["events"].create_index(["job", "id"])
    db["runner_jobs"].create(
        {
            "id": str,
            "kind": str,
            "command": str,
            "pid": int,
            "status": str,
            "started_at": str,
            "ended_at": str,
            "detail": str,
        },
        pk="id",
    )


MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [_v1, _v2, _v3, _v4, _v5, _v6, _v7, _v8]
SCHEMA_VERSION = len(MIGRATIONS)


def pid_alive(pid: int | None) -> bool:
    """Whether process `pid` of this machine is alive (a process of another user counts; a zombie,
    ended but not yet reaped by its parent, does not)."""
    if not pid:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False  # no /proc (not Linux), or it ended just now: kill(0) said it was there
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


class _Handle(sqlite_utils.Database):
    """sqlite-utils' handle, whose transactions take the write lock as they begin (BEGIN IMMEDIATE).

    Another process (the TUI, a detached job's events journal, even a thread of this one) writes
    to the same file. A plain BEGIN reads first (sqlite-utils looks at the table) and asks for the
    write lock later; if another connection committed in between, SQLite refuses at once with
    "database is locked" instead of waiting out the busy timeout. Taking the lock first waits."""

    @contextlib.contextmanager
    def atomic(self) -> Iterator["_Handle"]:
        if self.conn.in_transaction:  # nested: a savepoint inside the transaction that holds the lock
            with super().atomic():
                yield self
            return
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self
        except BaseException:
            self.conn.rollback()
            raise
        try:
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.rollback()
            raise


class Database:
    """The connection every repository shares, with the lock that serializes its use."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        self.db = _Handle(conn)
        self.lock = threading.RLock()
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{path}: not a usable trsi-tui database: {exc}") from None

    def rows(self, sql: str, args: list | tuple = ()) -> list[dict]:
        with self.lock:
            return list(self.db.query(sql, args))

    def schema_version(self) -> int:
        if "meta" not in self.db.table_names():
            return 0
        row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        with self.lock:
            if "meta" not in self.db.table_names():
                self.db["meta"].create({"key": str, "value": str}, pk="key")
            current = self.schema_version()
            if current > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: database schema v{current} is newer than this trsi-tui "
                    f"(v{SCHEMA_VERSION}); upgrade trsi-tui"
                )
            for version in range(current, SCHEMA_VERSION):
                with self.db.atomic():
                    MIGRATIONS[version](self.db)
                    self.db["meta"].upsert({"key": "schema_version", "value": str(version + 1)}, pk="key")

    def close(self) -> None:
        with self.lock:
            self.db.conn.close()


def storable(row: dict) -> dict:
    """A row whose text SQLite can hold. A sandbox's file names reach results decoded with
    surrogateescape, and a report's JSON may carry `\\udcff`: a lone surrogate cannot be encoded
    as UTF-8, and one such episode would end the run that stores it."""
    return {
        k: v.encode("utf-8", "backslashreplace").decode("utf-8") if isinstance(v, str) else v for k, v in row.items()
    }
