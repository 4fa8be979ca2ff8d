"""The verifier's private view, shared by backends that can create a mount namespace.

`build(...)` returns a POSIX sh script and the tar of the uploads it expects on stdin. Run it
with CAP_SYS_ADMIN inside `unshare --mount --propagation private`: it mounts fresh tmpfs at
every upload destination and at the collect directory, covers masked files, unpacks the uploads,
runs the command with capabilities dropped (`drop`), then writes a tar of the collect directory to
the file descriptor `collect_fd`. Processes outside the namespace (the agent's leftovers) see
none of it.
"""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sandboxes.base import ExecResult, SandboxError
from sandboxes.shell import shell_quote

SETUP_FAILED = 96
# The local backend's verifier keeps no capability at all (it never needs one: its sandbox root
# is an unprivileged uid); the Docker backend passes its own, narrower drop.
DROP_ALL_CAPS = ("--bounding-set=-all", "--inh-caps=-all", "--no-new-privs")


@dataclass(frozen=True)
class PrivateRun:
    script: str
    uploads_tar: bytes
    collect_name: str


def build(
    command: str,
    *,
    uploads: dict[str, Path],
    collect: str,
    masks: tuple[str, ...],
    cwd: str,
    size_mb: int,
    collect_fd: int,
    drop: tuple[str, ...] = DROP_ALL_CAPS,
) -> PrivateRun:
    """`drop`: the setpriv flags the command runs under once the view is mounted."""
    dirs = [*uploads, collect]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for dest, src in uploads.items():
            tar.add(Path(src), arcname=dest.strip("/"))
    lines: list[str] = []
    for d in map(shell_quote, dirs):
        # The mount point must be a real directory. Its contents need no removal (the tmpfs hides
        # them), which also avoids racing an agent process that keeps writing there. A symlink or
        # a file is removed; one that reappears is refused, before and after the mount.
        lines.append(f"if [ -L {d} ] || {{ [ -e {d} ] && [ ! -d {d} ]; }}; then rm -f -- {d}; fi; mkdir -p -- {d}")
        lines.append(f"[ -d {d} ] && [ ! -L {d} ] || {{ echo 'trsi: {d} was replaced' >&2; exit {SETUP_FAILED}; }}")
        lines.append(f"mount -t tmpfs -o size={size_mb}m,mode=0755 trsi-private {d} || exit {SETUP_FAILED}")
        lines.append(f"[ ! -L {d} ] || {{ echo 'trsi: {d} was replaced' >&2; exit {SETUP_FAILED}; }}")
    for m in map(shell_quote, masks):
        # A masked file is covered by an empty one in this view only; the agent's copy stays.
        lines.append(
            f"if [ -e {m} ] || [ -L {m} ]; then mount --bind /dev/null {m} 2>/dev/null || "
            f"mount -t tmpfs -o size=4k,mode=0555 trsi-mask {m} || exit {SETUP_FAILED}; fi"
        )
    inner = f"cd -- {shell_quote(cwd)} || exit 1\n{command}"
    # With collect_fd 1 (docker exec has no other channel), the command's output goes to stderr.
    keep_collect_clean = ">&2" if collect_fd == 1 else f"{collect_fd}>&-"
    parent, name = os.path.split(collect.rstrip("/"))
    lines += [
        f"tar -x --no-same-owner -C / || exit {SETUP_FAILED}",
        f"setpriv {' '.join(drop)} /bin/bash --noprofile --norc -c {shell_quote(inner)} </dev/null "
        f"{keep_collect_clean}",
        "rc=$?",
        f"tar -c -C {shell_quote(parent or '/')} -- {shell_quote(name)} >&{collect_fd}",
        "exit $rc",
    ]
    return PrivateRun("\n".join(lines) + "\n", buf.getvalue(), name)


def finish(result: ExecResult, collected: bytes, run: PrivateRun) -> tuple[ExecResult, Path | None]:
    """The backend-independent end of a private run: no results after a timeout, an error if
    the view could not be set up, else a host copy of the collected directory."""
    if result.timed_out:
        return result, None
    if result.exit_code == SETUP_FAILED:
        raise SandboxError(f"private verifier view failed: {result.output.strip()[-300:]}")
    return result, unpack(collected, run.collect_name)


def unpack(collected: bytes, name: str) -> Path:
    out = Path(tempfile.mkdtemp(prefix="trsi-collect-"))
    try:
        with tarfile.open(fileobj=io.BytesIO(collected), mode="r") as tar:
            tar.extractall(out, filter="data")
    except tarfile.TarError as exc:
        raise SandboxError(f"could not read the verifier's results back: {exc}") from None
    return out / name
