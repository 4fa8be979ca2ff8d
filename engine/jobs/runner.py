"""Detached runs: starting a command as a job in its own process, the job's side while it runs,
and stopping it from anywhere.

- `spawn` (the starting terminal): the same command again as a child in a new session (no
  terminal: closing the one that started it ends nothing), its output in a log file, the job id
  in its environment (`JOB_ENV`); registered as running, and returned at once.
- `JobRun` (the job's own process: a detached child, or a command run in the foreground of its
  terminal, which is a job all the same so that other terminals and the TUI can follow and stop
  it): registers its own process, journals every event of the engine's bus
  (`journal.EventJournal`), turns SIGTERM into a clean stop (the engine's cancel, as ctrl+c:
  the work resumes), and records how the job ended.
- `request_stop` / `wait_ended`: SIGTERM to a job's process, and the wait for it to end.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable

from engine.events import EventBus
from engine.jobs.journal import EventJournal
from engine.jobs.registry import JobRegistry, JobStatus, RunnerJob, UnknownJob
from engine.store.schema import pid_alive

log = logging.getLogger(__name__)

JOB_ENV = "TRSI_JOB_ID"  # set in a detached job's environment: the id it runs as


def new_job_id(registry: JobRegistry, kind: str) -> str:
    while True:
        job_id = f"{kind}-{secrets.token_hex(3)}"
        try:
            registry.get(job_id)
        except UnknownJob:
            return job_id


def spawn(registry: JobRegistry, kind: str, program: list[str], args: list[str], logs_dir: Path) -> RunnerJob:
    """Run `program + args` as a new job of `kind` in a process of its own; `args` (what the job
    runs, as the user would type it after `trsi-tui`) are what the registry keeps."""
    job_id = new_job_id(registry, kind)
    log = job_log(logs_dir, job_id)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [*program, *args],
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, JOB_ENV: job_id},
        )
    registry.start(job_id, kind, args, proc.pid, new=True)
    return registry.get(job_id)


def job_log(logs_dir: Path, job_id: str) -> Path:
    """Where job `job_id` writes its output (`<data dir>/logs/jobs/<id>.log`)."""
    return logs_dir / "jobs" / f"{job_id}.log"


class JobRun:
    """The job's own process, while it runs its command: `with JobRun(...) as job: ...`."""

    def __init__(
        self,
        registry: JobRegistry,
        database: Path,
        bus: EventBus,
        job_id: str,
        kind: str,
        command: list[str],
        cancel: Callable[[], None],
        keep_journals: int = 0,
    ) -> None:
        self.registry, self.database, self.bus = registry, database, bus
        self.keep_journals = keep_journals  # [jobs] keep_journals: pruned once this job has ended
        self.id, self.kind, self.command, self._cancel = job_id, kind, command, cancel
        self.detail = ""  # how it went, set by the command (`note`)
        self.stop_requested = False
        self._journal: EventJournal | None = None
        self._previous_handler = None
        self._stopper: threading.Thread | None = None

    def note(self, detail: str) -> None:
        """What the job's record says when it ends (an eval's run id and pass rate)."""
        self.detail = detail

    def __enter__(self) -> "JobRun":
        self.registry.start(self.id, self.kind, self.command, os.getpid())
        self._journal = EventJournal(self.database, self.id, self.bus)
        if threading.current_thread() is threading.main_thread():
            self._previous_handler = signal.signal(signal.SIGTERM, self._on_sigterm)
        return self

    def _on_sigterm(self, signum, frame) -> None:
        if self.stop_requested:
            return
        self.stop_requested = True
        # Not here: the handler interrupts the main thread wherever it is, maybe inside a lock the
        # engine's cancel also takes.
        self._stopper = threading.Thread(target=self._stop, name=f"stop-{self.id}", daemon=True)
        self._stopper.start()

    def _stop(self) -> None:
        self.registry.note(self.id, "stopping: waiting for the running episodes to end")
        self._cancel()

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self._previous_handler is not None:
            signal.signal(signal.SIGTERM, self._previous_handler)
        if self._stopper is not None:
            self._stopper.join(timeout=10)  # its "stopping" note goes before the outcome
        status, detail = self.outcome(exc)
        if self._journal is not None:
            self._journal.close()  # every event is stored before the status says the job ended
        self.registry.finish(self.id, status, detail)
        try:
            pruned = self.registry.prune_journals(self.keep_journals)
        except sqlite3.Error as exc:  # the job's outcome is stored; a prune can wait for the next job
            log.warning("could not prune old job journals: %s", exc)
        else:
            if pruned.events:
                log.info("pruned the journals of %d finished jobs (%d events)", pruned.jobs, pruned.events)
        return False

    def outcome(self, exc: BaseException | None) -> tuple[JobStatus, str]:
        """How the job ended, given what its command raised (None: it returned)."""
        if self.stop_requested or _stopped(exc):
            how = "stopped by `trsi-tui jobs stop`" if self.stop_requested else "stopped by SIGINT"
            after = "its finished episodes are stored" if self.kind == "eval" else "run the same command to resume it"
            return "stopped", "; ".join(filter(None, [how, after, self.detail]))
        code = getattr(exc, "code", getattr(exc, "exit_code", None))  # SystemExit's, or click's Exit's
        exited = isinstance(exc, SystemExit) or hasattr(exc, "exit_code")
        if exc is None or (exited and code in (0, None)):
            return "done", self.detail
        if isinstance(exc, SystemExit):
            return "failed", f"exited with status {code}"
        return "failed", str(exc) or type(exc).__name__


def _stopped(exc: BaseException | None) -> bool:
    """Whether `exc` is a stop (ctrl+c, or the engine's InterruptedError once cancelled), also when a
    front end turned it into an error of its own (the CLI's "stopped; run the same command")."""
    seen = 0
    while exc is not None and seen < 8:  # a chain of contexts, never a cycle in practice: bounded
        if isinstance(exc, (KeyboardInterrupt, InterruptedError)):
            return True
        exc, seen = exc.__context__, seen + 1
    return False


def request_stop(registry: JobRegistry, job_id: str) -> RunnerJob:
    """SIGTERM to the job's process when it is running (it stops cleanly); the job as it was."""
    job = registry.get(job_id)
    if job.running and job.pid:
        try:
            os.kill(job.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass  # it ended just now
    return job


def wait_ended(registry: JobRegistry, job_id: str, timeout: float, poll_s: float = 0.2) -> RunnerJob | None:
    """The job once its process has ended (with its final status), or None after `timeout` seconds."""
    job = registry.get(job_id)
    deadline = time.monotonic() + timeout
    while pid_alive(job.pid):  # it records how it ended before it exits
        if time.monotonic() >= deadline:
            return None
        time.sleep(poll_s)
    return registry.get(job.id)
