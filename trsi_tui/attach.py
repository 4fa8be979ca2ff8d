"""Attaching the TUI to a detached job (`--detach`, `trsi-tui jobs`): the work runs in the job's
process, the TUI shows it live and can quit without ending it.

`JobWatcher` is a thread of its own. While the TUI follows no job it asks for the newest running
one every `JOBS_EVERY_S`; once it has one it catches up (the job's events so far, thinned by the
engine to what shows the job as it is now: the shell output of episodes still running, not that of
finished ones), then tails the job's journal every `POLL_S` and hands each event to the app exactly
as the engine's bus hands in-process events (`TrsiApp._on_bus_event`), so every screen shows them
the same way. Every `STATUS_EVERY_S` it reads the job's status and activity (its newest progress,
the runbooks it waits for); when the job has ended it says so and goes back to looking.

A job the TUI has just started itself (`[tui] detach`) is handed to `follow`: the watcher follows
it next, at once, even if it has already ended (a job that failed as it started says so).

The watcher never touches UI state: it posts `JobAttached`, `JobActivityChanged` and `JobEnded`,
and the app's handlers apply them.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Callable

from engine.api import Engine, JobActivity, RunnerJob
from engine.events import Event
from trsi_tui.messages import JobActivityChanged, JobAttached, JobEnded

if TYPE_CHECKING:
    from textual.app import App

log = logging.getLogger(__name__)

POLL_S = 0.05  # the journal's writer flushes every 50 ms
JOBS_EVERY_S = 2.0
STATUS_EVERY_S = 0.5


class JobWatcher:
    def __init__(self, app: App, engine: Engine, on_event: Callable[[Event], None], keep_finished: int) -> None:
        self.app, self.engine, self.on_event, self.keep_finished = app, engine, on_event, keep_finished
        self.poll_s = POLL_S
        self._stop = threading.Event()
        self._wake = threading.Event()  # look for a job now (one was started, or stopping)
        self._wanted: RunnerJob | None = None  # follow this one next (`follow`)
        self._thread = threading.Thread(target=self._run, name="trsi-tui-attach", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def follow(self, job: RunnerJob) -> None:
        """Follow `job` next, as soon as the job followed now (if any) has ended."""
        self._wanted = job
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                job, self._wanted = self._wanted, None
                job = job or self.newest_running()
                if job is not None:
                    self._follow(job)
                    continue  # a job that just ended: look again at once
            except Exception:
                log.exception("attaching to a detached job failed; trying again")
            self._wake.wait(JOBS_EVERY_S)
            self._wake.clear()

    def newest_running(self) -> RunnerJob | None:
        # A job of this very process (the TUI opened inside a command that runs as one) reaches
        # the app through the bus already.
        jobs = self.engine.runner_jobs(limit=20)
        return next((j for j in jobs if j.running and j.pid != os.getpid()), None)

    def _follow(self, job: RunnerJob) -> None:
        tail = self.engine.runner_job_events(job.id)
        try:
            caught = tail.catch_up(self.keep_finished)
            self.app.post_message(JobAttached(job, [e.event for e in caught.entries], caught.skipped))
            activity: JobActivity | None = None
            checked = 0.0
            while not self._stop.wait(self.poll_s):
                try:
                    ended = None
                    if time.monotonic() - checked >= STATUS_EVERY_S:
                        checked = time.monotonic()
                        # Its status before its events: the last events come before it says it ended.
                        current = self.engine.runner_job(job.id)
                        if not current.running:
                            ended = current
                        else:
                            now = self.engine.runner_job_activity(job.id)
                            if now != activity:
                                activity = now
                                self.app.post_message(JobActivityChanged(job.id, now))
                    for entry in tail.poll():
                        self.on_event(entry.event)
                except Exception:  # the store busy for longer than its timeout: go on from where it was
                    log.exception("following job %s failed; trying again", job.id)
                    self._stop.wait(1.0)
                    continue
                if ended is not None:
                    self.app.post_message(JobEnded(ended))
                    return
        finally:
            tail.close()
