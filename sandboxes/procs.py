"""Host process-tree helpers (Linux /proc), used to interrupt a command without killing its shell."""

from __future__ import annotations

import os
import signal


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


def namespace_members(init_pid: int) -> set[int]:
    """Every process in the pid namespace whose init is `init_pid`, and in namespaces below it.

    A process that made a pid namespace of its own (unshare -p) is not in ours by `ns/pid`, but
    it descends from one that is: its parent, or our init once that parent died. So: the members
    by namespace, then all of their descendants. `init_pid` itself is not included.
    """
    ns = pid_namespace(init_pid)
    if ns is None:
        return set()
    tree = _parent_map()
    members: set[int] = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and pid_namespace(int(entry.name)) == ns:
            members.add(int(entry.name))
    members = {p for p in members if _running(p)}  # a zombie is harmless and cannot be killed
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


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] not in (b"Z", b"X")
