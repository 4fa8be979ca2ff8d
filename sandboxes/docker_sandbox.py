"""Docker sandboxes: one container per episode, the same Sandbox contract as the local backend.

The Docker SDK drives images, containers and file transfer (put/get archive). Shells run
through `docker exec -i` so the persistent-shell protocol (sandboxes/shell.py) is the very same
code as on the local backend. Containers carry labels; `remove_orphans()` deletes those left
by a process that died.
"""

from __future__ import annotations

import atexit
import io
import os
import subprocess
import tarfile
import threading
from pathlib import Path

from sandboxes import private_view
from sandboxes.base import Channel, ExecResult, OutputChunk, SandboxError, SandboxSpec, pack_upload
from sandboxes.docker_images import LABEL, client, task_image
from sandboxes.limits import CGROUP_ROOT, LimitGroup
from sandboxes.procs import children, descendants, kill_pids
from sandboxes.session_sandbox import SessionSandbox
from sandboxes.shell import PipeShell, run_streamed, shell_quote

BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Kill what a shell started (not the shell): walk /proc, since task images may lack procps.
_KILL_CHILDREN = (
    'k() { for d in /proc/[0-9]*; do p=${d#/proc/}; '
    'pp=$(sed -e "s/^.*) //" "$d/stat" 2>/dev/null | cut -d" " -f2); '
    # sh has no locals: recurse in a subshell so the loop's variables survive.
    '[ "$pp" = "$1" ] && { (k "$p"); kill -9 "$p" 2>/dev/null; }; done; }; k '
)


def _host_env() -> dict[str, str]:
    keep = ("PATH", "HOME", "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY")
    return {k: v for k, v in os.environ.items() if k in keep}


DISK_POLL_S = 0.25

_DROP_CAPS = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs"]
_image_can_isolate: dict[str, bool] = {}
_image_lock = threading.Lock()


def image_can_isolate(image: str) -> bool:
    """Whether the image has the tools for the private verifier view (unshare, setpriv, mount)."""
    with _image_lock:
        if image not in _image_can_isolate:
            try:
                client().containers.run(image, entrypoint=["/bin/sh", "-c",
                                        "command -v unshare && command -v setpriv && command -v mount"],
                                        network_mode="none", remove=True)
                _image_can_isolate[image] = True
            except Exception:  # noqa: BLE001 - a non-zero exit or no /bin/sh: no private view
                _image_can_isolate[image] = False
        return _image_can_isolate[image]


class WarmPool:
    """Started containers with a live session shell, ready to hand out, per image and limits."""

    def __init__(self) -> None:
        self._ready: dict[tuple, list] = {}
        self._filling: set[tuple] = set()
        self._lock = threading.Lock()
        atexit.register(self.drain)

    def take(self, key: tuple):
        with self._lock:
            items = self._ready.get(key) or []
            while items:
                container, shell, pid = items.pop()
                if shell.alive:
                    return container, shell, pid
                _discard(container, shell)
        return None

    def refill(self, key: tuple, size: int, make) -> None:
        with self._lock:
            if key in self._filling or len(self._ready.get(key, [])) >= size:
                return
            self._filling.add(key)

        def fill() -> None:
            try:
                while True:
                    with self._lock:
                        if len(self._ready.get(key, [])) >= size:
                            return
                    item = make()
                    with self._lock:
                        self._ready.setdefault(key, []).append(item)
            except Exception:  # noqa: BLE001 - a failed refill only costs the next start its latency
                return
            finally:
                with self._lock:
                    self._filling.discard(key)

        threading.Thread(target=fill, name="docker-warm-pool", daemon=True).start()

    def size(self, key: tuple | None = None) -> int:
        with self._lock:
            return sum(len(v) for k, v in self._ready.items() if key is None or k == key)

    def drain(self) -> None:
        with self._lock:
            items = [i for v in self._ready.values() for i in v]
            self._ready.clear()
        for container, shell, _ in items:
            _discard(container, shell)


def _discard(container, shell) -> None:
    try:
        shell.kill()
    except Exception:  # noqa: BLE001
        pass
    try:
        container.remove(force=True)
    except Exception:  # noqa: BLE001
        pass


