"""Where trsi-tui keeps things: one module, so every path has one definition.

Default: config in $XDG_CONFIG_HOME/trsi-tui, data (database, checkpoints, logs) in
$XDG_DATA_HOME/trsi-tui, rebuildable caches in $XDG_CACHE_HOME/trsi-tui. `--home DIR` or
TRSI_HOME puts all three in DIR (caches in DIR/cache; tests use a temp dir).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

APP = "trsi-tui"
REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Paths:
    config_dir: Path
    data_dir: Path
    cache_dir: Path  # what can be rebuilt: converted tasks, failed-build records

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"

    @property
    def database(self) -> Path:
        return self.data_dir / "trsi.db"

    @property
    def checkpoints_dir(self) -> Path:
        return self.data_dir / "checkpoints"

    @property
    def logs_dir(self) -> Path:
        return self.data_dir / "logs"

    @property
    def build_failures_dir(self) -> Path:
        """Docker task-image builds that failed, by content hash (`trsi-tui sandbox rebuild` clears)."""
        return self.cache_dir / "failed-builds"

    def ensure(self) -> "Paths":
        for d in (self.config_dir, self.data_dir, self.checkpoints_dir, self.logs_dir):
            d.mkdir(parents=True, exist_ok=True)
        return self


def resolve_paths(home: str | os.PathLike[str] | None = None) -> Paths:
    """TRSI_CACHE_HOME, when set, moves only the caches (the test suite shares one per session)."""
    home = home or os.environ.get("TRSI_HOME")
    cache_home = os.environ.get("TRSI_CACHE_HOME")
    if home:
        root = Path(home).expanduser().resolve()
        return Paths(config_dir=root, data_dir=root, cache_dir=Path(cache_home) if cache_home else root / "cache")
    user_home = Path.home()
    config = Path(os.environ.get("XDG_CONFIG_HOME") or user_home / ".config") / APP
    data = Path(os.environ.get("XDG_DATA_HOME") or user_home / ".local" / "share") / APP
    cache = Path(cache_home) if cache_home else Path(os.environ.get("XDG_CACHE_HOME") or user_home / ".cache") / APP
    return Paths(config_dir=config, data_dir=data, cache_dir=cache)


def builtin_tasks_dir() -> Path:
    """The bundled suite (assets/tasks). Present in a source checkout / editable install."""
    path = REPO_ROOT / "assets" / "tasks"
    if not path.is_dir():
        raise FileNotFoundError(
            f"built-in task suite not found at {path}; install trsi-tui from a source checkout "
            "(pip install -e .) or pass --tasks PATH"
        )
    return path
