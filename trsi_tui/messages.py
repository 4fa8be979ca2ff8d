"""Messages that carry engine activity into the UI thread (posted from workers, handled by the app)."""

from __future__ import annotations

from textual.message import Message

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
