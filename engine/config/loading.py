"""Reading a configuration: a TOML file or a preset; unknown keys and bad values are errors that say where."""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import ValidationError

from engine.config.sections import Config, ConfigError


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


PRESETS_DIR = Path(__file__).parent.parent / "presets"


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.toml"))


def load_preset(name: str) -> Config:
    """A named configuration shipped with trsi-tui (engine/presets/NAME.toml)."""
    path = PRESETS_DIR / f"{name}.toml"
    if not path.is_file():
        raise ConfigError(f"unknown preset {name!r}; available: {', '.join(preset_names())}")
    return parse_config(path.read_text(), f"preset {name}")
