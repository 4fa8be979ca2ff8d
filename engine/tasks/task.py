"""Tasks in the native (Harbor / Terminal-Bench 2.x) layout, and suites of them.

Classic Terminal-Bench tasks (task.yaml) load too: see engine/tasks/importer.py.

    task.toml          [metadata] [agent] timeout_sec [verifier] timeout_sec, env
                       [environment] cpus, memory_mb | memory, storage_mb, allow_internet
    instruction.md     what the agent is told
    environment/       Dockerfile (optional), setup.sh (trsi-tui extension: runs as root
                       in the sandbox before the agent starts, on every backend)
    solution/solve.sh  the reference (oracle) solution
    tests/test.sh      the verifier; writes /logs/verifier/{ctrf.json,reward.txt,...}

A malformed task becomes a `TaskLoadError` naming the path and the reason; a suite keeps
loading past it.
"""

from __future__ import annotations

import logging
import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.tasks.importer import TaskImportError, cached_conversion, check_tree, is_classic, looks_like_task

log = logging.getLogger(__name__)

DEFAULT_AGENT_TIMEOUT = 600.0
DEFAULT_VERIFIER_TIMEOUT = 600.0
# Limits a task may ask for. A task folder is untrusted: a value out of range is an error naming
# the field, never a silently unlimited or broken sandbox (memory_mb = -1 used to run the local
# sandbox with no memory cgroup at all).
MAX_TIMEOUT_SEC = 24 * 3600.0
MAX_SIZE_MB = 1024 * 1024  # 1 TiB, for memory and storage
MIN_CPUS = 0.01
MAX_SUITE_DEPTH = 16  # folders from a suite's root to its tasks
SPLITS = ("train", "eval")


class TaskLoadError(Exception):
    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class EnvironmentSettings:
    cpus: float = 1.0
    memory_mb: int = 2048
    storage_mb: int | None = None
    allow_internet: bool = False
    docker_image: str | None = None


@dataclass(frozen=True)
class Task:
    name: str
    path: Path
    instruction: str
    agent_timeout_sec: float
    verifier_timeout_sec: float
    environment: EnvironmentSettings
    verifier_env: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    split: str | None = None

    @property
    def environment_dir(self) -> Path:
        return self.path / "environment"

    @property
    def dockerfile(self) -> Path | None:
        p = self.environment_dir / "Dockerfile"
        return p if p.is_file() else None

    @property
    def setup_script(self) -> Path | None:
        p = self.environment_dir / "setup.sh"
        return p if p.is_file() else None

    @property
    def solution_dir(self) -> Path:
        return self.path / "solution"

    @property
    def tests_dir(self) -> Path:
        return self.path / "tests"

    @property
    def difficulty(self) -> str:
        return str(self.metadata.get("difficulty", ""))


@dataclass
class Suite:
    root: Path
    tasks: list[Task]
    errors: list[TaskLoadError]

    def split(self, split: str) -> list[Task]:
        return [t for t in self.tasks if t.split == split]


_MEMORY_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgG])?[iI]?[bB]?\s*$")


def _memory_mb(value: Any) -> int:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)  # nan and inf raise here (ValueError, OverflowError)
    if isinstance(value, str):
        m = _MEMORY_RE.match(value)
        if m:
            n = float(m.group(1))
            unit = (m.group(2) or "m").lower()
            return int(n * {"k": 1 / 1024, "m": 1, "g": 1024}[unit])
    raise ValueError(f"memory must be a number of MB or a size like '2G', got {value!r}")


def _number(section: dict[str, Any], key: str, default: float, where: str, maximum: float) -> float:
    value = section.get(key, default)
    # TOML has nan and inf: `value <= 0` is False for nan, so finiteness is checked on its own.
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"[{where}] {key} must be a positive number, got {value!r}")
    if value > maximum:
        raise ValueError(f"[{where}] {key} must be at most {maximum:g}, got {value!r}")
    return float(value)


def _cpus(env: dict[str, Any]) -> float:
    # More CPUs than the machine has can never be granted: say so rather than oversubscribe. Below
    # MIN_CPUS Docker's nano-CPU count rounds to 0, which Docker reads as no limit at all.
    cpus = _number(env, "cpus", 1.0, "environment", float(os.cpu_count() or 1))
    if cpus < MIN_CPUS:
        raise ValueError(f"[environment] cpus must be at least {MIN_CPUS:g}, got {cpus!r}")
    return cpus


def _size_mb(key: str, value: Any) -> int:
    """A memory or storage size in MB, refused unless it is at least 1 MB and at most MAX_SIZE_MB."""
    try:
        mb = _memory_mb(value)
    except (ValueError, OverflowError):
        raise ValueError(f"[environment] {key} must be a number of MB or a size like '2G', got {value!r}") from None
    if mb < 1 or mb > MAX_SIZE_MB:
        raise ValueError(f"[environment] {key} must be between 1 MB and {MAX_SIZE_MB} MB (1 TiB), got {value!r}")
    return mb


