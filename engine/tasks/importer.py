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

Task folders are hostile: nothing here reads, moves or writes outside the task folder, the
cache and the import destination. A build context or Dockerfile outside the task, a symbolic
link that points out of it (or is absolute) and a file that is not a regular file are refused
with a TaskImportError naming the path; links that stay inside are copied as links, never
followed. The source folder is only ever read.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from engine.config.paths import resolve_paths

TB_AGENT_TIMEOUT = 180
# What a task folder may hold: it is copied, hashed and uploaded into every sandbox, in part
# through memory, so its size is the engine's to bound, not the task's.
MAX_TASK_BYTES = 1024**3
MAX_TASK_DEPTH = 32
MAX_TASK_ENTRIES = 100_000
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
    # Other control characters are not allowed raw in a TOML string (an ESC in a category would
    # make the converted task unloadable): written as \uXXXX escapes.
    return '"' + re.sub(r"[\x00-\x1f\x7f]", lambda m: f"\\u{ord(m.group(0)):04x}", s) + '"'


def _instruction(meta: dict[str, Any]) -> str:
    if isinstance(meta.get("instruction"), str) and meta["instruction"].strip():
        return meta["instruction"].strip() + "\n"
    descriptions = meta.get("descriptions")
    if isinstance(descriptions, list):
        for d in descriptions:
            if isinstance(d, dict) and d.get("key", "base") == "base" and str(d.get("description", "")).strip():
                return str(d["description"]).strip() + "\n"
    raise TaskImportError("task.yaml has no instruction (neither `instruction` nor a base `descriptions` entry)")


def check_tree(root: Path) -> None:
    """Refuse a folder that would make a copy, a hash or a sandbox reach outside it: a symbolic
    link that is absolute or resolves outside `root` (a linked sub-folder such as `tests -> /etc`
    included), or a FIFO, socket or device (reading one blocks or reads the host); and one too
    big to copy, hash and upload (MAX_TASK_BYTES, counted by the files' sizes: a sparse file
    takes no disk in the task but is read, and written out, whole), too deep (MAX_TASK_DEPTH) or
    of too many entries (MAX_TASK_ENTRIES). The walk is iterative: a deep tree is refused, not a
    RecursionError."""
    root = Path(root)
    real_root = os.path.realpath(root)
    total = entries = 0
    stack = [(root, 0)]
    while stack:
        directory, depth = stack.pop()
        try:
            with os.scandir(directory) as listing:
                items = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            raise TaskImportError(f"{directory} cannot be listed: {exc.strerror or exc}") from None
        for entry in items:
            entries += 1
            if entries > MAX_TASK_ENTRIES:
                raise TaskImportError(f"{root} holds over {MAX_TASK_ENTRIES} files and folders")
            path = Path(entry.path)
            if entry.is_symlink():  # listed and checked, never entered
                target = os.readlink(path)
                if not _link_stays_inside(root, real_root, path, target):
                    raise TaskImportError(
                        f"{path} is a symbolic link to {target!r}, outside {root}; "
                        "a task's files must not point outside it"
                    )
            elif entry.is_dir(follow_symlinks=False):
                if depth + 1 > MAX_TASK_DEPTH:
                    raise TaskImportError(f"{path} is more than {MAX_TASK_DEPTH} folders deep")
                stack.append((path, depth + 1))
            elif entry.is_file(follow_symlinks=False):
                total += entry.stat(follow_symlinks=False).st_size
                if total > MAX_TASK_BYTES:
                    raise TaskImportError(
                        f"{root} holds over {MAX_TASK_BYTES // 1024**2} MiB of files (sparse files count "
                        "at their full size); a task's data must fit a copy and an upload"
                    )
            else:
                raise TaskImportError(f"{path} is not a regular file or folder (a FIFO, socket or device)")


def _yaml(path: Path) -> Any:
    """A task's YAML file, or a TaskImportError: a nesting too deep for the parser's recursion
    is a malformed file like any other."""
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise TaskImportError(f"{path.name} is not valid YAML: {exc}") from None
    except RecursionError:
        raise TaskImportError(f"{path.name} nests too deeply to read") from None


