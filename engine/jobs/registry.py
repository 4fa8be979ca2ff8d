"""The jobs registry: one row per detached run (`--detach`) in the store's `runner_jobs` table.

A job is `running` while its process works, then `done`, `failed` (with the error) or `stopped`
(by `trsi-tui jobs stop`: its work resumes with the same command). A job left `running` by a
process that no longer exists (SIGKILL, a machine that went down) reads as `interrupted`, as a
pipeline stage does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from engine.store.schema import Database, now, pid_alive

JobStatus = Literal["running", "done", "failed", "stopped", "interrupted"]
JOB_STATUSES: tuple[str, ...] = ("running", "done", "failed", "stopped", "interrupted")
INTERRUPTED = "its process ended without recording how (killed, or the machine went down)"


@dataclass(frozen=True)
class RunnerJob:
    id: str
    kind: str  # pipeline, eval, rsr, rpr
    command: tuple[str, ...]  # the trsi-tui arguments the job runs
    pid: int | None
    status: JobStatus
    started_at: str
    ended_at: str = ""
    detail: str = ""

    @property
    def running(self) -> bool:
        return self.status == "running"


@dataclass(frozen=True)
class Pruned:
    jobs: int  # finished jobs whose journal was deleted
    events: int


class UnknownJob(KeyError):
    """No stored job has that id (or unique id prefix)."""

    def __str__(self) -> str:
        return str(self.args[0])


class JobRegistry:
    def __init__(self, database: Database) -> None:
        self._d = database

    def start(self, job_id: str, kind: str, command: list[str], pid: int, *, new: bool = False) -> None:
        """Record `job_id` as running in process `pid`: by the process that started it (`new`: unless
        the job's own process was quicker), then again by that process itself."""
        with self._d.lock:
            existing = self._d.rows("SELECT started_at FROM runner_jobs WHERE id = ?", [job_id])
            if existing and new:
                return
            self._d.db["runner_jobs"].upsert(
                {
                    "id": job_id,
                    "kind": kind,
                    "command": json.dumps(list(command)),
                    "pid": pid,
                    "status": "running",
                    "started_at": existing[0]["started_at"] if existing else now(),
                    "ended_at": "",
                    "detail": "",
                },
                pk="id",
            )

    def note(self, job_id: str, detail: str) -> None:
        """What a running job is doing (or how it ended so far)."""
        with self._d.lock:
            self._d.db["runner_jobs"].update(job_id, {"detail": detail})

    def finish(self, job_id: str, status: JobStatus, detail: str = "") -> None:
        with self._d.lock:
            self._d.db["runner_jobs"].update(job_id, {"status": status, "detail": detail, "ended_at": now()})

    def mark_dead(self) -> None:
        """Jobs left 'running' by a process that no longer exists were interrupted."""
        with self._d.lock:
            for row in self._d.rows("SELECT id, kind, pid FROM runner_jobs WHERE status = 'running'"):
                if not pid_alive(row["pid"]):
                    after = "its finished episodes are stored" if row["kind"] == "eval" else "run its command to resume"
                    # When it ended is not known: ended_at stays empty.
                    self._d.db["runner_jobs"].update(
                        row["id"], {"status": "interrupted", "detail": f"{INTERRUPTED}; {after}"}
                    )

    def prune_journals(self, keep: int) -> Pruned:
        """Delete the journaled events of every finished job but the newest `keep` (0: none are
        deleted). A running job's events are never touched, nor any job's row."""
        if keep <= 0:
            return Pruned(0, 0)
        self.mark_dead()
        with self._d.lock:
            finished = self._d.rows(
                "SELECT id FROM runner_jobs WHERE status != 'running' ORDER BY started_at DESC, rowid DESC"
            )
            counts = []
            with self._d.db.atomic():
                for row in finished[keep:]:
                    counts.append(self._d.db.execute("DELETE FROM events WHERE job = ?", [row["id"]]).rowcount)
        return Pruned(sum(1 for n in counts if n), sum(counts))

    def list(self, limit: int = 50) -> list[RunnerJob]:
        """The newest jobs first, each with its status as of now."""
        self.mark_dead()
        rows = self._d.rows("SELECT * FROM runner_jobs ORDER BY started_at DESC, rowid DESC LIMIT ?", [limit])
        return [_job(r) for r in rows]

    def get(self, job_id: str) -> RunnerJob:
        """The job `job_id` names (its id, or a prefix of exactly one id), its status as of now."""
        self.mark_dead()
        rows = self._d.rows("SELECT * FROM runner_jobs WHERE id = ?", [job_id])
        if not rows:
            pattern = job_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            rows = self._d.rows("SELECT * FROM runner_jobs WHERE id LIKE ? ESCAPE '\\'", [pattern])
        if not rows:
            raise UnknownJob(f"no job {job_id!r} (see `trsi-tui jobs list`)")
        if len(rows) > 1:
            raise UnknownJob(
                f"{job_id!r} names several jobs ({', '.join(sorted(r['id'] for r in rows))}): give more of it"
            )
        return _job(rows[0])


def _job(r: dict) -> RunnerJob:
    return RunnerJob(
        id=r["id"],
        kind=r["kind"],
        command=tuple(json.loads(r["command"] or "[]")),
        pid=r["pid"],
        status=r["status"],
        started_at=r["started_at"] or "",
        ended_at=r["ended_at"] or "",
        detail=r["detail"] or "",
    )