def _section(data: dict[str, Any], name: str) -> dict[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise ValueError(f"[{name}] must be a table")
    return value


def load_task(path: Path, split: str | None = None) -> Task:
    path = Path(path)
    if not path.is_dir():
        raise TaskLoadError(path, "not a directory")
    if is_classic(path):
        # Classic Terminal-Bench: run the converted copy (same name, cached by content).
        try:
            converted = cached_conversion(path)
        except (TaskImportError, OSError, UnicodeError) as exc:  # UnicodeError: a lone surrogate in YAML
            raise TaskLoadError(path, f"classic Terminal-Bench task: {exc}") from None
        return load_task(converted, split)
    try:
        # Before any file is read: a link out of the task (`tests -> /etc`, an instruction that
        # is a host file) would hand host files to the agent's sandbox or the verifier.
        check_tree(path)
    except TaskImportError as exc:
        raise TaskLoadError(path, str(exc)) from None
    toml_path = path / "task.toml"
    if not toml_path.is_file():
        raise TaskLoadError(path, "missing task.toml")
    try:
        data = tomllib.loads(toml_path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TaskLoadError(path, f"task.toml is not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses into nested arrays and tables
        raise TaskLoadError(path, "task.toml nests too deeply to read") from None
    instruction_path = path / "instruction.md"
    if not instruction_path.is_file():
        raise TaskLoadError(path, "missing instruction.md")
    instruction = instruction_path.read_text(errors="replace").strip()
    if not instruction:
        raise TaskLoadError(path, "instruction.md is empty")
    if not (path / "tests" / "test.sh").is_file():
        raise TaskLoadError(path, "missing tests/test.sh (the verifier)")
    try:
        agent = _section(data, "agent")
        verifier = _section(data, "verifier")
        env = _section(data, "environment")
        metadata = _section(data, "metadata")
        memory_key = "memory_mb" if "memory_mb" in env else "memory"
        memory = env.get(memory_key, EnvironmentSettings.memory_mb)
        storage = env.get("storage_mb")
        allow = env.get("allow_internet", False)
        if not isinstance(allow, bool):
            raise ValueError(f"[environment] allow_internet must be true or false, got {allow!r}")
        image = env.get("docker_image")
        environment = EnvironmentSettings(
            cpus=_cpus(env),
            memory_mb=_size_mb(memory_key, memory),
            storage_mb=_size_mb("storage_mb", storage) if storage is not None else None,
            allow_internet=allow,
            docker_image=str(image) if image else None,
        )
        verifier_env = verifier.get("env", {})
        if not isinstance(verifier_env, dict):
            raise ValueError("[verifier] env must be a table of strings")
        task = Task(
            name=path.name,
            path=path.resolve(),
            instruction=instruction,
            agent_timeout_sec=_number(agent, "timeout_sec", DEFAULT_AGENT_TIMEOUT, "agent", MAX_TIMEOUT_SEC),
            verifier_timeout_sec=_number(
                verifier, "timeout_sec", DEFAULT_VERIFIER_TIMEOUT, "verifier", MAX_TIMEOUT_SEC
            ),
            environment=environment,
            verifier_env={str(k): str(v) for k, v in verifier_env.items()},
            metadata=dict(metadata),
            split=str(metadata.get("split") or split or "") or None,
        )
    except ValueError as exc:
        raise TaskLoadError(path, f"task.toml: {exc}") from None
    if task.split is not None and task.split not in SPLITS:
        raise TaskLoadError(path, f"unknown split {task.split!r} (expected one of {', '.join(SPLITS)})")
    return task


def load_suite(root: Path) -> Suite:
    """Every task under `root` (or `root` itself if it is one); errors are collected, not raised."""
    root = Path(root)
    tasks: list[Task] = []
    errors: list[TaskLoadError] = []
    if not root.is_dir():
        return Suite(root, [], [TaskLoadError(root, "no such task directory")])

    # Iterative, and bounded in depth: a suite is a hostile folder like its tasks.
    pending = [(root, root.name if root.name in SPLITS else None, 0)]
    while pending:
        directory, split, depth = pending.pop()
        if looks_like_task(directory):
            try:
                tasks.append(load_task(directory, split))
            except TaskLoadError as exc:
                errors.append(exc)
            except Exception as exc:  # a bug of ours on a task folder must not lose the others
                log.exception("loading the task at %s", directory)
                errors.append(TaskLoadError(directory, f"could not be loaded: {type(exc).__name__}: {exc}"))
            continue
        if depth >= MAX_SUITE_DEPTH:
            errors.append(
                TaskLoadError(directory, f"more than {MAX_SUITE_DEPTH} folders below the suite; not searched")
            )
            continue
        try:
            children = sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
        except OSError as exc:
            errors.append(TaskLoadError(directory, f"cannot be listed: {exc.strerror or exc}"))
            continue
        for child in reversed(children):  # popped in sorted order
            if child.is_symlink():
                # A suite is its own folders: a linked one could lead anywhere on the host (`x -> /`).
                errors.append(TaskLoadError(child, f"a symbolic link to {os.readlink(child)!r}; not followed"))
                continue
            pending.append((child, child.name if child.name in SPLITS else split, depth + 1))
    seen: dict[str, Path] = {}
    unique: list[Task] = []
    for t in tasks:
        if t.name in seen:
            errors.append(TaskLoadError(t.path, f"duplicate task name {t.name!r} (also at {seen[t.name]})"))
            continue
        seen[t.name] = t.path
        unique.append(t)
    return Suite(root, unique, errors)
