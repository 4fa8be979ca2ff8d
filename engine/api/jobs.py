"""The Engine's side of runs that outlive their terminal (`engine.jobs`): start a command as a
detached runner job, run as one (detached, or in the foreground of a terminal), list, follow,
stop. "Runner job" keeps them apart from the keyed jobs of resumable stages (`store.jobs`)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from engine.config import Config, ConfigError, load_config
from engine.config.paths import Paths, resolve_paths
from engine.events import EventBus
from engine.jobs import (
    EventTail,
    JobActivity,
    JobRegistry,
    JobRun,
    Pruned,
    RunnerJob,
    job_activity,
    job_log,
    new_job_id,
    request_stop,
    spawn,
    wait_ended,
)
from engine.store.work_lock import check_work_lock

if TYPE_CHECKING:
    from engine.store import Store

log = logging.getLogger(__name__)


class RunnerJobs:
    """Mixed into `Engine` (which gives it the store, paths, bus and `cancel`)."""

    config: Config
    store: Store
    paths: Paths | None
    bus: EventBus
    job_id: str | None  # the runner job this engine runs as, if it is one
    cancel: Callable[[], None]

    @property
    def _registry(self) -> JobRegistry:
        return JobRegistry(self.store.database)

    def _logs_dir(self) -> Path:
        return (self.paths or resolve_paths(None)).logs_dir

    def runner_jobs(self, limit: int = 50) -> list[RunnerJob]:
        """Detached jobs, newest first; one whose process is gone reads as interrupted."""
        return self._registry.list(limit)

    def runner_job(self, job_id: str) -> RunnerJob:
        """The job with this id or unique id prefix (UnknownJob when none or several)."""
        return self._registry.get(job_id)

    def start_runner_job(self, kind: str, program: list[str], args: list[str]) -> RunnerJob:
        """Start `program + args` detached as a job of `kind` and return at once; `args` are the
        trsi-tui arguments it runs (kept in the registry)."""
        return spawn(self._registry, kind, program, args, self._logs_dir())

    def runner_job_log(self, job_id: str) -> Path:
        return job_log(self._logs_dir(), job_id)

    def runner_home_args(self) -> list[str] | None:
        """The trsi-tui arguments (`--home DIR`, or none) with which a new process works on this
        engine's data directory with this engine's config, so that a job started there does what
        this engine would; None when no process would (an engine on a store of its own, as in the
        tests, or a config other than the home's file: `pipeline run --preset demo` opening the TUI)."""
        paths = self.paths or resolve_paths(None)
        if paths.database.resolve() != self.store.path.resolve():
            return None
        try:
            if load_config(paths.config_file) != self.config:
                return None
        except ConfigError as exc:  # changed since this engine read it
            log.warning("a runner job would not read the config this engine uses: %s", exc)
            return None
        if paths.config_dir == paths.data_dir:
            return ["--home", str(paths.data_dir)]
        return [] if resolve_paths(None) == paths else None

    def as_runner_job(self, job_id: str | None, kind: str, command: list[str]) -> JobRun:
        """This process is runner job `job_id` (None: a new id, for a command run in the foreground
        of its terminal, followed and stopped from elsewhere all the same): `with
        engine.as_runner_job(...) as job:` registers it, journals the bus's events, makes SIGTERM a
        clean stop (`cancel`), records the outcome. Work it runs under the work lock names the job
        (WorkBusy tells others how to reach it)."""
        job_id = job_id or new_job_id(self._registry, kind)
        self.job_id = job_id
        return JobRun(
            self._registry,
            self.store.path,
            self.bus,
            job_id,
            kind,
            command,
            self.cancel,
            keep_journals=self.config.jobs.keep_journals,
        )

    def prune_job_journals(self, keep: int | None = None) -> Pruned:
        """Delete the journaled events of finished jobs but the newest `keep` (default: [jobs]
        keep_journals; a job also does this as it ends)."""
        return self._registry.prune_journals(self.config.jobs.keep_journals if keep is None else keep)

    def stop_runner_job(self, job_id: str) -> RunnerJob:
        """Ask the job's process to stop (SIGTERM: its running episodes end, its work resumes later)."""
        return request_stop(self._registry, job_id)

    def wait_runner_job(self, job_id: str, timeout: float) -> RunnerJob | None:
        """The job once its process has ended, with its final status; None after `timeout` seconds."""
        return wait_ended(self._registry, job_id, timeout)

    def runner_job_events(self, job_id: str, after: int = 0) -> EventTail:
        """A tail of the job's journaled events (typed), from the id after `after`; its `catch_up()`
        gives the events so far thinned to what shows the job as it is now (the TUI attaching)."""
        return EventTail(self.store.path, job_id, after)

    def runner_job_activity(self, job_id: str) -> JobActivity:
        """What the job is doing now (its newest progress line), and how many runbooks its RSR round
        waits for a person to decide (0 when it does not wait)."""
        return job_activity(self.store.database, job_id)

    def check_work_free(self) -> None:
        """WorkBusy, naming the work and its job, when another process holds the work lock now."""
        check_work_lock(self.store.path)