POOL = WarmPool()


def remove_orphans() -> int:
    """Remove trsi-tui sandbox containers whose owning process on this host is gone."""
    removed = 0
    for container in client().containers.list(all=True, filters={"label": f"{LABEL}=sandbox"}):
        owner = container.labels.get("trsi-tui.owner-pid", "")
        host = container.labels.get("trsi-tui.owner-host", "")
        if host != os.uname().nodename or not owner.isdigit() or not _alive(int(owner)):
            container.remove(force=True)
            removed += 1
    return removed


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


class DockerSandbox(SessionSandbox):
    backend_name = "docker"
    _orphans_checked = False
    _orphans_lock = threading.Lock()

    def __init__(self, spec: SandboxSpec) -> None:
        super().__init__(spec)
        self._container = None
        self._session: PipeShell | None = None
        self._session_pid: str = ""
        # True when the container holds CAP_SYS_ADMIN for the verifier's private view; then
        # every other shell drops all capabilities with setpriv.
        self._isolating = False
        self._events: dict[str, int] = {}
        self._watchdog: threading.Thread | None = None
        self._watching = True  # only during the agent's turn: the verifier must not be killed
        self._stopped = False
        self._lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        client()  # fail fast, with the fix in the message, when no engine answers
        with DockerSandbox._orphans_lock:
            if not DockerSandbox._orphans_checked:
                DockerSandbox._orphans_checked = True
                remove_orphans()
        image = task_image(self.spec.environment_dir, self.spec.image, dict(self.spec.image_aliases))
        self._isolating = image_can_isolate(image)
        key = self._pool_key(image)
        ready = POOL.take(key) if self.spec.warm_pool > 0 else None
        if ready is not None:
            self._container, self._session, self._session_pid = ready
            self._session.rebind(self._emitter("agent"), self._interrupt_session)
        else:
            self._container = self._create_container(image)
            self._session = self._new_session()
        if self.spec.warm_pool > 0:
            POOL.refill(key, self.spec.warm_pool, lambda: self._pooled_item(image))
        self._watchdog = threading.Thread(target=self._watch_disk, name="docker-disk-watch", daemon=True)
        self._watchdog.start()

    def _pool_key(self, image: str) -> tuple:
        limits = self.spec.limits
        return (image, limits, self._isolating, self.spec.workdir, self.spec.env)

    def _create_container(self, image: str):
        limits = self.spec.limits
        mem = f"{limits.memory_mb}m"
        try:
            return client().containers.run(
                image,
                cap_add=["SYS_ADMIN"] if self._isolating else None,
                entrypoint=["/bin/sh", "-c", f"mkdir -p {self.spec.workdir} /logs && exec sleep infinity"],
                detach=True,
                init=True,
                hostname="sandbox",
                # The default bridge is off here; a task that may use the internet shares the host's.
                network_mode="host" if limits.allow_internet else "none",
                tmpfs={"/tmp": f"size={limits.disk_mb}m,mode=1777"},
                mem_limit=mem,
                memswap_limit=mem,
                nano_cpus=int(limits.cpus * 1e9),
                pids_limit=limits.pids,
                labels={LABEL: "sandbox", "trsi-tui.name": self.spec.name,
                        "trsi-tui.owner-pid": str(os.getpid()), "trsi-tui.owner-host": os.uname().nodename},
            )
        except Exception as exc:  # noqa: BLE001 - the SDK raises several types for one failure
            raise SandboxError(f"could not start a container from {image}: {exc}") from None

    def _pooled_item(self, image: str):
        """A started container with its session shell, built for the pool by a throwaway owner."""
        holder = DockerSandbox(self.spec)
        holder._isolating = self._isolating
        holder._container = holder._create_container(image)
        try:
            holder._session = holder._new_session()
        except SandboxError:
            holder._container.remove(force=True)
            raise
        return holder._container, holder._session, holder._session_pid

    def _watch_disk(self) -> None:
        """overlay2 on ext4 has no quota: watch the writable layer and stop a fill in its tracks."""
        try:
            upper = self._container.attrs["GraphDriver"]["Data"]["UpperDir"]  # type: ignore[union-attr]
        except (KeyError, TypeError):
            return
        limit = self.spec.limits.disk_mb * 1024 * 1024
        while not self._stopped and self._watching:
            try:
                used = int(subprocess.run(["du", "-sxb", upper], capture_output=True, text=True,
                                          timeout=30).stdout.split()[0])
            except (ValueError, IndexError, subprocess.TimeoutExpired, OSError):
                used = 0
            if used > limit and not self._stopped and self._watching:
                self._events["disk_limit"] = self._events.get("disk_limit", 0) + 1
                self._kill_all()
                limit = used + 64 * 1024 * 1024  # what was written stays; only further growth counts
            threading.Event().wait(DISK_POLL_S)

    def _kill_all(self) -> None:
        """Kill every process in the container but docker-init and the main `sleep`, from the host:
        inside, a fork-bombed container could not even start the command to do it."""
        try:
            self._container.reload()  # type: ignore[union-attr]
            init = int(self._container.attrs["State"]["Pid"])  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001
            return
        procs = self._cgroup_dirs()[0] / "cgroup.procs" if self._cgroup_dirs() else None
        for _ in range(5):  # processes forking while we kill: sweep a few times
            try:
                pids = {int(x) for x in procs.read_text().split()} if procs else set(descendants(init))
            except OSError:
                return
            keep = {init} | {c for c in children(init) if _cmdline(c).startswith("sleep")}
            victims = sorted(pids - keep)
            if not victims:
                return
            kill_pids(victims)

    def _cgroup_dirs(self) -> list[Path]:
        cid = self._container.id  # type: ignore[union-attr]
        dirs = [CGROUP_ROOT / c / "docker" / cid for c in ("pids", "memory")]
        dirs.append(CGROUP_ROOT / "system.slice" / f"docker-{cid}.scope")
        return [d for d in dirs if d.is_dir()]

    def prepare_for_verification(self) -> None:
        self._watching = False
        # The verifier runs in the container's own cgroup: after a fork bomb it could not even
        # start. A box that hit its process limit has nothing worth keeping alive.
        if "pids_limit" in self.resource_events:
            self._kill_all()

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        if self._session is not None:
            self._session.kill()
        if self._container is not None:
            try:
                self._container.remove(force=True)
            except Exception:  # noqa: BLE001 - already gone is fine
                pass

    @property
    def alive(self) -> bool:
        if self._stopped or self._container is None:
            return False
        try:
            self._container.reload()
            return self._container.status == "running"
        except Exception:  # noqa: BLE001
            return False

    @property
    def limits_enforced(self) -> tuple[str, ...]:
        return (("network",) if not self.spec.limits.allow_internet else ()) + (
            "memory", "pids", "cpu", "disk(tmpfs /tmp, watched layer)", "wall-time")

    @property
    def resource_events(self) -> dict[str, int]:
        """The container's own cgroup counters (State.OOMKilled only covers its main process)."""
        if self._container is None:
            return {}
        events = LimitGroup(dirs=self._cgroup_dirs()).events()
        events.update(self._events)
        try:  # /tmp is a capped tmpfs: full means a write failed with ENOSPC
            df = subprocess.run(self._exec_argv(["df", "-P", "/tmp"]), env=_host_env(), capture_output=True,
                                text=True, timeout=10).stdout.splitlines()
            if len(df) > 1 and df[1].split()[4] in ("99%", "100%"):
                events["disk_limit"] = events.get("disk_limit", 0) + 1
        except (subprocess.TimeoutExpired, IndexError, SandboxError):
            pass
        return events

    # -- plumbing --------------------------------------------------------------------------
    def _exec_argv(self, argv: list[str], cwd: str | None = None, env: dict[str, str] | None = None,
                   privileged: bool = False) -> list[str]:
        if self._container is None:
            raise SandboxError("sandbox is not started")
        merged = {"PATH": BASE_PATH, "HOME": "/root", "LANG": "C.UTF-8", "TERM": "dumb", **dict(self.spec.env),
                  **(env or {})}
        flags = ["-i", "-w", cwd or "/"]
        if privileged:
            flags.append("--privileged")
        for k, v in merged.items():
            flags += ["-e", f"{k}={v}"]
        return ["docker", "exec", *flags, self._container.id, *argv]

    def _unprivileged(self, argv: list[str]) -> list[str]:
        return [*_DROP_CAPS, *argv] if self._isolating else argv

    def _emitter(self, channel: Channel):
        return lambda text: self.emit(OutputChunk(channel, "output", text))

    def _new_session(self) -> PipeShell:
        shell = PipeShell(self._exec_argv(self._unprivileged(["bash", "--noprofile", "--norc"]), cwd=self.spec.workdir),
                          _host_env(),
                          self._emitter("agent"), self._interrupt_session)
        probe = shell.run("echo $$", timeout=30)
        if probe.exit_code != 0 or not probe.output.strip().isdigit():
            shell.kill()
            raise SandboxError(f"container shell did not start: {probe.output.strip()[-300:]!r}")
        self._session_pid = probe.output.strip()
        return shell

    def _interrupt_session(self, shell: PipeShell) -> None:
        subprocess.run(self._exec_argv(["sh", "-c", _KILL_CHILDREN + self._session_pid]), env=_host_env(),
                       capture_output=True, timeout=30)

    # -- commands --------------------------------------------------------------------------
    def exec(self, command: str, timeout: float, channel: Channel = "system", cwd: str | None = None,
             env: dict[str, str] | None = None) -> ExecResult:
        self.emit(OutputChunk(channel, "command", command))
        # `timeout` inside the container: killing the docker CLI alone would leave the command running.
        argv = self._exec_argv(self._unprivileged(["timeout", "-s", "KILL", str(max(1, int(timeout) + 1)),
                                                    "bash", "--noprofile", "--norc", "-c", command]),
                               cwd=cwd or self.spec.workdir, env=env)
        result = run_streamed(argv, _host_env(), timeout, self._emitter(channel))
        self.emit(OutputChunk(channel, "exit", result.status_text))
        return result

    def exec_private(self, command: str, timeout: float, *, uploads: dict[str, Path], collect: str,
                     masks: tuple[str, ...] = (), channel: Channel = "verifier", cwd: str | None = None,
                     env: dict[str, str] | None = None) -> tuple[ExecResult, Path | None]:
        """The private verifier view: this exec alone keeps CAP_SYS_ADMIN, only to mount, and drops
        it before the command runs. Images without unshare/setpriv use the shared view."""
        if not self._isolating:
            return super().exec_private(command, timeout, uploads=uploads, collect=collect, masks=masks,
                                        channel=channel, cwd=cwd, env=env)
        run = private_view.build(command, uploads=uploads, collect=collect, masks=masks,
                                 cwd=cwd or self.spec.workdir, size_mb=self.spec.limits.disk_mb, collect_fd=1)
        argv = self._exec_argv(["timeout", "-s", "KILL", str(max(1, int(timeout) + 1)),
                                "unshare", "--mount", "--propagation", "private", "sh", "-c", run.script],
                               env=env)
        self.emit(OutputChunk(channel, "command", command))
        collected = bytearray()
        result = run_streamed(argv, _host_env(), timeout, self._emitter(channel), stdin_data=run.uploads_tar,
                              stdout_sink=collected.extend)
        self.emit(OutputChunk(channel, "exit", result.status_text))
        return private_view.finish(result, bytes(collected), run)

    # -- files -----------------------------------------------------------------------------
    def upload(self, src: Path, dest: str) -> None:
        data, target_dir = pack_upload(src, dest)
        mk = self.exec(f"mkdir -p -- {shell_quote(target_dir)}", 60, channel="system")
        if not mk.ok:
            raise SandboxError(f"upload to {dest} failed: {mk.output.strip()}")
        if not self._container.put_archive(target_dir, data):  # type: ignore[union-attr]
            raise SandboxError(f"upload to {dest} failed")

    def download(self, src: str, dest: Path) -> None:
        try:
            stream, _ = self._container.get_archive(src)  # type: ignore[union-attr]
            data = b"".join(stream)
        except Exception as exc:  # noqa: BLE001
            raise SandboxError(f"download of {src} failed: {exc}") from None
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
            tar.extractall(dest, filter="data")




