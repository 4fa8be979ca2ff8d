"""Upstream task formats -> the native layout.

Classic Terminal-Bench (`task.yaml`, `Dockerfile`, a single-service `docker-compose.yaml`,
`run-tests.sh`, `solution.sh` or a `solution.yaml` keystroke list, `tests/`) is converted:

    task.yaml instruction          -> instruction.md
    max_agent_timeout_sec (180)    -> [agent] timeout_sec
    max_test_timeout_sec (30)      -> [verifier] timeout_sec
    difficulty, category, tags     -> [metadata]
    Dockerfile + build context     -> environment/
    solution.sh | solution.yaml    -> solution/solve.sh
    tests/ + run-tests.sh          -> tests/, with a test.sh that runs run-tests.sh as Terminal-Bench
                                      did (TEST_DIR=/tests, from the image's working directory);
                                      per-test results come from its pytest -rA summary

Harbor tasks are the native layout already and are copied unchanged.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from engine.paths import resolve_paths

TB_AGENT_TIMEOUT = 180
TB_TEST_TIMEOUT = 30
# Files of a classic task that are not part of its Docker build context.
_NOT_CONTEXT = {
    "task.yaml",
    "solution.sh",
    "solution.yaml",
    "run-tests.sh",
    "tests",
    "docker-compose.yaml",
    "docker-compose.yml",
}


class TaskImportError(ValueError):
    pass


@dataclass(frozen=True)
class ImportedTask:
    name: str
    source: Path
    dest: Path
    format: str  # "terminal-bench" or "harbor"


def is_classic(path: Path) -> bool:
    return (path / "task.yaml").is_file() and not (path / "task.toml").exists()


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    s = str(v).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{s}"'


def _instruction(meta: dict[str, Any]) -> str:
    if isinstance(meta.get("instruction"), str) and meta["instruction"].strip():
        return meta["instruction"].strip() + "\n"
    descriptions = meta.get("descriptions")
    if isinstance(descriptions, list):
        for d in descriptions:
            if isinstance(d, dict) and d.get("key", "base") == "base" and str(d.get("description", "")).strip():
                return str(d["description"]).strip() + "\n"
    raise TaskImportError("task.yaml has no instruction (neither `instruction` nor a base `descriptions` entry)")


def _compose_build(src: Path) -> tuple[Path, str]:
    """(build context, Dockerfile name) from a single-service docker-compose.yaml, or the defaults."""
    compose = next((src / n for n in ("docker-compose.yaml", "docker-compose.yml") if (src / n).is_file()), None)
    if compose is None:
        return src, "Dockerfile"
    try:
        data = yaml.safe_load(compose.read_text()) or {}
    except yaml.YAMLError as exc:
        raise TaskImportError(f"{compose.name} is not valid YAML: {exc}") from None
    services = data.get("services") or {}
    if len(services) != 1:
        raise TaskImportError(
            f"{compose.name} defines {len(services)} services; only single-service tasks are supported"
        )
    service = next(iter(services.values())) or {}
    build = service.get("build", ".")
    if isinstance(build, str):
        return (src / build).resolve(), "Dockerfile"
    if isinstance(build, dict):
        return (src / str(build.get("context", "."))).resolve(), str(build.get("dockerfile", "Dockerfile"))
    raise TaskImportError(f"{compose.name}: unsupported build entry {build!r}")


def solution_script(src: Path) -> str:
    sh = src / "solution.sh"
    if sh.is_file():
        return sh.read_text()
    yml = src / "solution.yaml"
    if not yml.is_file():
        raise TaskImportError("no solution.sh or solution.yaml")
    try:
        steps = yaml.safe_load(yml.read_text()) or []
    except yaml.YAMLError as exc:
        raise TaskImportError(f"solution.yaml is not valid YAML: {exc}") from None
    if not isinstance(steps, list):
        raise TaskImportError("solution.yaml must be a list of commands")
    lines = ["#!/bin/bash", "# Converted from solution.yaml: each keystroke entry, in order."]
    pending = ""
    for i, step in enumerate(steps):
        if isinstance(step, str):
            step = {"command": step}
        if not isinstance(step, dict) or "command" not in step:
            raise TaskImportError(f"solution.yaml entry {i} has no command")
        text = pending + str(step["command"])
        if not step.get("append_enter", True):
            pending = text  # typed without Enter: it joins the next entry's line
            continue
        pending = ""
        wait = float(step.get("min_timeout_sec", 0) or 0)
        if step.get("block", True):
            lines.append(text.rstrip("\n"))
        else:
            lines.append(f"( {text.rstrip(chr(10))} ) &")
        if wait > 0:
            lines.append(f"sleep {wait:g}")
    if pending:
        lines.append(pending)
    return "\n".join(lines) + "\n"


TB_TEST_SH = textwrap.dedent("""\
    #!/bin/bash
    # Converted from a classic Terminal-Bench task: run its run-tests.sh as Terminal-Bench did.
    export TEST_DIR=/tests
    cd /app 2>/dev/null || cd /
    bash /tests/run-tests.sh
    """)
TB_DEFAULT_RUN_TESTS = '#!/bin/bash\npython3 -m pytest "$TEST_DIR" -rA\n'


def convert_classic(src: Path, dest: Path) -> Path:
    """Write the native layout of the classic task at `src` into `dest` (created)."""
    src = Path(src)
    try:
        meta = yaml.safe_load((src / "task.yaml").read_text()) or {}
    except yaml.YAMLError as exc:
        raise TaskImportError(f"task.yaml is not valid YAML: {exc}") from None
    if not isinstance(meta, dict):
        raise TaskImportError("task.yaml must be a mapping")
    instruction = _instruction(meta)
    context, dockerfile = _compose_build(src)
    if not (context / dockerfile).is_file():
        raise TaskImportError(f"no {dockerfile} in the build context {context}")
    if not (src / "tests").is_dir() and not (src / "run-tests.sh").is_file():
        raise TaskImportError("no tests/ and no run-tests.sh")
    solve = solution_script(src)

    dest.mkdir(parents=True)
    env = dest / "environment"
    shutil.copytree(
        context, env, ignore=lambda d, names: [n for n in names if Path(d) == context and n in _NOT_CONTEXT]
    )
    if dockerfile != "Dockerfile":
        shutil.move(str(env / dockerfile), str(env / "Dockerfile"))
    (dest / "solution").mkdir()
    (dest / "solution" / "solve.sh").write_text(solve)
    tests = dest / "tests"
    if (src / "tests").is_dir():
        shutil.copytree(src / "tests", tests)
    else:
        tests.mkdir()
    run_tests = src / "run-tests.sh"
    (tests / "run-tests.sh").write_text(run_tests.read_text() if run_tests.is_file() else TB_DEFAULT_RUN_TESTS)
    (tests / "test.sh").write_text(TB_TEST_SH)
    (dest / "instruction.md").write_text(instruction)
    metadata = {k: meta[k] for k in ("difficulty", "category", "tags", "author_name", "author_email") if k in meta}
    metadata["source_format"] = "terminal-bench"
    toml = ['version = "1.0"', "", "[metadata]"]
    toml += [f"{k} = {_toml_value(v)}" for k, v in metadata.items()]
    toml += [
        "",
        "[agent]",
        f"timeout_sec = {float(meta.get('max_agent_timeout_sec', TB_AGENT_TIMEOUT)):g}",
        "",
        "[verifier]",
        f"timeout_sec = {float(meta.get('max_test_timeout_sec', TB_TEST_TIMEOUT)):g}",
        "",
    ]
    (dest / "task.toml").write_text("\n".join(toml))
    return dest


def looks_like_task(path: Path) -> bool:
    """Discovery, shared by suites and imports: a directory with any of a task's markers."""
    return any((path / marker).exists() for marker in ("task.toml", "task.yaml", "instruction.md", "tests"))


