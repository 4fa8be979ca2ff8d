"""Host process-tree helpers (Linux /proc), used to interrupt a command without killing its shell."""

from __future__ import annotations

import fcntl
import os
import signal

# ioctl(fd of /proc/PID/ns/pid, NS_GET_PARENT) opens the parent pid namespace (linux/nsfs.h:
# _IO(0xb7, 0x2)); it fails at the top of the caller's own hierarchy.
NS_GET_PARENT = 0xB702


def _parent_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # The command name may contain spaces and parentheses; fields after the last ')' are fixed.
        fields = stat[stat.rfind(b")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    return children


def children(pid: int) -> list[int]:
    return _parent_map().get(pid, [])


def descendants(pid: int) -> list[int]:
    """All descendants of `pid`, parents before children."""
    children = _parent_map()
    out: list[int] = []
    frontier = [pid]
    while frontier:
        nxt: list[int] = []
        for p in frontier:
            for c in children.get(p, []):
                out.append(c)
                nxt.append(c)
        frontier = nxt
    return out


def kill_pids(pids: list[int], sig: int = signal.SIGKILL) -> None:
    for p in pids:
        try:
            os.kill(p, sig)
        except (ProcessLookupError, PermissionError):
            pass


def pid_namespace(pid: int) -> str | None:
    """The pid namespace of `pid` as the kernel names it (`pid:[4026532...]`), None if gone."""
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _ns_inode(fd: int) -> int:
    return os.fstat(fd).st_ino


def _pid_ns_descends(pid: int, ancestor: int) -> bool:
    """Whether `pid`'s pid namespace is the namespace with inode `ancestor` or lies below it."""
    try:
        fd = os.open(f"/proc/{pid}/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        for _ in range(64):  # the kernel nests pid namespaces 32 deep at most
            if _ns_inode(fd) == ancestor:
                return True
            try:
                parent = fcntl.ioctl(fd, NS_GET_PARENT)
            except OSError:
                return False  # the top of our hierarchy: not below the sandbox's
            os.close(fd)
            fd = parent
        return False
    finally:
        os.close(fd)


def namespace_members(init_pid: int) -> set[int]:
    """Every process in the pid namespace whose init is `init_pid`, and in namespaces below it.

    By namespace, not by parentage: a process can leave the sandbox's process tree. One cloned
    with CLONE_PARENT into a pid namespace of its own becomes a child of the host's init when its
    parent (the host's `nsenter`) exits, yet its namespace still lies below the sandbox's, which
    is what it cannot leave. Descendants of members are added too. `init_pid` is not included.
    """
    try:
        ancestor = os.stat(f"/proc/{init_pid}/ns/pid").st_ino
    except OSError:
        return set()
    own = pid_namespace(os.getpid())
    verdicts: dict[str, bool] = {}  # namespace -> below the sandbox's; most processes share the host's
    members: set[int] = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        ns = pid_namespace(pid)
        if ns is None or ns == own:
            continue
        if ns not in verdicts:
            verdicts[ns] = _pid_ns_descends(pid, ancestor)
        if verdicts[ns]:
            members.add(pid)
    members = {p for p in members if _running(p)}  # a zombie is harmless and cannot be killed
    tree = _parent_map()
    frontier = list(members | {init_pid})
    while frontier:
        nxt = [c for p in frontier for c in tree.get(p, []) if c not in members]
        members.update(p for p in nxt if _running(p))
        frontier = nxt
    members.discard(init_pid)
    return members


def end_namespace(init_pid: int, keep: frozenset[int] = frozenset(), sweeps: int = 50) -> set[int]:
    """Kill every process in `init_pid`'s pid namespace but init and `keep`; return survivors.

    Each sweep stops what it finds before killing it, so a process cannot fork between being
    seen and being killed; what forked before it was stopped is found by the next sweep. A
    fork bomb under a pids limit is drained in a few sweeps. Survivors (empty on success) are
    what the caller must refuse to verify next to.
    """
    for _ in range(sweeps):
        victims = namespace_members(init_pid) - keep
        if not victims:
            return set()
        kill_pids(sorted(victims), signal.SIGSTOP)
        kill_pids(sorted(victims), signal.SIGKILL)
        _reaped(victims)
    return namespace_members(init_pid) - keep


def _reaped(pids: set[int], timeout: float = 1.0) -> None:
    """Wait (briefly) until the killed processes are gone or zombies, so the next sweep does not
    count them again; a zombie's ns link is still readable, so zombies are told apart by state."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(not _running(p) for p in pids):
            return
        time.sleep(0.005)


def _state(stat_path: str) -> bytes:
    try:
        with open(stat_path, "rb") as fh:
            stat = fh.read()
    except OSError:
        return b"X"
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3]


def _running(pid: int) -> bool:
    """Whether any thread of `pid` is alive. A process whose main thread has exited reads as a
    zombie in /proc/PID/stat while its other threads run on: it must be ended like any other."""
    if _state(f"/proc/{pid}/stat") not in (b"Z", b"X"):
        return True
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    return any(_state(f"/proc/{pid}/task/{tid}/stat") not in (b"Z", b"X") for tid in threads)
