"""The standard links of a sandbox's /dev, put back before the verifier runs.

/dev is a tmpfs the agent can write (bwrap's on the local backend, runc's on Docker), and the
verifier sees the same one. Its links are what programs reach the standard streams by: bash
expands `<(cmd)` to /dev/fd/63, and `diff <(cat /app/out.txt) <(echo expected)` opened two empty
files of the agent's after `ln -sfn /app/.fd /dev/fd`, and passed (a hostile pass found it).
None of these links leads into the verifier's files, so the link check (links.py) cannot see it.

Each is made the link the sandbox started with once every agent process has ended. On Docker
`restore` does it from the host, through `/proc/<init>/root`: /dev is opened without following
links, and entries are removed and made by descriptor, so nothing the agent planted is
followed. On the local backend the host cannot make a file in a tmpfs of the sandbox's user
namespace (EOVERFLOW: its uid is not mapped there), so the verifier's view does it with the
host's `rm` and `ln` (`restore_script`). What else the agent left in /dev stays: a test reaches
it only by a name the task gave.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat

from sandboxes.base import EnvironmentTampered

log = logging.getLogger(__name__)

# name in /dev -> the target both backends give it (bwrap's --dev and runc make the same links).
STANDARD = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"}
# Made by some runtimes only: put back where the name is there at all, never added.
WHERE_PRESENT = {"ptmx": "pts/ptmx", "core": "/proc/kcore"}

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def put_back(root: str) -> None:
    """`restore`, failing closed: a /dev that cannot be put back is not verified."""
    try:
        changed = restore(root)
    except OSError as exc:
        raise EnvironmentTampered(f"/dev could not be put back as the sandbox had it: {exc}") from None
    if changed:
        log.info("put back /dev/%s, which the agent had changed", ", /dev/".join(changed))


def restore(root: str) -> list[str]:
    """Make each name of STANDARD, and of WHERE_PRESENT that is there, the link it should be in
    `root`'s /dev; returns the names that had to be put back (the agent had changed them)."""
    fd = _open_dev(root)
    changed = []
    try:
        for name, target in {**STANDARD, **WHERE_PRESENT}.items():
            if _target(fd, name) == target or (name in WHERE_PRESENT and not _replaceable(fd, name)):
                continue
            _remove(fd, name)
            os.symlink(target, name, dir_fd=fd)
            changed.append(name)
    finally:
        os.close(fd)
    return changed


def restore_script(rm: str, ln: str, fail: str) -> str:
    """POSIX sh lines that do what `restore` does, inside the sandbox: `rm` and `ln` are the
    (quoted) trusted programs, `fail` what to run when one fails. `rm -rf` never follows a link."""
    lines = [f"{{ {rm} -rf -- /dev/{n} && {ln} -s {t} /dev/{n}; }} || {fail}" for n, t in STANDARD.items()]
    for n, t in WHERE_PRESENT.items():
        p = f"/dev/{n}"
        lines.append(
            f"if [ -L {p} ] || {{ [ -e {p} ] && [ ! -c {p} ]; }}; then "
            f"{{ {rm} -rf -- {p} && {ln} -s {t} {p}; }} || {fail}; fi"
        )
    return "\n".join(lines)


def _open_dev(root: str) -> int:
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return os.open("dev", _DIR, dir_fd=top)
    finally:
        os.close(top)


def _target(fd: int, name: str) -> str | None:
    try:
        return os.readlink(name, dir_fd=fd)
    except OSError:  # missing, or not a link
        return None


def _replaceable(fd: int, name: str) -> bool:
    """There, and not the device node a runtime may make instead of the link (a privileged one)."""
    try:
        return not stat.S_ISCHR(os.lstat(name, dir_fd=fd).st_mode)
    except FileNotFoundError:
        return False


def _remove(fd: int, name: str) -> None:
    try:
        mode = os.lstat(name, dir_fd=fd).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        # rmtree by descriptor never follows a link inside (Linux: the fd-based walk).
        shutil.rmtree(name, dir_fd=fd)
    else:
        os.unlink(name, dir_fd=fd)
