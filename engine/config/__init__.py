"""The engine's set-up: its configuration (typed sections, read from TOML or a preset), where it
keeps its files (paths), and where it logs. Every other part of the engine builds on this one."""

from engine.config.agent import DEFAULT_AGENT, AgentSettings
from engine.config.defaults import DEFAULT_CONFIG_TOML
from engine.config.loading import PRESETS_DIR, load_config, load_preset, parse_config, preset_names
from engine.config.sections import (
    ClusterConfig,
    Config,
    ConfigError,
    DockerConfig,
    EvalConfig,
    JobsConfig,
    PipelineConfig,
    PolicyConfig,
    RewardConfig,
    RprConfig,
    RsrConfig,
    SandboxConfig,
    SftSection,
    TuiConfig,
)

__all__ = [
    "DEFAULT_AGENT",
    "AgentSettings",
    "DEFAULT_CONFIG_TOML",
    "PRESETS_DIR",
    "ClusterConfig",
    "Config",
    "ConfigError",
    "DockerConfig",
    "EvalConfig",
    "PipelineConfig",
    "PolicyConfig",
    "RewardConfig",
    "RprConfig",
    "RsrConfig",
    "SandboxConfig",
    "SftSection",
    "JobsConfig",
    "TuiConfig",
    "load_config",
    "load_preset",
    "parse_config",
    "preset_names",
]
