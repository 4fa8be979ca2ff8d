"""A rollout worker: one Ray actor per node, running that node's episodes.

It owns the node's sandboxes (its own backend, bubblewrap or Docker) and one policy replica,
loaded from the checkpoint the head ships (`shipping.py`) and reloaded only when the
checkpoint's digest changes; concurrent episodes share the replica as sequences of one batch,
as they do on the head. An episode streams back its events in batches (sandbox output for the
TUI's panes) and then its result; the head stores it. Nothing here touches the store.
"""

from __future__ import annotations

import logging
import os
import queue
import socket
import threading
import time
from dataclasses import dataclass
from importlib import metadata

from engine.config import Config
from engine.events import EventBus
from engine.results import EpisodeResult
from engine.rollout.agent_spec import AgentSpec
from engine.rollout.episode import run_episode
from sandboxes import Sandbox

from .shipping import NodeCache, ShippedModel, ShippedTask

log = logging.getLogger(__name__)

FLUSH_S = 0.2  # sandbox output is sent at most this often per episode
BATCH_MAX = 256


@dataclass(frozen=True)
class RemoteEpisode:
    """One episode as the head sends it."""

    task: ShippedTask
    agent: AgentSpec
    model: ShippedModel | None  # the checkpoint of a model agent
    config: Config
    backend: str
    run_id: str
    episode_id: str
    attempt: int


@dataclass(frozen=True)
class EventBatch:
    events: tuple


@dataclass(frozen=True)
class WorkerInfo:
    node_id: str
    hostname: str
    address: str
    cpus: int
    slots: int
    running: int
    backends: tuple[str, ...]  # the sandbox backends that work on this node
    checkpoint: str  # digest of the loaded policy's checkpoint, "" before any
    model: str
    version: str
    episodes: int  # finished on this worker since it started
    loads: int  # checkpoints loaded since it started (one per digest it was sent)
    owner: str  # the Ray job (the head process) that started it


def usable_backends() -> tuple[str, ...]:
    from sandboxes import SandboxError, available_backends, preflight

    found = []
    for backend in available_backends():
        try:
            preflight(backend)
        except (SandboxError, OSError):
            continue
        except Exception:
            log.exception("preflight of %s failed", backend)
            continue
        found.append(backend)
    return tuple(found)


def trsi_version() -> str:
    try:
        return metadata.version("trsi-tui")
    except metadata.PackageNotFoundError:
        return "unknown"


class _Loaded:
    def __init__(self, digest: str, spec: str, policy) -> None:
        self.digest, self.spec, self.policy = digest, spec, policy
        self.users = 0