def cached_conversion(src: Path) -> Path:
    """A converted copy of a classic task, reused while the source is unchanged."""
    h = hashlib.sha256()
    for p in sorted(x for x in Path(src).rglob("*") if x.is_file()):
        h.update(str(p.relative_to(src)).encode() + b"\0" + p.read_bytes() + b"\0")
    root = resolve_paths().cache_dir / "imported"
    dest = root / f"{Path(src).name}-{h.hexdigest()[:12]}" / Path(src).name
    if not (dest / "task.toml").is_file():
        tmp = Path(tempfile.mkdtemp(prefix="convert-", dir=_ensure(root)))
        convert_classic(src, tmp / Path(src).name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(tmp / Path(src).name, dest)  # atomic: concurrent loaders never see half a task
        except OSError:
            pass  # another process finished first
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _ensure(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def import_tasks(src: Path, dest: Path) -> tuple[list[ImportedTask], list[tuple[Path, str]]]:
    """Convert every classic or Harbor task under `src` into `dest/<name>`."""
    done: list[ImportedTask] = []
    errors: list[tuple[Path, str]] = []
    roots = (
        [src]
        if looks_like_task(src)
        else sorted(p for p in Path(src).rglob("*") if p.is_dir() and looks_like_task(p) and not _inside_task(p, src))
    )
    for task_dir in roots:
        target = Path(dest) / task_dir.name
        if target.exists():
            errors.append((task_dir, f"{target} already exists"))
            continue
        try:
            if is_classic(task_dir):
                convert_classic(task_dir, target)
                done.append(ImportedTask(task_dir.name, task_dir, target, "terminal-bench"))
            else:
                shutil.copytree(task_dir, target)
                done.append(ImportedTask(task_dir.name, task_dir, target, "harbor"))
        except (TaskImportError, OSError) as exc:
            shutil.rmtree(target, ignore_errors=True)
            errors.append((task_dir, str(exc)))
    return done, errors


def _inside_task(path: Path, root: Path) -> bool:
    return any(looks_like_task(parent) for parent in path.parents if parent != path and Path(root) in parent.parents)
