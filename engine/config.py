"""Typed configuration from a TOML file; unknown keys and bad values are errors that say where."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator


class ConfigError(ValueError):
    """The config file is unreadable or invalid; the message names the file and the key."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DockerConfig(_Section):
    # Image names that cannot be pulled here -> local images, e.g. {"ubuntu:24.04" = "trsi-tui/base:bookworm"}.
    aliases: dict[str, str] = Field(default_factory=dict)
    # Started containers kept ready per image and limits: hides container start latency.
    warm_pool: int = Field(0, ge=0, le=16)


class SandboxConfig(_Section):
    backend: Literal["local", "docker"] = "local"
    docker: DockerConfig = DockerConfig()
    # Defaults for tasks whose task.toml leaves a limit out.
    pids_limit: int = Field(512, ge=16)
    disk_mb: int = Field(2048, ge=16)
    setup_timeout_sec: float = Field(300.0, gt=0)


class RewardConfig(_Section):
    # Partial credit is alpha * passed/total; alpha < 1 keeps it strictly below a full success.
    alpha: float = Field(0.5, ge=0.0, lt=1.0)


class EvalConfig(_Section):
    concurrency: int = Field(2, ge=1, le=64)


class TuiConfig(_Section):
    # Binding id -> keys, e.g. {"app.screen.trajectories" = "ctrl+j"}; ids are listed in the help screen.
    keymap: dict[str, str] = Field(default_factory=dict)


class Config(_Section):
    sandbox: SandboxConfig = SandboxConfig()
    reward: RewardConfig = RewardConfig()
    eval: EvalConfig = EvalConfig()
    tui: TuiConfig = TuiConfig()
    tasks: str = Field("", description="default task suite; empty = the built-in suite")

    @field_validator("tasks")
    @classmethod
    def _strip(cls, v: str) -> str:
        return v.strip()


def _describe(err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        where = ".".join(str(p) for p in e["loc"]) or "(top level)"
        msg = "unknown key" if e["type"] == "extra_forbidden" else e["msg"]
        lines.append(f"  {where}: {msg}")
    return "\n".join(lines)


def parse_config(text: str, source: str = "<config>") -> Config:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: invalid configuration:\n{_describe(exc)}") from None


def load_config(path: Path) -> Config:
    """The config at `path`, or the defaults when the file does not exist."""
    if not path.exists():
        return Config()
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    return parse_config(text, str(path))


DEFAULT_CONFIG_TOML = """\
# trsi-tui configuration. Every key is optional; these are the defaults.

# Default task suite for commands that take --tasks (empty: the built-in suite).
tasks = ""

[sandbox]
backend = "local"          # local (bubblewrap) or docker
pids_limit = 512           # per sandbox
disk_mb = 2048             # size cap of each writable filesystem in a sandbox
setup_timeout_sec = 300    # environment/setup.sh

[sandbox.docker]
warm_pool = 0              # started containers kept ready per image (hides start latency)

[sandbox.docker.aliases]   # images that cannot be pulled here -> local images
# "ubuntu:24.04" = "trsi-tui/base:bookworm"

[reward]
alpha = 0.5                # partial credit = alpha * passed/total, alpha < 1

[eval]
concurrency = 2

[tui.keymap]               # binding id -> keys; the help screen (?) lists every id
# "app.screen.trajectories" = "ctrl+j"
"""
