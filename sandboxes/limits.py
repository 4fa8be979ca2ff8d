"""Resource limits for local sandboxes: cgroups where we may create them, rlimits otherwise.

A `LimitGroup` is created per sandbox. Every process the backend starts enters it through a
tiny shell prefix (`enter_script`) before exec'ing bwrap/nsenter, so the limits cover the whole
process tree from its first instruction. `enforced` says honestly what is in force.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from sandboxes.base import Limits

CGROUP_ROOT = Path("/sys/fs/cgroup")
_V1_CONTROLLERS = ("memory", "pids", "cpu")


def _writable_dir(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK)


@dataclass
class LimitGroup:
    """The cgroup directories (possibly none) holding one sandbox's processes."""

    dirs: list[Path] = field(default_factory=list)
    enforced: tuple[str, ...] = ()
    # Shell lines run before exec in every wrapper (`ulimit` when no cgroup is available).
    ulimits: tuple[str, ...] = ()

    def enter_script(self) -> str:
        lines = [f'echo $$ > "{d}/cgroup.procs" || exit 97' for d in self.dirs]
        lines.extend(self.ulimits)
        return "; ".join(lines)

    def pids(self) -> set[int]:
        found: set[int] = set()
        for d in self.dirs:
            try:
                found.update(int(x) for x in (d / "cgroup.procs").read_text().split())
            except OSError:
                pass
        return found

    def events(self) -> dict[str, int]:
        """Limit hits so far: {'oom_kill': n, 'pids_limit': n} (only the non-zero ones)."""
        found: dict[str, int] = {}
        sources = (
            ("memory.oom_control", "oom_kill", "oom_kill"),
            ("memory.events", "oom_kill", "oom_kill"),
            ("pids.events", "max", "pids_limit"),
        )
        for d in self.dirs:
            for name, key, label in sources:
                try:
                    for line in (d / name).read_text().splitlines():
                        parts = line.split()
                        if len(parts) == 2 and parts[0] == key and int(parts[1]) > 0:
                            found[label] = max(found.get(label, 0), int(parts[1]))
                except (OSError, ValueError):
                    continue
        return found

    def destroy(self) -> None:
        """Kill whatever is left in the group, then remove it."""
        deadline = time.monotonic() + 5.0
        while self.dirs and time.monotonic() < deadline:
            left = self.pids()
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.01)
        for d in self.dirs:
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
        self.dirs = []


def _v2_available() -> bool:
    controllers = CGROUP_ROOT / "cgroup.controllers"
    if not controllers.exists() or not _writable_dir(CGROUP_ROOT):
        return False
    have = set(controllers.read_text().split())
    return {"memory", "pids"} <= have


def _v1_available() -> list[str]:
    return [c for c in _V1_CONTROLLERS if _writable_dir(CGROUP_ROOT / c)]


def create_group(limits: Limits, tag: str = "trsi") -> LimitGroup:
    name = f"{tag}-{uuid.uuid4().hex[:12]}"
    mem = limits.memory_mb * 1024 * 1024
    try:
        if _v2_available():
            return _create_v2(name, limits, mem)
        v1 = _v1_available()
        if "memory" in v1 and "pids" in v1:
            return _create_v1(name, limits, mem, v1)
    except OSError:
        pass
    # No cgroup we may use: fall back to per-process limits in the wrapper shell. RLIMIT_NPROC is
    # per host uid, which is why each sandbox gets its own uid when we run as root.
    ulimits = [f"ulimit -u {limits.pids} 2>/dev/null"]
    enforced: tuple[str, ...] = ("pids(rlimit)",) if os.geteuid() == 0 else ()
    return LimitGroup(dirs=[], enforced=enforced, ulimits=tuple(ulimits))


def _create_v1(name: str, limits: Limits, mem: int, controllers: list[str]) -> LimitGroup:
    dirs: list[Path] = []
    enforced: list[str] = []
    for controller in controllers:
        d = CGROUP_ROOT / controller / "trsi" / name
        d.mkdir(parents=True, exist_ok=True)
        dirs.append(d)
        if controller == "memory":
            (d / "memory.limit_in_bytes").write_text(str(mem))
            try:  # memsw only exists when swap accounting is on; without it swap could bypass the cap
                (d / "memory.memsw.limit_in_bytes").write_text(str(mem))
            except OSError:
                pass
            enforced.append("memory")
        elif controller == "pids":
            (d / "pids.max").write_text(str(limits.pids))
            enforced.append("pids")
        elif controller == "cpu":
            period = 100_000
            (d / "cpu.cfs_period_us").write_text(str(period))
            (d / "cpu.cfs_quota_us").write_text(str(max(1000, int(limits.cpus * period))))
            enforced.append("cpu")
    return LimitGroup(dirs=dirs, enforced=tuple(enforced))


def _create_v2(name: str, limits: Limits, mem: int) -> LimitGroup:
    parent = CGROUP_ROOT / "trsi"
    parent.mkdir(exist_ok=True)
    wanted = [c for c in ("memory", "pids", "cpu") if c in (CGROUP_ROOT / "cgroup.controllers").read_text().split()]
    for level in (CGROUP_ROOT, parent):
        (level / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))
    d = parent / name
    d.mkdir()
    (d / "memory.max").write_text(str(mem))
    try:
        (d / "memory.swap.max").write_text("0")
    except OSError:
        pass
    (d / "pids.max").write_text(str(limits.pids))
    enforced = ["memory", "pids"]
    if "cpu" in wanted:
        (d / "cpu.max").write_text(f"{max(1000, int(limits.cpus * 100_000))} 100000")
        enforced.append("cpu")
    return LimitGroup(dirs=[d], enforced=tuple(enforced))
