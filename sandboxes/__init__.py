"""Execution backends: every backend implements `sandboxes.base.Sandbox`."""

from sandboxes.base import (
    AgentProcessesSurvived,
    EnvironmentTampered,
    ExecResult,
    Limits,
    OutputChunk,
    Sandbox,
    SandboxError,
    SandboxSpec,
    SandboxUnavailable,
)
from sandboxes.registry import available_backends, create_sandbox, preflight

__all__ = [
    "AgentProcessesSurvived",
    "EnvironmentTampered",
    "ExecResult",
    "Limits",
    "OutputChunk",
    "Sandbox",
    "SandboxError",
    "SandboxSpec",
    "SandboxUnavailable",
    "available_backends",
    "create_sandbox",
    "preflight",
]
