"""Episodes on a Ray cluster: the head's side of the rollout workers.

The head keeps the store, the event bus and the trainer; this executor only decides where each
episode runs. It starts one `RolloutWorker` per live node (pinned to it, named so that
`cluster status` can find it), gives each as many sandbox slots as the node has CPUs (or
`[cluster] sandboxes_per_node`), and sends an episode to the worker with the most free slots.
The episode's events stream back and are emitted here; its result comes back to the runner,
which stores it. A worker or node that dies mid-episode makes that attempt an infrastructure
loss: the episode is sent once more, to another worker, and only if that is lost too is it
stored as an infrastructure error (`worker_lost`).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

from engine.config import ClusterConfig, Config
from engine.events import EventBus
from engine.results import EpisodeResult
from engine.rollout.runner import EpisodeJob, Placement

from .connection import NAMESPACE, ClusterError, alive_nodes, connect
from .shipping import Shipper, ShippingError
from .worker import EventBatch, RemoteEpisode, RolloutWorker, WorkerInfo

log = logging.getLogger(__name__)

ATTEMPTS = 2  # the first try and one re-queue on another worker
READY_TIMEOUT_S = 120.0


def worker_name(node_id: str) -> str:
    return f"rollout-{node_id[:16]}"


# The handles this process created its workers with, by (Ray job, node). Ray ends a named actor
# once its creating handle is dropped, whatever handles `get_actor` gave out since; an engine
# that adopts the workers of an earlier engine of this process would lose them as soon as the
# earlier engine was collected. Held here, they live as long as the process's Ray job.
_OWNED: dict[tuple[str, str], object] = {}
_OWNED_LOCK = threading.Lock()


def _own(job_id: str, node_id: str, handle) -> None:
    with _OWNED_LOCK:
        for key in [k for k in _OWNED if k[0] != job_id]:  # an earlier job's workers ended with it
            del _OWNED[key]
        _OWNED[(job_id, node_id)] = handle


@dataclass
class _Worker:
    node_id: str
    handle: object
    slots: int
    info: WorkerInfo
    free: int = 0
    alive: bool = True
    episodes: int = field(default=0)

    @property
    def label(self) -> str:
        return f"{self.info.hostname}:{self.node_id[:8]}"


class RayExecutor:
    """Implements the runner's `EpisodeExecutor` on a Ray cluster."""

    def __init__(self, settings: ClusterConfig) -> None:
        self.settings = settings
        self.ray = connect(settings)
        self._shipper = Shipper(self.ray.put)
        self._workers: dict[str, _Worker] = {}
        self._cond = threading.Condition()
        self.refresh()

    # -- workers ----------------------------------------------------------------------------------
    def refresh(self) -> None:
        """A worker on every live node that has none (a node that joined, or came back)."""
        ray = self.ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        remote = ray.remote(RolloutWorker)
        job_id = ray.get_runtime_context().get_job_id()
        started = []
        for node in alive_nodes():
            with self._cond:
                known = self._workers.get(node.node_id)
            if (known is not None and known.alive) or node.cpus < 1:
                continue
            slots = self.settings.sandboxes_per_node or node.cpus
            try:
                handle = remote.options(
                    name=worker_name(node.node_id),
                    namespace=NAMESPACE,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
                    num_cpus=0,  # sandboxes are counted by slots, not by Ray's CPU resource
                    max_concurrency=slots + 4,  # status and cancel are answered while every slot is busy
                    max_restarts=0,
                ).remote(node.node_id, slots, node.cpus, job_id)
                _own(job_id, node.node_id, handle)
            except ValueError:  # the name is taken: this process's worker (adopt it), or another run's
                try:
                    handle = self._adopt(node.node_id)
                except ClusterError:
                    raise
                except Exception as exc:  # noqa: BLE001 - a worker on a node that just died, said so
                    log.warning("the rollout worker on node %s does not answer: %s", node.node_id[:8], exc)
                    continue
            started.append((node, handle))
        for node, handle in started:
            try:
                info = ray.get(handle.info.remote(), timeout=READY_TIMEOUT_S)
            except Exception as exc:  # noqa: BLE001 - a node that cannot host a worker is left out, and said so
                log.warning("no rollout worker on node %s: %s", node.node_id[:8], exc)
                ray.kill(handle)
                continue
            with self._cond:
                self._workers[node.node_id] = _Worker(node.node_id, handle, info.slots, info, free=info.slots)
                self._cond.notify_all()
        if not self.workers():
            raise ClusterError("the cluster has no node that can run a rollout worker")

    def _adopt(self, node_id: str):
        """The named worker already on `node_id`, if this process started it (an earlier engine of
        this process); one run in another process holds its workers until it ends."""
        handle = self.ray.get_actor(worker_name(node_id), namespace=NAMESPACE)
        info = self.ray.get(handle.info.remote(), timeout=READY_TIMEOUT_S)
        if info.owner != self.ray.get_runtime_context().get_job_id():
            raise ClusterError(
                f"node {node_id[:8]} already has a trsi-tui worker of another run; "
                "one run at a time uses a cluster's workers (see `trsi-tui cluster status`)"
            )
        return handle

    def workers(self) -> list[_Worker]:
        with self._cond:
            return [w for w in self._workers.values() if w.alive]

    def status(self) -> list[WorkerInfo]:
        """What each live worker reports now (a dead one is marked lost and left out)."""
        out = []
        for w in self.workers():
            try:
                out.append(self.ray.get(w.handle.info.remote(), timeout=10))
            except Exception as exc:  # noqa: BLE001 - reported as a lost worker
                self._lost(w, exc)
        return out

    def _acquire(self, backend: str, tried: set[str]) -> _Worker | None:
        """The live worker (not yet tried for this episode) with the most free slots, waiting for
        one to free up; None when no live worker could ever take it."""
        with self._cond:
            while True:
                able = [
                    w
                    for w in self._workers.values()
                    if w.alive and backend in w.info.backends and w.node_id not in tried
                ]
                if not able:
                    return None
                best = max(able, key=lambda w: w.free)
                if best.free > 0:
                    best.free -= 1
                    return best
                self._cond.wait(timeout=1.0)

    def _release(self, worker: _Worker) -> None:
        with self._cond:
            worker.free += 1
            self._cond.notify_all()

    def _lost(self, worker: _Worker, exc: BaseException) -> None:
        with self._cond:
            if worker.alive:
                log.warning("rollout worker on %s is lost: %s", worker.label, exc)
            worker.alive = False
            self._cond.notify_all()

    # -- EpisodeExecutor ------------------------------------------------------------------------------
    def slots(self, requested: int) -> int:
        """Every free sandbox slot of the cluster is kept busy (`requested` is a one-machine figure)."""
        self.refresh()
        return max(1, sum(w.slots for w in self.workers()))

    def run(
        self,
        job: EpisodeJob,
        *,
        config: Config,
        backend: str,
        run_id: str,
        episode_id: str,
        bus: EventBus,
        placed: Callable[[Placement], None],
        on_sandbox,
    ) -> EpisodeResult:
        spec = job.agent_spec
        if spec is None:
            raise ClusterError(f"the agent of {job.task.name} is a closure of this process and cannot run on a worker")
        try:
            model = self._shipper.model(spec.model) if spec.kind == "model" else None
            task = self._shipper.task(job.task)
        except (ShippingError, OSError) as exc:
            raise ClusterError(str(exc)) from None
        request = RemoteEpisode(task, spec, model, config, backend, run_id, episode_id, job.attempt)
        tried: set[str] = set()
        lost: list[str] = []
        for _ in range(ATTEMPTS):
            worker = self._acquire(backend, tried)
            if worker is None:
                break
            tried.add(worker.node_id)
            placed(Placement(spec.kind, worker.label))
            try:
                return self._stream(worker, request, bus)
            except ClusterError as exc:
                lost.append(f"{worker.label}: {exc}")
            finally:
                self._release(worker)
        if not tried:
            raise ClusterError(f"no live worker of this cluster runs the {backend!r} sandbox backend")
        return _lost_result(job, request, "; ".join(lost) or "no other live worker to re-run it on")

    def _stream(self, worker: _Worker, request: RemoteEpisode, bus: EventBus) -> EpisodeResult:
        from ray.exceptions import (
            ActorUnavailableError,
            ObjectLostError,
            RayActorError,
            RayTaskError,
            WorkerCrashedError,
        )

        try:
            for ref in worker.handle.run.options(num_returns="streaming").remote(request):
                item = self.ray.get(ref)
                if isinstance(item, EventBatch):
                    for event in item.events:
                        bus.emit(event)
                else:
                    return item
        except RayTaskError as exc:  # the worker is fine; the episode broke in its code
            raise exc.as_instanceof_cause() from None
        except (RayActorError, ActorUnavailableError, WorkerCrashedError, ObjectLostError) as exc:
            self._lost(worker, exc)
            raise ClusterError(f"worker lost mid-episode ({type(exc).__name__})") from None
        raise ClusterError("the worker ended the episode without a result")

    def cancel(self) -> None:
        for w in self.workers():
            w.handle.cancel.remote()


def _lost_result(job: EpisodeJob, request: RemoteEpisode, error: str) -> EpisodeResult:
    return EpisodeResult(
        episode_id=request.episode_id,
        run_id=request.run_id,
        task=job.task.name,
        split=job.task.split,
        agent=request.agent.kind,
        backend=request.backend,
        attempt=job.attempt,
        status="infra_error",
        success=False,
        checks_passed=0,
        checks_total=0,
        reward=None,
        failure_mode="worker_lost",
        error=f"lost on every worker tried: {error}",
        started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        duration_s=0.0,
    )
