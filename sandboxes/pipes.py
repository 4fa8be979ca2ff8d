"""A pipe read on a thread of its own, which alone owns the file descriptor it reads.

Why a class for it: a reader blocked in `os.read(n)` while another thread closes fd n goes on
reading whatever n is reused for next. In CI that was the next sandbox's start-up pipe, whose
"ready" a dead shell's reader swallowed; it could as well be a verifier's output. So the reader
reads a duplicate that no one else holds, closes it itself, and is stopped through a wake-up
pipe, never by closing what it reads.
"""

from __future__ import annotations

import logging
import os
import select
import threading
from typing import IO, Callable

log = logging.getLogger(__name__)

CHUNK = 65536


class PipeReader:
    """Feed each chunk of `stream` to `sink` until EOF or `stop()`, then call `on_end` once.

    `stream` is closed at once: from then on the reader's own duplicate is the only handle.
    """

    def __init__(
        self, stream: IO[bytes], sink: Callable[[bytes], None], name: str, on_end: Callable[[], None] | None = None
    ) -> None:
        self._fd = os.dup(stream.fileno())
        stream.close()
        self._sink = sink
        self._on_end = on_end
        self._lock = threading.Lock()
        try:
            self._wake_r, wake_w = os.pipe()
        except OSError:
            os.close(self._fd)
            raise
        self._wake_w: int | None = wake_w
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        try:
            self._thread.start()
        except RuntimeError:  # no thread to be had: nobody else will close these
            for fd in (self._fd, self._wake_r, wake_w):
                os.close(fd)
            raise

    def _loop(self) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        try:
            while True:
                ready = {fd for fd, _ in poller.poll()}
                if self._wake_r in ready:
                    return
                try:
                    data = os.read(self._fd, CHUNK)
                except OSError:
                    log.exception("reading a pipe failed; treating it as ended")
                    return
                if not data:
                    return
                self._sink(data)
        finally:
            os.close(self._fd)
            os.close(self._wake_r)
            self._close_wake()
            if self._on_end is not None:
                self._on_end()

    def _close_wake(self) -> None:
        with self._lock:
            if self._wake_w is not None:
                os.close(self._wake_w)
                self._wake_w = None

    def stop(self) -> None:
        """Stop reading (what is still unread is dropped); the thread closes its pipe itself."""
        self._close_wake()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for EOF or a stop; True once the reader has ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()