def _link_stays_inside(root: Path, real_root: str, link: Path, target: str) -> bool:
    if os.path.isabs(target):
        return False  # it names a host path, whichever copy of the task it is in
    # Lexically (the copy keeps the link as written, so `../<task name>/x` would not survive a
    # rename) and as resolved now (a chain of links that ends outside).
    relative = os.path.normpath(os.path.join(os.path.relpath(link.parent, root), target))
    if relative == ".." or relative.startswith(".." + os.sep):
        return False
    resolved = os.path.realpath(link)
    return resolved == real_root or resolved.startswith(real_root.rstrip(os.sep) + os.sep)


def copy_task_tree(src: Path, dest: Path, ignore=None) -> None:
    """shutil.copytree that copies links as links (after `check_tree` made sure that none
    leaves the folder), so no host file is ever read through a task."""
    shutil.copytree(src, dest, symlinks=True, ignore=ignore)


def _inside(path: Path, root: Path, what: str, compose: str, value: str) -> Path:
    """`path` resolved (through any links), refused unless it lies within `root`."""
    if os.path.isabs(value) or "://" in value:
        raise TaskImportError(f"{compose}: {what} {value!r} is not a relative path inside the task folder")
    resolved = Path(os.path.realpath(path))
    real_root = Path(os.path.realpath(root))
    if resolved != real_root and real_root not in resolved.parents:
        raise TaskImportError(f"{compose}: {what} {value!r} points outside {root} (to {resolved})")
    return resolved


def _compose_build(src: Path) -> tuple[Path, str]:
    """(build context, Dockerfile path relative to it) from a single-service
    docker-compose.yaml, or the defaults. Both must lie inside the task folder: converting a
    task copies its context and reads its Dockerfile, and a task may not make that a host path."""
    compose = next((src / n for n in ("docker-compose.yaml", "docker-compose.yml") if (src / n).is_file()), None)
    if compose is None:
        return src, "Dockerfile"
    data = _yaml(compose) or {}
    services = data.get("services") if isinstance(data, dict) else None
    services = services if isinstance(services, dict) else {}
    if len(services) != 1:
        raise TaskImportError(
            f"{compose.name} defines {len(services)} services; only single-service tasks are supported"
        )
    service = next(iter(services.values())) or {}
    build = service.get("build", ".") if isinstance(service, dict) else None
    if isinstance(build, str):
        build = {"context": build}
    if not isinstance(build, dict):
        raise TaskImportError(f"{compose.name}: unsupported build entry {build!r}")
    context_value = str(build.get("context", "."))
    context = _inside(src / context_value, src, "build context", compose.name, context_value)
    dockerfile_value = str(build.get("dockerfile", "Dockerfile"))
    _inside(context / dockerfile_value, context, "build dockerfile", compose.name, dockerfile_value)
    dockerfile = os.path.normpath(dockerfile_value)
    if dockerfile == ".." or dockerfile.startswith(".." + os.sep):
        raise TaskImportError(f"{compose.name}: build dockerfile {dockerfile_value!r} is outside the build context")
    return context, dockerfile


