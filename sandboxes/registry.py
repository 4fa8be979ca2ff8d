"""Backend names to classes. Backends register here; callers never import them directly."""

from __future__ import annotations

from typing import Callable

from sandboxes.base import Sandbox, SandboxError, SandboxSpec

_BACKENDS: dict[str, Callable[[SandboxSpec], Sandbox]] = {}


def _load() -> None:
    if _BACKENDS:
        return
    from sandboxes.local import LocalSandbox

    _BACKENDS["local"] = LocalSandbox


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
