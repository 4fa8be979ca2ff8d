"""Rollouts on a Ray cluster: workers on every node run episodes; the head stores them.

`[cluster] engine = "local"` (the default) keeps every episode on threads of this process;
`"ray"` sends them to rollout workers (docs/cluster.md). Ray is imported only when asked for.
"""

from engine.cluster.connection import RAY_EXTRA, ClusterError, alive_nodes, connect, require_ray
from engine.config import ClusterConfig

__all__ = ["RAY_EXTRA", "ClusterError", "alive_nodes", "connect", "make_executor", "require_ray"]


def make_executor(settings: ClusterConfig):
    """The episode executor `settings` asks for: None for this process's threads, else a
    `RayExecutor` joined to the cluster (its workers started)."""
    if settings.engine == "local":
        return None
    from engine.cluster.executor import RayExecutor

    return RayExecutor(settings)
