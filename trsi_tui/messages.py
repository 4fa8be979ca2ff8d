"""Messages that carry engine activity into the UI thread (posted from workers, handled by the app)."""

from __future__ import annotations

from textual.message import Message

from engine.api import JobActivity, RunnerJob
from engine.events import Event


class EngineEvent(Message):
    """One engine event (not sandbox output, which goes through the OutputBatcher)."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class OutputPending(Message):
    """The output batcher has something to drain."""


class LiveChanged(Message):
    """Sent to the active screen after the app applied engine activity; screens redraw from app.live."""

    def __init__(self, episode_ids: frozenset[str], structural: bool) -> None:
        super().__init__()
        self.episode_ids = episode_ids
        self.structural = structural  # episodes appeared or finished, not just new output


class RunEnded(Message):
    """The app's engine worker returned (finished, failed or was stopped)."""

    def __init__(self, note: str | None, error: str | None, stopped: str = "") -> None:
        super().__init__()
        self.note = note  # what to tell the user, composed on the worker thread
        self.error = error
        self.stopped = stopped  # set when the work was stopped on request (and can be resumed)


class JobAttached(Message):
    """The TUI follows a detached job from now on; `events` are its catch-up (what it did so far,
    thinned: `skipped` were left out), to apply before the job's live events."""

    def __init__(self, job: RunnerJob, events: list[Event], skipped: int) -> None:
        super().__init__()
        self.job, self.events, self.skipped = job, events, skipped


class JobStartFailed(Message):
    """Work the TUI started as a runner job did not start (another process holds the work lock)."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class JobActivityChanged(Message):
    """What the attached job is doing changed (its progress, the runbooks it waits for)."""

    def __init__(self, job_id: str, activity: JobActivity) -> None:
        super().__init__()
        self.job_id, self.activity = job_id, activity


class JobEnded(Message):
    """The attached job has ended (`job`: its final record)."""

    def __init__(self, job: RunnerJob) -> None:
        super().__init__()
        self.job = job


class JobChanged(Message):
    """Sent to the active screen when the attached job changed: attached, waiting, stopping, ended."""
