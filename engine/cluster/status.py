"""`cluster status`: the cluster's nodes, their sandbox backends, free slots and loaded checkpoint."""

from __future__ import annotations

import socket
from dataclasses import dataclass

from engine.config import ClusterConfig

from .connection import NAMESPACE, alive_nodes, connect
from .worker import WorkerInfo, trsi_version, usable_backends

PROBE_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class NodeStatus:
    node_id: str
    address: str
    cpus: int
    is_head: bool
    hostname: str
    backends: tuple[str, ...]
    version: str
    worker: WorkerInfo | None  # the rollout worker a run has on the node, if any
    error: str = ""  # why the node could not be asked

    @property
    def free_slots(self) -> int | None:
        return None if self.worker is None else self.worker.slots - self.worker.running


def _probe() -> tuple[str, tuple[str, ...], str]:
    return socket.gethostname(), usable_backends(), trsi_version()


def cluster_status(settings: ClusterConfig, executor=None) -> list[NodeStatus]:
    """Every live node. A node with a rollout worker (of `executor`, or of a run in another
    process) reports through it; any other is probed by a short task pinned to it."""
    ray = connect(settings)
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from .executor import worker_name

    own = {w.node_id: w for w in executor.status()} if executor is not None else {}
    probe = ray.remote(num_cpus=0)(_probe)
    out = []
    for node in alive_nodes():
        info = own.get(node.node_id)
        if info is None:
            try:
                handle = ray.get_actor(worker_name(node.node_id), namespace=NAMESPACE)
                info = ray.get(handle.info.remote(), timeout=PROBE_TIMEOUT_S)
            except ValueError:  # no worker there: no run is using the node
                info = None
            except Exception:  # noqa: BLE001 - a dying worker: probe the node instead
                info = None
        error = ""
        if info is not None:
            hostname, backends, version = info.hostname, info.backends, info.version
        else:
            strategy = NodeAffinitySchedulingStrategy(node.node_id, soft=False)
            try:
                hostname, backends, version = ray.get(
                    probe.options(scheduling_strategy=strategy).remote(), timeout=PROBE_TIMEOUT_S
                )
            except Exception as exc:  # noqa: BLE001 - reported in the node's row
                hostname, backends, version, error = "?", (), "?", f"{type(exc).__name__}: {exc}"
        out.append(
            NodeStatus(node.node_id, node.address, node.cpus, node.is_head, hostname, backends, version, info, error)
        )
    return out
