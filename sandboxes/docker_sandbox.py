"""Docker sandboxes: one container per episode, the same Sandbox contract as the local backend.

The Docker SDK drives images, containers and file transfer (put/get archive). Shells run
through `docker exec -i` so the persistent-shell protocol (sandboxes/shell.py) is the very same
code as on the local backend. Containers carry labels; `remove_orphans()` deletes those left
by a process that died.

Where a task relies on it, a sandbox behaves as Harbor's containers do: every shell gets
Docker's default capabilities and the image's environment (PATH included) and WORKDIR, and the
agent runs as the image's USER. The one capability added for the verifier's private view,
CAP_SYS_ADMIN, is taken out of every other shell's bounding set.
"""

from __future__ import annotations

import atexit
import io
import logging
import os
import subprocess
import tarfile
import threading
from dataclasses import dataclass
from pathlib import Path

from sandboxes import private_view
from sandboxes.base import Channel, Env, ExecResult, OutputChunk, PrivateExec, SandboxError, SandboxSpec, pack_upload
from sandboxes.docker_images import LABEL, client, task_image
from sandboxes.limits import CGROUP_ROOT, LimitGroup
from sandboxes.procs import children, descendants, kill_pids
from sandboxes.session_sandbox import SessionSandbox
from sandboxes.shell import PipeShell, run_streamed, shell_quote

log = logging.getLogger(__name__)
# Kill what a shell started (not the shell): walk /proc, since task images may lack procps.
_KILL_CHILDREN = (
    "k() { for d in /proc/[0-9]*; do p=${d#/proc/}; "
    'pp=$(sed -e "s/^.*) //" "$d/stat" 2>/dev/null | cut -d" " -f2); '
    # sh has no locals: recurse in a subshell so the loop's variables survive.
    '[ "$pp" = "$1" ] && { (k "$p"); kill -9 "$p" 2>/dev/null; }; done; }; k '
)


def _host_env() -> dict[str, str]:
    keep = ("PATH", "HOME", "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY")
    return {k: v for k, v in os.environ.items() if k in keep}


DISK_POLL_S = 0.25

# What every shell but the verifier's mount step gives up: only the capability the container
# holds beyond Docker's defaults. Out of the bounding set, no setuid binary can get it back.
DROP_ADDED_CAPS = ("--bounding-set=-sys_admin", "--inh-caps=-sys_admin")
_PROBE = (
    "if command -v unshare && command -v setpriv && command -v mount; then echo isolate=1; "
    "else echo isolate=0; fi; echo ---passwd; cat /etc/passwd; echo ---group; cat /etc/group"
)


@dataclass(frozen=True)
class ImageProfile:
    """What sandboxes need to know of an image, probed once per image."""

    can_isolate: bool  # has unshare, setpriv and mount: the verifier gets a private view
    workdir: str  # the image's WORKDIR ('' when unset)
    env_keys: frozenset[str]  # names the image's ENV sets
    uid: int = 0  # the image's USER, resolved
    gid: int = 0
    home: str = "/root"
    user_known: bool = True  # listed in /etc/passwd (supplementary groups come from there)

    @property
    def as_root(self) -> bool:
        return self.uid == 0


_profiles: dict[str, ImageProfile] = {}
_profiles_lock = threading.Lock()


def image_profile(image: str) -> ImageProfile:
    with _profiles_lock:
        if image not in _profiles:
            _profiles[image] = _probe_image(image)
        return _profiles[image]


def _probe_image(image: str) -> ImageProfile:
    try:
        config = client().images.get(image).attrs.get("Config") or {}
    except Exception as exc:  # noqa: BLE001 - the SDK raises several types for one failure
        raise SandboxError(f"cannot inspect image {image}: {exc}") from None
    env_keys = frozenset(e.split("=", 1)[0] for e in config.get("Env") or [])
    workdir = config.get("WorkingDir") or ""
    try:
        out = (
            client()
            .containers.run(image, entrypoint=["/bin/sh", "-c", _PROBE], user="0:0", network_mode="none", remove=True)
            .decode(errors="replace")
        )
    except Exception:  # no /bin/sh, or a broken image: no private view, no user lookup
        log.warning("probing image %s failed; it runs without the private verifier view", image, exc_info=True)
        out = ""
    can_isolate = "isolate=1" in out
    passwd = out.split("---passwd", 1)[-1].split("---group", 1)[0] if "---passwd" in out else ""
    group = out.split("---group", 1)[-1] if "---group" in out else ""
    uid, gid, home, known = resolve_user(config.get("User") or "", passwd, group)
    return ImageProfile(can_isolate, workdir, env_keys, uid, gid, home, known)


