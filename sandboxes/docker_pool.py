"""Started containers kept ready (the warm pool), and the removal of containers whose owner died."""

from __future__ import annotations

import atexit
import logging
import os
import threading

from sandboxes.docker_images import LABEL, client

log = logging.getLogger(__name__)


class WarmPool:
    """Started containers with a live session shell, ready to hand out, per image and limits."""

    def __init__(self) -> None:
        self._ready: dict[tuple, list] = {}
        self._filling: set[tuple] = set()
        self._lock = threading.Lock()
        atexit.register(self.drain)

    def take(self, key: tuple):
        with self._lock:
            items = self._ready.get(key) or []
            while items:
                container, shell, pid = items.pop()
                if shell.alive:
                    return container, shell, pid
                _discard(container, shell)
        return None

    def refill(self, key: tuple, size: int, make) -> None:
        with self._lock:
            if key in self._filling or len(self._ready.get(key, [])) >= size:
                return
            self._filling.add(key)

        def fill() -> None:
            try:
                while True:
                    with self._lock:
                        if len(self._ready.get(key, [])) >= size:
                            return
                    item = make()
                    with self._lock:
                        self._ready.setdefault(key, []).append(item)
            except Exception:  # a failed refill only costs the next start its latency
                log.warning("warm pool refill for %s failed", key[0], exc_info=True)
                return
            finally:
                with self._lock:
                    self._filling.discard(key)

        threading.Thread(target=fill, name="docker-warm-pool", daemon=True).start()

    def size(self, key: tuple | None = None) -> int:
        with self._lock:
            return sum(len(v) for k, v in self._ready.items() if key is None or k == key)

    def drain(self) -> None:
        with self._lock:
            items = [i for v in self._ready.values() for i in v]
            self._ready.clear()
        for container, shell, _ in items:
            _discard(container, shell)


def _discard(container, shell) -> None:
    try:
        shell.kill()
    except Exception:  # discarding: the container goes next either way
        log.warning("killing a pooled shell failed", exc_info=True)
    try:
        container.remove(force=True)
    except Exception:  # the orphan cleanup removes what is left
        log.warning("removing pooled container %s failed", getattr(container, "id", "?"), exc_info=True)


POOL = WarmPool()


def remove_orphans() -> int:
    """Remove trsi-tui sandbox containers whose owning process on this host is gone."""
    removed = 0
    for container in client().containers.list(all=True, filters={"label": f"{LABEL}=sandbox"}):
        owner = container.labels.get("trsi-tui.owner-pid", "")
        host = container.labels.get("trsi-tui.owner-host", "")
        if host != os.uname().nodename or not owner.isdigit() or not _alive(int(owner)):
            container.remove(force=True)
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
