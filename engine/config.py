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


class SftSection(_Section):
    rank: int = Field(8, ge=1, le=256)
    alpha: int = Field(16, ge=1)
    learning_rate: float = Field(2e-4, gt=0, le=1.0)
    epochs: int = Field(3, ge=1, le=100)
    batch_samples: int = Field(4, ge=1, le=256)
    max_len: int = Field(2048, ge=64)
    load_4bit: bool = True
    packing: bool = False


class RsrConfig(_Section):
    approval: Literal["auto", "manual"] = "auto"
    attempts: int = Field(4, ge=1, le=64, description="explore attempts per task and harness")
    harnesses: list[str] = Field(default_factory=lambda: ["xml-bash", "terminus-json"], min_length=1)
    split: str = "train"
    temperature: float = Field(0.8, ge=0.0, le=5.0)
    max_turns: int = Field(6, ge=1, le=200)
    planner: str = Field("", description="model spec of the planner; empty = the policy's own model")
    reviewer: str = Field("", description="model spec of the reviewer; empty = the policy's own model")
    reviewer_unparseable: Literal["reject", "abstain"] = "reject"
    template_fallback: bool = True
    runbooks_per_task: int = Field(2, ge=1, le=64)
    replays: int = Field(1, ge=1, le=16, description="replays per approved runbook")
    sft: SftSection = SftSection()


class TuiConfig(_Section):
    # Binding id -> keys, e.g. {"app.screen.trajectories" = "ctrl+j"}; ids are listed in the help screen.
    keymap: dict[str, str] = Field(default_factory=dict)


class Config(_Section):
    sandbox: SandboxConfig = SandboxConfig()
    reward: RewardConfig = RewardConfig()
    eval: EvalConfig = EvalConfig()
    tui: TuiConfig = TuiConfig()
    rsr: RsrConfig = RsrConfig()
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

[rsr]                      # Recursive Self-Rewrite (trsi-tui rsr run)
approval = "auto"          # auto: approve what both reviews pass; manual: a person decides in the TUI
attempts = 4               # explore attempts per task and harness
harnesses = ["xml-bash", "terminus-json"]
split = "train"
temperature = 0.8
max_turns = 6
planner = ""               # model spec; empty = the policy's own model
reviewer = ""              # model spec; empty = the policy's own model
reviewer_unparseable = "reject"   # or "abstain": deterministic checks decide when the reviewer's reply is not JSON
template_fallback = true   # a planner draft that fails the format check becomes a template of the commands
runbooks_per_task = 2
replays = 1                # replays per approved runbook

[rsr.sft]                  # QLoRA
rank = 8
alpha = 16
learning_rate = 2e-4
epochs = 3
batch_samples = 4
max_len = 2048
load_4bit = true
packing = false            # pack a step's samples into shared rows (block-diagonal mask): less padding

[tui.keymap]               # binding id -> keys; the help screen (?) lists every id
# "app.screen.trajectories" = "ctrl+j"
"""