def solution_script(src: Path) -> str:
    sh = src / "solution.sh"
    if sh.is_file():
        return sh.read_text()
    yml = src / "solution.yaml"
    if not yml.is_file():
        raise TaskImportError("no solution.sh or solution.yaml")
    steps = _yaml(yml) or []
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
    check_tree(src)  # before anything (task.yaml included) is read through a link
    meta = _yaml(src / "task.yaml") or {}
    if not isinstance(meta, dict):
        raise TaskImportError("task.yaml must be a mapping")
    instruction = _instruction(meta)
    context, dockerfile = _compose_build(src)
    if not (context / dockerfile).is_file():
        raise TaskImportError(f"no {dockerfile} in the build context {context}")
    if not (src / "tests").is_dir() and not (src / "run-tests.sh").is_file():
        raise TaskImportError("no tests/ and no run-tests.sh")
    # Each copied folder lands at another depth of the copy (the context becomes environment/),
    # so its links must stay inside that folder itself, not merely inside the task.
    check_tree(context)
    if (src / "tests").is_dir():
        check_tree(src / "tests")
    solve = solution_script(src)

    dest.mkdir(parents=True)
    env = dest / "environment"
    copy_task_tree(context, env, ignore=lambda d, names: [n for n in names if Path(d) == context and n in _NOT_CONTEXT])
    if dockerfile != "Dockerfile":
        # The copy's Dockerfile gets its native name. Read from the source, written into the
        # copy (never moved: the source is not ours); `dockerfile` lies inside the context, so
        # both names are inside `env`, and unlinking first never writes through a copied link.
        text = (context / dockerfile).read_bytes()
        (env / dockerfile).unlink(missing_ok=True)
        (env / "Dockerfile").unlink(missing_ok=True)
        (env / "Dockerfile").write_bytes(text)
    (dest / "solution").mkdir()
    (dest / "solution" / "solve.sh").write_text(solve)
    tests = dest / "tests"
    if (src / "tests").is_dir():
        copy_task_tree(src / "tests", tests)
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
        f"timeout_sec = {_timeout(meta, 'max_agent_timeout_sec', TB_AGENT_TIMEOUT)}",
        "",
        "[verifier]",
        f"timeout_sec = {_timeout(meta, 'max_test_timeout_sec', TB_TEST_TIMEOUT)}",
        "",
    ]
    (dest / "task.toml").write_text("\n".join(toml))
    return dest


def _timeout(meta: dict[str, Any], key: str, default: float) -> str:
    """A timeout for task.toml (whose loader checks its range); not a number is a TaskImportError."""
    value = meta.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TaskImportError(f"task.yaml: {key} must be a number of seconds, got {value!r}")
    return f"{float(value):g}"  # inf and nan come out as TOML's inf and nan


def looks_like_task(path: Path) -> bool:
    """Discovery, shared by suites and imports: a directory with any of a task's markers."""
    return any((path / marker).exists() for marker in ("task.toml", "task.yaml", "instruction.md", "tests"))


def cached_conversion(src: Path) -> Path:
    """A converted copy of a classic task, reused while the source is unchanged."""
    check_tree(src)  # the hash below reads every file: never through a link to the host
    h = hashlib.sha256()
    for p in sorted(Path(src).rglob("*")):
        if p.is_symlink():  # a link is its target's name, not the file it points to
            h.update(str(p.relative_to(src)).encode() + b"\0L" + os.readlink(p).encode() + b"\0")
        elif p.is_file():
            h.update(str(p.relative_to(src)).encode() + b"\0")
            with p.open("rb") as f:
                while chunk := f.read(1 << 20):
                    h.update(chunk)
            h.update(b"\0")
    root = resolve_paths().cache_dir / "imported"
    dest = root / f"{Path(src).name}-{h.hexdigest()[:12]}" / Path(src).name
    if not (dest / "task.toml").is_file():
        tmp = Path(tempfile.mkdtemp(prefix="convert-", dir=_ensure(root)))
        try:
            convert_classic(src, tmp / Path(src).name)
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.replace(tmp / Path(src).name, dest)  # atomic: concurrent loaders never see half a task
            except OSError:
                pass  # another process finished first
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # a refused task leaves nothing in the cache
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
        else sorted(
            p
            for p in Path(src).rglob("*")
            # A linked folder is not a task of SRC: importing it would copy whatever it points to.
            if p.is_dir() and not p.is_symlink() and looks_like_task(p) and not _inside_task(p, src)
        )
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
                check_tree(task_dir)
                copy_task_tree(task_dir, target)
                done.append(ImportedTask(task_dir.name, task_dir, target, "harbor"))
        except (TaskImportError, OSError, UnicodeError) as exc:  # UnicodeError: a lone surrogate in YAML
            shutil.rmtree(target, ignore_errors=True)
            errors.append((task_dir, str(exc)))
    return done, errors


def _inside_task(path: Path, root: Path) -> bool:
    return any(looks_like_task(parent) for parent in path.parents if parent != path and Path(root) in parent.parents)
