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

from sandboxes import dev_links

# Where a link must not lead: the verifier's files.
FORBIDDEN = ("/tests", "/logs/verifier", "/run/trsi-verifier-guard")
# What the verifier's view makes a real directory, whatever the agent left there (a link made
# at /tests itself is removed, so a path through it leads to the uploaded tests).
MADE_REAL = frozenset({"/tests", "/logs", "/logs/verifier", "/run", "/run/trsi-verifier-guard"})
# Of those, the ones the view mounts afresh: nothing the agent left below them is there.
MOUNTED_FRESH = ("/tests", "/logs/verifier", "/run/trsi-verifier-guard")
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
# /dev's own stream links: every /dev holds them, so they make no folder a holder of streams.
_DEV_STREAMS = frozenset(f"/dev/{name}" for name in dev_links.STANDARD)
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
    """`path` (absolute, inside the sandbox) with every link resolved within `root` as the
    verifier's view will have it; None past MAX_HOPS links (a loop: the verifier could not open
    it either). Raises Unresolvable where the host cannot tell (a chain of links deeper than
    PATH_MAX, which the kernel follows).

    The view differs from what the host sees now in three ways, each taken as the view has it:
    /dev's standard links are put back (dev_links.py: an agent that removed /dev/stdout for the
    check and pointed its answer there would have it back); what MADE_REAL names is a real
    directory; and below a fresh mount (MOUNTED_FRESH), or below a made-real directory that is
    not a real one now, nothing the agent left is there. The host never looks below those: on
    the host, `/proc/<init>/root/run/...` with `/run -> /` leads to the host's own files."""
    parts = [p for p in path.split("/") if p]
    done = "/"
    hops = 0
    fresh = list(MOUNTED_FRESH)
    while parts:
        part = parts.pop(0)
        if part == ".":
            continue
        if part == "..":
            done = posixpath.dirname(done.rstrip("/")) or "/"
            continue
        here = posixpath.join(done, part)
        if here in MADE_REAL or (_under(here, fresh) and here not in fresh):
            if here in MADE_REAL and not _under(here, fresh) and not _is_real_dir(root + here):
                fresh.append(here)
            done = here
            continue
        standard = dev_links.STANDARD.get(here.removeprefix("/dev/")) if here.startswith("/dev/") else None
        if standard is not None:
            target = standard
        elif here.startswith("/proc/"):
            # The kernel's, per reader: left as written (a `..` in it climbs out of /proc, and
            # is never one of the allowed targets).
            return posixpath.join(here, *parts)
        else:
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
            try:
                target = os.readlink(root + here)
            except OSError as exc:
                raise Unresolvable(exc.errno, f"{here[:80]}...: {exc.strerror}") from None
        hops += 1
        if hops > MAX_HOPS:
            return None
        parts = [p for p in target.split("/") if p] + parts
        if target.startswith("/"):
            done = "/"
    return done


def _is_real_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


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
    """Those of `links` (absolute paths inside the sandbox) that resolve into FORBIDDEN, or to a
    standard stream from outside LOGGING_PLACES, each as 'link -> where it leads'; and those
    from outside LOGGING_PLACES that lead to a folder holding such a stream link, which a path
    through them reaches (`/app/output -> /dev/x` with `/dev/x/result.txt -> /dev/stdout`: the
    answer /app/output/result.txt is a stream, though neither link is where it stands)."""
    found, resolved = [], []
    try:
        for n, link in enumerate(links):
            if n >= MAX_LINKS:
                found.append(f"over {MAX_LINKS} symbolic links: too many to check")
                break
            where = resolve(root, link)
            if where is not None and forbidden(where, link):
                found.append(f"{link} -> {where}")
            elif where is not None:
                resolved.append((link, where))
    except Unresolvable as exc:
        found.append(f"a link or folder the check cannot follow ({exc.strerror})")
    holders = {posixpath.dirname(link) for link, where in resolved if where in STREAMS and link not in _DEV_STREAMS}
    for link, where in resolved:
        if not _under(link, LOGGING_PLACES) and any(_under(h, [where]) for h in holders):
            found.append(f"{link} -> {where}, a folder holding links to the standard streams")
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


def head_inside(root: str, path: str, limit: int) -> tuple[bool, bytes | None]:
    """Whether `path` inside the sandbox is there, and up to `limit` bytes of it if it is a
    regular file (None for anything else: a FIFO, a device node is never opened). Reached one
    folder at a time, never through a link: in the verifier's view a path that `resolve` gave
    passes a link only where the view makes a real, empty directory, so it is not there."""
    folder, name = posixpath.split(path)
    fd = _open_dir(root, folder) if name else None
    if fd is None:
        return False, None
    try:
        try:
            if not stat.S_ISREG(os.lstat(name, dir_fd=fd).st_mode):
                return True, None
            file = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=fd)
        except FileNotFoundError:
            return False, None
        except OSError:
            return True, None
        try:
            return True, os.read(file, limit)
        except OSError:
            return True, None
        finally:
            os.close(file)
    finally:
        os.close(fd)


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