class RolloutWorker:
    """Created by the head as a threaded Ray actor (`max_concurrency` above `slots`, so status
    and cancel calls are answered while every slot runs an episode)."""

    def __init__(self, node_id: str, slots: int, cpus: int, owner: str) -> None:
        import ray

        from engine.config.logs import setup_logging
        from engine.config.paths import resolve_paths

        paths = resolve_paths(None).ensure()
        setup_logging(paths.logs_dir)
        self.node_id, self.slots, self.cpus, self.owner = node_id, slots, cpus, owner
        self.cache = NodeCache(paths.cache_dir / "cluster", ray.get)
        self.backends = usable_backends()
        if "docker" in self.backends:
            # Containers a killed worker of this node left behind (their owner pid is gone).
            from sandboxes.docker_sandbox import remove_orphans

            removed = remove_orphans()
            if removed:
                log.info("removed %d orphaned sandbox container(s)", removed)
        self._slots = threading.BoundedSemaphore(slots)
        self._lock = threading.Lock()
        self._load_lock = threading.Lock()
        self._live: dict[str, Sandbox] = {}
        self._loaded: _Loaded | None = None
        self._running = 0
        self._episodes = 0
        self._loads = 0
        self._address = ray.util.get_node_ip_address()
        log.info("rollout worker on %s: %d slots, backends %s", socket.gethostname(), slots, self.backends)

    # -- what the head asks ---------------------------------------------------------------------
    def info(self) -> WorkerInfo:
        with self._lock:
            loaded = self._loaded
            return WorkerInfo(
                node_id=self.node_id,
                hostname=socket.gethostname(),
                address=self._address,
                cpus=self.cpus,
                slots=self.slots,
                running=self._running,
                backends=self.backends,
                checkpoint=loaded.digest if loaded else "",
                model=loaded.spec if loaded else "",
                version=trsi_version(),
                episodes=self._episodes,
                loads=self._loads,
                owner=self.owner,
            )

    def pid(self) -> int:
        return os.getpid()

    def cancel(self) -> None:
        """Stop every live sandbox; each running episode ends at once (the head discards it)."""
        with self._lock:
            live = list(self._live.values())
        for sandbox in live:
            sandbox.stop()

    def run(self, request: RemoteEpisode):
        """A generator (Ray streams what it yields): EventBatch items while the episode runs,
        then its EpisodeResult."""
        events: queue.Queue = queue.Queue()
        done = object()
        outcome: list = []
        bus = EventBus()
        bus.subscribe(events.put)

        def work() -> None:
            try:
                outcome.append(self._episode(request, bus))
            except BaseException as exc:
                log.exception("episode %s failed on this worker", request.episode_id)
                outcome.append(exc)
            finally:
                events.put(done)

        # Its own thread: sandboxes die with the thread that started them (bwrap --die-with-parent),
        # so each must outlive nothing but its episode.
        thread = threading.Thread(target=work, name=f"episode-{request.episode_id}", daemon=True)
        thread.start()
        batch: list = []
        flushed = time.monotonic()
        while True:
            try:
                item = events.get(timeout=FLUSH_S)
            except queue.Empty:
                item = None
            if item is done:
                break
            if item is not None:
                batch.append(item)
            if batch and (len(batch) >= BATCH_MAX or time.monotonic() - flushed >= FLUSH_S):
                yield EventBatch(tuple(batch))
                batch, flushed = [], time.monotonic()
        if batch:
            yield EventBatch(tuple(batch))
        thread.join()
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        yield outcome[0]

    # -- the episode ------------------------------------------------------------------------------
    def _episode(self, request: RemoteEpisode, bus: EventBus) -> EpisodeResult:
        task = self.cache.task(request.task)
        loaded = self._policy(request) if request.agent.kind == "model" else None
        try:
            agent = request.agent.build(loaded.policy if loaded else None)

            def track(sandbox: Sandbox | None) -> None:
                with self._lock:
                    if sandbox is None:
                        self._live.pop(request.episode_id, None)
                    else:
                        self._live[request.episode_id] = sandbox

            with self._slots:
                with self._lock:
                    self._running += 1
                try:
                    return run_episode(
                        task,
                        agent,
                        config=request.config,
                        backend=request.backend,
                        run_id=request.run_id,
                        attempt=request.attempt,
                        bus=bus,
                        episode_id=request.episode_id,
                        on_sandbox=track,
                    )
                finally:
                    with self._lock:
                        self._running -= 1
                        self._episodes += 1
        finally:
            if loaded is not None:
                self._release(loaded)

    def _policy(self, request: RemoteEpisode) -> _Loaded:
        """The replica serving `request.model`, loaded when its digest differs from the one held;
        the old replica is closed once its last episode ends."""
        shipped = request.model
        if shipped is None:
            raise ValueError("a model episode arrived without its checkpoint")
        # Episodes of a run arrive together: the first loads, the others wait for it. Loading takes
        # seconds, under its own lock, so status calls are still answered meanwhile.
        with self._load_lock:
            with self._lock:
                current = self._loaded
                if current is not None and current.digest == shipped.digest:
                    current.users += 1
                    return current
            return self._load(shipped, request.config)

    def _load(self, shipped: ShippedModel, config: Config) -> _Loaded:
        from engine.policy import load_configured_policy

        policy = load_configured_policy(
            self.cache.model(shipped),
            config.policy,
            instances=self.slots,
            # The node's CPUs as Ray counts them, not the machine's: nodes that share a machine must
            # not each spin a thread per core (two such replicas on 2 cores ran 4x slower).
            threads=max(1, self.cpus),
            name=shipped.spec,
        )
        fresh = _Loaded(shipped.digest, shipped.spec, policy)
        log.info("loaded checkpoint %s (%s)", shipped.digest, shipped.spec)
        with self._lock:
            old, self._loaded = self._loaded, fresh
            self._loads += 1
            fresh.users += 1
            stale = old if old is not None and old.users == 0 else None
        if stale is not None:
            _close(stale.policy)
        return fresh

    def _release(self, loaded: _Loaded) -> None:
        with self._lock:
            loaded.users -= 1
            stale = loaded.users == 0 and loaded is not self._loaded
        if stale:
            _close(loaded.policy)


def _close(policy) -> None:
    close = getattr(policy, "close", None)
    if close is not None:
        close()
