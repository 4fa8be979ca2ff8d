"""Backend names to classes. Backends register here; callers never import them directly."""

from __future__ import annotations

from typing import Callable

from sandboxes.base import Sandbox, SandboxError, SandboxSpec

_BACKENDS: dict[str, Callable[[SandboxSpec], Sandbox]] = {}


def _load() -> None:
    if _BACKENDS:
        return
    from sandboxes.docker_sandbox import DockerSandbox
    from sandboxes.local import LocalSandbox

    _BACKENDS["local"] = LocalSandbox
    _BACKENDS["docker"] = DockerSandbox


def available_backends() -> list[str]:
    _load()
    return sorted(_BACKENDS)


def create_sandbox(backend: str, spec: SandboxSpec) -> Sandbox:
    _load()
    try:
        factory = _BACKENDS[backend]
    except KeyError:
        raise SandboxError(
            f"unknown sandbox backend {backend!r}; available: {', '.join(available_backends())}"
        ) from None
    return factory(spec)


def preflight(backend: str) -> None:
    """Fail fast, with the fix in the message, when a backend cannot run on this machine."""
    _load()
    if backend not in _BACKENDS:
        raise SandboxError(f"unknown sandbox backend {backend!r}; available: {', '.join(available_backends())}")
    if backend == "local":
        from sandboxes.local import bwrap_path

        bwrap_path()
    elif backend == "docker":
        from sandboxes.docker_images import client
        from sandboxes.docker_sandbox import engine_tools_dir

        client()
        engine_tools_dir()
