"""Store reads and writes off the UI thread: a thread worker runs them, a message brings the result.

A screen calls `self.load("runs", fetch)`; `fetch` runs on a worker thread (SQLite, however
large the store, never blocks a keypress), and `show_runs(result)` runs on the UI thread when
the `Loaded` message arrives. Each key keeps a generation: a slow read that finishes after a
newer one for the same key is dropped, so the screen never goes back in time. A failed read is
logged with its traceback and shown as a notification; the screen keeps what it had.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, ClassVar

from textual import work
from textual.message import Message
from textual.worker import get_current_worker

log = logging.getLogger(__name__)


class Loaded(Message):
    def __init__(self, key: str, generation: int, data: Any = None, error: str = "") -> None:
        super().__init__()
        self.key, self.generation, self.data, self.error = key, generation, data, error


class StoreLoader:
    """Mixin for screens (and the app) that read or write the store."""

    # bench/tui.py sets this to measure the old way (reads on the UI thread) side by side.
    inline: ClassVar[bool] = False

    def load(self, key: str, fetch: Callable[[], Any]) -> None:
        generations = self.__dict__.setdefault("_load_generations", {})
        generations[key] = generation = generations.get(key, 0) + 1
        if self.inline:
            self._deliver(Loaded(key, generation, fetch()))
            return
        self._load_in_thread(key, generation, fetch)

    @work(thread=True, group="store", exit_on_error=False)
    def _load_in_thread(self, key: str, generation: int, fetch: Callable[[], Any]) -> None:
        try:
            data = fetch()
        except Exception as exc:
            log.exception("store read %r failed", key)
            self.post_message(Loaded(key, generation, error=f"{type(exc).__name__}: {exc}"))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(Loaded(key, generation, data))

    def on_loaded(self, message: Loaded) -> None:  # by name: @on does not register on a mixin
        message.stop()
        self._deliver(message)

    def _deliver(self, message: Loaded) -> None:
        if message.generation != self.__dict__.get("_load_generations", {}).get(message.key):
            return  # a newer read of the same thing is on its way
        if message.error:
            self.notify(message.error, title="Could not read the store", severity="error", markup=False)
            return
        getattr(self, f"show_{message.key}")(message.data)


class LiveStoreView(StoreLoader):
    """A screen that shows what the store holds: it re-reads (`action_refresh`) when it comes back
    to the front and whenever live work changes what the store holds."""

    def action_refresh(self) -> None:
        raise NotImplementedError

    def on_screen_resume(self) -> None:
        self.action_refresh()

    def on_live_changed(self, message) -> None:  # by name: @on does not register on a mixin
        if message.structural:  # episodes appeared or finished, a stage moved: not just new output
            self.action_refresh()
