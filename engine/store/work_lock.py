"""One writer of resumable work per store: a second process that would run an RSR round, an RPR
stage or the pipeline on the same data directory is refused, with a message naming the work
that holds it.

Two processes resuming the same stage would each run the jobs the other has not finished yet,
and both record them: episodes repeated, the stage table overwritten by whichever ends last.

The lock is an advisory `flock` on a file beside the database, held for as long as the work
runs. The kernel releases it when its process ends, however it ends (SIGKILL included), so a
lock left by a dead process never blocks anyone; the file itself only says who holds it (and,
for a detached run, its job id, so that the refusal says how to follow or stop it).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


class WorkBusy(RuntimeError):
    """Another process is running resumable work on this data directory."""


def lock_path(database: Path) -> Path:
    return Path(f"{database}.work-lock")


@contextmanager
def hold_work_lock(database: Path, what: str, job: str | None = None) -> Iterator[None]:
    """Hold the store's work lock while the block runs `what` ("the pipeline", "RSR round 2"), as
    the detached job `job` when it is one (`trsi-tui jobs`)."""
    path = lock_path(database)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise WorkBusy(_busy_message(path, database)) from None
        holder = {"pid": os.getpid(), "what": what, "since": time.strftime("%Y-%m-%d %H:%M:%S")}
        if job:
            holder["job"] = job
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)  # the holder's note goes before the lock does
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def check_work_lock(database: Path) -> None:
    """WorkBusy (naming the holder) when another process holds the work lock now; else nothing.
    A look only: the lock is free again when this returns."""
    path = lock_path(database)
    if not path.exists():
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise WorkBusy(_busy_message(path, database)) from None
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _busy_message(path: Path, database: Path) -> str:
    try:
        holder = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        holder = {}  # written half-way by its holder at this very moment: say what is known
    job = holder.get("job")
    process = f"process {holder.get('pid', '?')}, since {holder.get('since', '?')}"
    who = f"{holder.get('what', 'resumable work')} ({f'job {job}, ' if job else ''}{process})"
    how = (
        f"Follow it with `trsi-tui jobs attach {job}`, or stop it with `trsi-tui jobs stop {job}` and run this "
        "again to resume."
        if job
        else "Wait for it, or stop it (ctrl+c, or s in its TUI) and run this again to resume."
    )
    return f"{who} is running on this data directory ({database.parent}); one process at a time runs work there. {how}"
