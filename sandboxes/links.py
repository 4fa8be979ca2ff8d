"""Symbolic links the agent left that would lead the verifier to its own files.

The verifier's tests are uploaded to /tests and write their verdict to /logs/verifier, and
neither exists during the agent's turn. A link made then, such as `/app/out.txt ->
../tests/expected.txt` (the file a test compares the answer with), points nowhere while the
agent works and at the expected answer once the verifier runs: the test compares that file
with itself and passes. A link into /proc (`/proc/self/root/...`, `/proc/1/cwd/...`) leads into
whatever the reading process holds, so only a few harmless ones are allowed there: the mount
table, and a process's standard streams (`/var/log/app.log -> /dev/stdout`, how services log to
the console) from where services log; an answer in /app linked to them reads back what the
reading test printed.

`leading_into_the_verifier` resolves links the way the kernel will in the verifier's view, one
component at a time, inside the sandbox's root as the host sees it (`/proc/<init>/root`): it
only ever calls lstat and readlink there, never opens or follows a link on the host, and treats
a missing component (/tests) as the plain directory it will be.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from collections.abc import Iterable, Iterator

# Where a link must not lead: the verifier's files.
FORBIDDEN = ("/tests", "/logs/verifier", "/run/trsi-verifier-guard")
# What the verifier's view makes a real directory, whatever the agent left there (a link made
# at /tests itself is removed, so a path through it leads to the uploaded tests).
MADE_REAL = frozenset({"/tests", "/logs", "/logs/verifier", "/run", "/run/trsi-verifier-guard"})
# /proc is resolved by the kernel for each reader: only these targets there are allowed.
STREAMS = frozenset(
    {f"/proc/{who}/fd" for who in ("self", "thread-self")}
    | {f"/proc/{who}/fd/{n}" for who in ("self", "thread-self") for n in (0, 1, 2)}
    | {"/proc/1/fd/1", "/proc/1/fd/2"}  # the console of a container's init: how cron jobs log there
)
ALLOWED_PROC = STREAMS | {"/proc/self/mounts", "/proc/mounts", "/proc/kcore"}
# Where a link may lead to a standard stream: where services log. Anywhere else it is an answer
# that reads back what the reader has written: under pytest's capture a test's fd 1 is a file,
# and `/app/out.txt -> /dev/stdout` handed the test what it had printed (the expected value).
LOGGING_PLACES = ("/dev", "/var/log", "/run", "/var/run")
MAX_HOPS = 40  # the kernel's own limit on links in one path
# Links checked at most; past that, the check itself fails closed. Symlink farms (`cp -rs`, stow,
# pnpm's node_modules) hold tens of thousands; each takes a few lstat calls.
MAX_LINKS = 250_000


class Unresolvable(OSError):
    """A path the host cannot follow as the kernel will in the sandbox (one over PATH_MAX as the
    host spells it, a folder it cannot list): the check fails closed."""


# A component that is missing now (/tests appears only in the verifier's view), or a file where
# a folder was expected: the kernel cannot go on either.
_MISSING = (errno.ENOENT, errno.ENOTDIR)


def resolve(root: str, path: str) -> str | None:
    """`path` (absolute, inside the sandbox) with every link resolved within `root`; None past
    MAX_HOPS links (a loop: the verifier could not open it either). Raises Unresolvable where the
    host cannot tell (a chain of links deeper than PATH_MAX, which the kernel follows)."""
    parts = [p for p in path.split("/") if p]
    done = "/"
    hops = 0
    while parts:
        part = parts.pop(0)
        if part == ".":
            continue
        if part == "..":
            done = posixpath.dirname(done.rstrip("/")) or "/"
            continue
        here = posixpath.join(done, part)
        if here in MADE_REAL:
            done = here
            continue
        if here.startswith("/proc/"):
            # The kernel's, per reader: left as written (a `..` in it climbs out of /proc, and
            # is never one of the allowed targets).
            return posixpath.join(here, *parts)
        try:
            st = os.lstat(root + here)
        except OSError as exc:
            if exc.errno not in _MISSING:
                raise Unresolvable(exc.errno, f"{here[:80]}...: {exc.strerror}") from None
            done = here
            continue
        if not stat.S_ISLNK(st.st_mode):
            done = here
            continue
        hops += 1
        if hops > MAX_HOPS:
            return None
        try:
            target = os.readlink(root + here)
        except OSError as exc:
            raise Unresolvable(exc.errno, f"{here[:80]}...: {exc.strerror}") from None
        parts = [p for p in target.split("/") if p] + parts
        if target.startswith("/"):
            done = "/"
    return done


def forbidden(resolved: str, link: str) -> bool:
    """Whether the link at `link` (its path as made) leads where it must not, `resolved`."""
    if resolved == "/proc" or resolved.startswith("/proc/"):
        if resolved in STREAMS:
            return not _under(link, LOGGING_PLACES)
        return resolved not in ALLOWED_PROC
    return _under(resolved, FORBIDDEN)


def _under(path: str, places: Iterable[str]) -> bool:
    return any(path == p or path.startswith(p + "/") for p in places)


def leading_into_the_verifier(root: str, links: Iterable[str]) -> list[str]:
    """Those of `links` (absolute paths inside the sandbox) that resolve into FORBIDDEN, each as
    'link -> where it leads'."""
    found = []
    try:
        for n, link in enumerate(links):
            if n >= MAX_LINKS:
                found.append(f"over {MAX_LINKS} symbolic links: too many to check")
                break
            resolved = resolve(root, link)
            if resolved is not None and forbidden(resolved, link):
                found.append(f"{link} -> {resolved}")
    except Unresolvable as exc:
        found.append(f"a link or folder the check cannot follow ({exc.strerror})")
    return found


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def links_under(root: str, tops: Iterable[str], skip: frozenset[str] = frozenset()) -> Iterator[str]:
    """Every symbolic link below each of `tops` (absolute paths inside the sandbox), not entering
    links or the paths in `skip`; at most MAX_LINKS + 1 of them.

    Folders are opened one below the other by file descriptor, never by their whole path on the
    host (`root` adds to it): a folder deep enough for that to pass PATH_MAX is ordinary inside
    the sandbox. Only the folders on the way down are open at once."""
    count = 0
    for top in tops:
        if top in skip:
            continue
        fd = _open_dir(root, top)
        if fd is None:
            continue
        stack: list[tuple[str, int, Iterator[str] | None]] = [(top, fd, None)]
        try:
            while stack:
                path, fd, names = stack[-1]
                if names is None:
                    names = iter(sorted(os.listdir(fd)))
                    stack[-1] = (path, fd, names)
                name = next(names, None)
                if name is None:
                    os.close(fd)
                    stack.pop()
                    continue
                child = posixpath.join(path, name)
                try:
                    mode = os.lstat(name, dir_fd=fd).st_mode
                    if stat.S_ISLNK(mode):
                        yield child
                        count += 1
                        if count > MAX_LINKS:
                            return
                    elif stat.S_ISDIR(mode) and child not in skip:
                        stack.append((child, os.open(name, _DIR_FLAGS, dir_fd=fd), None))
                except OSError as exc:
                    if exc.errno not in _MISSING:
                        raise Unresolvable(exc.errno, f"{child[:80]}...: {exc.strerror}") from None
        finally:
            for _, open_fd, _ in stack:
                os.close(open_fd)


def _open_dir(root: str, path: str) -> int | None:
    """A descriptor of the folder `path` inside the sandbox, opened one component at a time and
    never through a link; None where it is missing or not a folder."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for part in (p for p in path.split("/") if p):
        try:
            inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
        except OSError:
            os.close(fd)
            return None
        os.close(fd)
        fd = inner
    return fd