def resolve_user(user: str, passwd: str, group: str) -> tuple[int, int, str, bool]:
    """An image's USER (`name`, `uid`, `name:group`, `uid:gid`) as (uid, gid, home, in passwd)."""
    if not user:
        return 0, 0, "/root", True
    name, _, grp = user.partition(":")
    entries = [line.split(":") for line in passwd.splitlines() if line.count(":") >= 6]
    match = next((e for e in entries if e[0] == name or (name.isdigit() and e[2] == name)), None)
    if match is None and not name.isdigit():
        raise SandboxError(f"the image's USER {user!r} is not in its /etc/passwd")
    uid = int(match[2]) if match else int(name)
    gid = int(match[3]) if match else uid
    home = match[5] if match else "/"
    if grp:
        groups = [line.split(":") for line in group.splitlines() if line.count(":") >= 3]
        g = next((e for e in groups if e[0] == grp or (grp.isdigit() and e[2] == grp)), None)
        if g is None and not grp.isdigit():
            raise SandboxError(f"the image's USER {user!r} names a group missing from its /etc/group")
        gid = int(g[2]) if g else int(grp)
    return uid, gid, home, match is not None


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
            except Exception:  # a failed refill only costs the next start its latency
                log.warning("warm pool refill for %s failed", key[0], exc_info=True)
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
    except Exception:  # discarding: the container goes next either way
        log.warning("killing a pooled shell failed", exc_info=True)
    try:
        container.remove(force=True)
    except Exception:  # the orphan cleanup removes what is left
        log.warning("removing pooled container %s failed", getattr(container, "id", "?"), exc_info=True)


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
        self._profile = ImageProfile(False, "", frozenset())
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
        image = task_image(
            self.spec.environment_dir, self.spec.image, dict(self.spec.image_aliases), self.spec.build_failures_dir
        )
        self._profile = image_profile(image)
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
        return (image, limits, self._profile, self.spec.workdir, self.spec.env)

    @property
    def _isolating(self) -> bool:
        """The container holds CAP_SYS_ADMIN for the verifier's private view (and every other
        shell gives it up)."""
        return self._profile.can_isolate

    @property
    def workdir(self) -> str:
        """The image's WORKDIR, as under Harbor; the spec's (/app) for images that set none."""
        return self._profile.workdir or self.spec.workdir

    def _create_container(self, image: str):
        limits = self.spec.limits
        mem = f"{limits.memory_mb}m"
        p = self._profile
        owner = f"{p.uid}:{p.gid}"
        # As root, whatever the image's USER: a non-root user could not create these. A working
        # directory created here belongs to the user who will work in it.
        prepare = (
            f"[ -d {shell_quote(self.workdir)} ] || {{ mkdir -p {shell_quote(self.workdir)} && "
            f"chown {owner} {shell_quote(self.workdir)}; }}; mkdir -p /logs/agent /logs/verifier && "
            f"chown {owner} /logs/agent; exec sleep infinity"
        )
        try:
            return client().containers.run(
                image,
                cap_add=["SYS_ADMIN"] if self._isolating else None,
                entrypoint=["/bin/sh", "-c", prepare],
                user="0:0",
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
                labels={
                    LABEL: "sandbox",
                    "trsi-tui.name": self.spec.name,
                    "trsi-tui.owner-pid": str(os.getpid()),
                    "trsi-tui.owner-host": os.uname().nodename,
                },
            )
        except Exception as exc:  # noqa: BLE001 - the SDK raises several types for one failure
            raise SandboxError(f"could not start a container from {image}: {exc}") from None

    def _pooled_item(self, image: str):
        """A started container with its session shell, built for the pool by a throwaway owner."""
        holder = DockerSandbox(self.spec)
        holder._profile = self._profile
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
                used = int(
                    subprocess.run(["du", "-sxb", upper], capture_output=True, text=True, timeout=30).stdout.split()[0]
                )
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
        except Exception:  # a container that cannot be inspected has nothing left to kill
            log.warning(
                "inspecting container %s before killing its processes failed", self._container.id, exc_info=True
            )
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
            except Exception:  # already gone is fine; anything else is logged
                log.debug("removing container %s", self._container.id, exc_info=True)

    @property
    def alive(self) -> bool:
        if self._stopped or self._container is None:
            return False
        try:
            self._container.reload()
            return self._container.status == "running"
        except Exception:  # an engine that cannot tell counts the sandbox as dead
            log.warning("container %s state unknown", self._container.id, exc_info=True)
            return False

    @property
    def limits_enforced(self) -> tuple[str, ...]:
        return (("network",) if not self.spec.limits.allow_internet else ()) + (
            "memory",
            "pids",
            "cpu",
            "disk(tmpfs /tmp, watched layer)",
            "wall-time",
        )

    @property
    def resource_events(self) -> dict[str, int]:
        """The container's own cgroup counters (State.OOMKilled only covers its main process)."""
        if self._container is None:
            return {}
        events = LimitGroup(dirs=self._cgroup_dirs()).events()
        events.update(self._events)
        try:  # /tmp is a capped tmpfs: full means a write failed with ENOSPC
            df = subprocess.run(
                self._exec_argv(["df", "-P", "/tmp"]), env=_host_env(), capture_output=True, text=True, timeout=10
            ).stdout.splitlines()
            if len(df) > 1 and df[1].split()[4] in ("99%", "100%"):
                events["disk_limit"] = events.get("disk_limit", 0) + 1
        except (subprocess.TimeoutExpired, IndexError, SandboxError):
            pass
        return events

    # -- plumbing --------------------------------------------------------------------------
    def _exec_argv(
        self,
        argv: list[str],
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        as_agent: bool = False,
        keep_added_caps: bool = False,
    ) -> list[str]:
        """`docker exec` of argv. The container's environment (the image's ENV, PATH included) is
        inherited; only what the sandbox adds is passed. Root with Docker's default capabilities
        unless `as_agent`: then the image's USER, with its HOME. `keep_added_caps` is for the
        verifier's mount step alone, which drops them itself."""
        if self._container is None:
            raise SandboxError("sandbox is not started")
        p = self._profile
        merged = {"TERM": "dumb", **({} if "LANG" in p.env_keys else {"LANG": "C.UTF-8"})}
        if as_agent and not p.as_root:
            merged.update(HOME=p.home, USER=str(p.uid))
        merged.update(dict(self.spec.env))
        merged.update(env or {})
        flags = ["-i", "-w", cwd or self.workdir]
        for k, v in merged.items():
            flags += ["-e", f"{k}={v}"]
        if as_agent and not p.as_root and not self._isolating:
            flags += ["-u", f"{p.uid}:{p.gid}"]  # nothing to drop: docker exec switches the user
        return [
            "docker",
            "exec",
            *flags,
            self._container.id,
            *(argv if keep_added_caps else self._drop_added(argv, as_agent)),
        ]

    def _drop_added(self, argv: list[str], as_agent: bool) -> list[str]:
        if not self._isolating:
            return argv
        p = self._profile
        user: list[str] = []
        if as_agent and not p.as_root:
            user = [f"--reuid={p.uid}", f"--regid={p.gid}", "--init-groups" if p.user_known else "--clear-groups"]
        return ["setpriv", *DROP_ADDED_CAPS, *user, *argv]

    def _emitter(self, channel: Channel):
        return lambda text: self.emit(OutputChunk(channel, "output", text))

    def _new_session(self) -> PipeShell:
        shell = PipeShell(
            self._exec_argv(["bash", "--noprofile", "--norc"], as_agent=True),
            _host_env(),
            self._emitter("agent"),
            self._interrupt_session,
        )
        probe = shell.run("echo $$", timeout=30)
        if probe.exit_code != 0 or not probe.output.strip().isdigit():
            shell.kill()
            raise SandboxError(f"container shell did not start: {probe.output.strip()[-300:]!r}")
        self._session_pid = probe.output.strip()
        return shell

    def _interrupt_session(self, shell: PipeShell) -> None:
        subprocess.run(
            self._exec_argv(["sh", "-c", _KILL_CHILDREN + self._session_pid]),
            env=_host_env(),
            capture_output=True,
            timeout=30,
        )

    # -- commands --------------------------------------------------------------------------
    def exec(
        self, command: str, timeout: float, channel: Channel = "system", cwd: str | None = None, env: Env | None = None
    ) -> ExecResult:
        self.emit(OutputChunk(channel, "command", command))
        # `timeout` inside the container: killing the docker CLI alone would leave the command running.
        argv = self._exec_argv(
            ["timeout", "-s", "KILL", str(max(1, int(timeout) + 1)), "bash", "--noprofile", "--norc", "-c", command],
            cwd=cwd,
            env=env,
            as_agent=channel == "agent",
        )
        result = run_streamed(argv, _host_env(), timeout, self._emitter(channel))
        self.emit(OutputChunk(channel, "exit", result.status_text))
        return result

    def _exec_private(self, command: str, timeout: float, req: PrivateExec) -> tuple[ExecResult, Path | None]:
        """The private verifier view: this exec alone keeps CAP_SYS_ADMIN, only to mount, and drops
        it before the command runs, keeping Docker's defaults as any other root shell does. The
        verifier runs as root. Images without unshare/setpriv use the shared view."""
        uploads, collect, masks, channel, cwd, env = req.uploads, req.collect, req.masks, req.channel, req.cwd, req.env
        if not self._isolating:
            return super()._exec_private(command, timeout, req)
        run = private_view.build(
            command,
            uploads=uploads,
            collect=collect,
            masks=masks,
            cwd=cwd or self.workdir,
            size_mb=self.spec.limits.disk_mb,
            collect_fd=1,
            drop=DROP_ADDED_CAPS,
        )
        argv = self._exec_argv(
            [
                "timeout",
                "-s",
                "KILL",
                str(max(1, int(timeout) + 1)),
                "unshare",
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                run.script,
            ],
            env=env,
            keep_added_caps=True,
        )
        self.emit(OutputChunk(channel, "command", command))
        collected = bytearray()
        result = run_streamed(
            argv, _host_env(), timeout, self._emitter(channel), stdin_data=run.uploads_tar, stdout_sink=collected.extend
        )
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
        except Exception as exc:  # noqa: BLE001 - the SDK raises several types for one failure
            raise SandboxError(f"download of {src} failed: {exc}") from None
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
            tar.extractall(dest, filter="data")
