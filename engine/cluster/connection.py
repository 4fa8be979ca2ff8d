"""Joining a Ray cluster, and what it is made of. Ray is an optional extra: without it, asking
for a cluster is a clear error that names the extra."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from engine.config import ClusterConfig

log = logging.getLogger(__name__)

NAMESPACE = "trsi-tui"  # where this tool's named workers live on a shared cluster
RAY_EXTRA = "Ray is not installed here; install the extra: pip install 'trsi-tui[ray]'"


class ClusterError(RuntimeError):
    """The cluster cannot be reached or cannot run what was asked; the message says what to do."""


def require_ray():
    try:
        import ray
    except ImportError:
        raise ClusterError(RAY_EXTRA) from None
    return ray


def connect(settings: ClusterConfig):
    """Join the cluster at `settings.address` ("auto", "HOST:PORT", "ray://HOST:PORT") or start
    an in-process one ("local": token authentication on, bound to `settings.bind`); a process
    joins once and stays joined."""
    ray = require_ray()
    if ray.is_initialized():
        return ray
    from engine.config.logs import quiet_libraries

    from .access import loopback_kept, prepare_join, prepare_local

    quiet_libraries()  # Ray's loggers (set up on import) write to the log file, not over the output
    # Ray logs to our log file (engine.config.logs), not over the command's output.
    options = dict(namespace=NAMESPACE, log_to_driver=False, logging_level=logging.WARNING, configure_logging=False)
    address = settings.address
    refused = (ConnectionError, RuntimeError, ValueError, getattr(ray.exceptions, "AuthenticationError", ValueError))
    try:
        if address == "local":
            prepare_local(settings)
            with loopback_kept(settings.bind):
                # "local", not None: None would join whatever cluster /tmp/ray names.
                ray.init(address="local", _node_ip_address=settings.bind, include_dashboard=False, **options)
        else:
            prepare_join(settings)
            host = address.removeprefix("ray://").rpartition(":")[0]
            with loopback_kept(host if not address.startswith("ray://") else ""):
                ray.init(address=address, **options)
    except refused as exc:
        hint = ' (start one with `ray start --head`, or use address = "local")' if address == "auto" else ""
        token = (
            "; if the head asks for a token, give it to this machine (docs/cluster.md, Who can use your cluster)"
            if address != "local"
            else ""
        )
        raise ClusterError(f"cannot join the Ray cluster at {address!r}{hint}: {exc}{token}") from None
    log.info("joined the Ray cluster at %s", address)
    return ray


@dataclass(frozen=True)
class NodeInfo:
    node_id: str
    address: str
    cpus: int
    is_head: bool


def alive_nodes() -> list[NodeInfo]:
    """The cluster's live nodes, the head first (nodes with no CPUs run no sandboxes)."""
    ray = require_ray()
    nodes = []
    for node in ray.nodes():
        if not node.get("Alive"):
            continue
        resources = node.get("Resources", {})
        nodes.append(
            NodeInfo(
                node_id=node["NodeID"],
                address=node.get("NodeManagerAddress", ""),
                cpus=int(resources.get("CPU", 0)),
                is_head="node:__internal_head__" in resources,
            )
        )
    return sorted(nodes, key=lambda n: (not n.is_head, n.node_id))
