"""Docker sandboxes: one container per episode, the same Sandbox contract as the local backend.

The Docker SDK drives images, containers and file transfer (put/get archive). Shells run
through `docker exec -i` so the persistent-shell protocol (sandboxes/shell.py) is the very same
code as on the local backend. Containers carry labels; `remove_orphans()` deletes those left
by a process that died.

Where a task relies on it, a sandbox behaves as Harbor's containers do: every shell gets
Docker's default capabilities and the image's environment (PATH included) and WORKDIR, and the
agent runs as the image's USER. No capability is added.

Nothing from the container's filesystem runs for the engine: every program the engine starts
in a container (pid 1, `timeout`, the verifier's preparation) is a static busybox that the host
bind-mounts read-only at /.trsi-engine, called by absolute path; processes are ended, signals
sent and disk use read from the host, through /proc. Between the agent's turn and the verifier,
every process in the container but pid 1 is killed, and the writable layer is checked for
changes to what the verifier runs on (sandboxes/tamper.py).
"""

from __future__ import annotations

import io
import itertools
import logging
import os
import stat
import subprocess
import tarfile
import threading
from pathlib import Path

from sandboxes import dev_links, ld_cache, links, tamper
from sandboxes.base import (
    VERIFIER_RESULTS_LIMIT,
    AgentProcessesSurvived,
    BoundedBytes,
    Channel,
    Env,
    EnvironmentTampered,
    ExecResult,
    OutputChunk,
    PrivateExec,
    SandboxError,
    SandboxSpec,
    packed_upload,
    shell_words,
    transfer_limit,
    upload_dir,
)
from sandboxes.docker_engine_tools import BUSYBOX, BUSYBOX_INIT, ENGINE_TOOLS, INIT_USER, engine_tools_dir
from sandboxes.docker_images import LABEL, client, task_image
from sandboxes.docker_pool import POOL, remove_orphans
from sandboxes.docker_profile import ImageProfile, image_profile
from sandboxes.limits import CGROUP_ROOT, LimitGroup
from sandboxes.procs import descendants, end_namespace, kill_pids, namespace_members
from sandboxes.session_sandbox import SessionSandbox
from sandboxes.shell import PipeShell, read_tar_bounded, real_dir_function, run_streamed, shell_quote

log = logging.getLogger(__name__)


def _engine_exec(argv: list[str], what: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """One of the engine's short `docker exec`s, its output decoded leniently (the agent names
    the files it reports on); a run past `timeout` (a tree of millions of hard links to remove)
    is a SandboxError like any other failure there."""
    try:
        return subprocess.run(argv, env=_host_env(), capture_output=True, text=True, errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SandboxError(f"{what} took over {timeout:g}s") from None


def _allocated(path: str) -> int:
    """Bytes of the host's disk a host file holds (0 when it is gone)."""
    try:
        return os.stat(path).st_blocks * 512
    except OSError:
        return 0


def _host_env() -> dict[str, str]:
    keep = ("PATH", "HOME", "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CERT_PATH", "DOCKER_TLS_VERIFY")
    return {k: v for k, v in os.environ.items() if k in keep}


DISK_POLL_S = 0.25
# What the writable layer may hold on the host's disk past its storage limit before the sandbox
# is ended (and the space freed at once): the watcher is not a quota, and `fallocate -l 70G`
# reserves in one call what no poll can stop. An ordinary write overshoots the limit by what the
# disk takes in between two polls, well under this.
DISK_HARD_MARGIN = 2 * 1024**3
# Files (inodes) the writable layer may hold: a flood of empty files fills no bytes but can
# exhaust the host's inodes.
MAX_LAYER_FILES = 200_000


class DockerSandbox(SessionSandbox):
    backend_name = "docker"
    _orphans_checked = False
    _orphans_lock = threading.Lock()

    def __init__(self, spec: SandboxSpec) -> None:
        super().__init__(spec)
        self._container = None
        self._session: PipeShell | None = None
        self._session_pid: str = ""
        self._profile = ImageProfile("", frozenset())
        self._events: dict[str, int] = {}
        self._watchdog: threading.Thread | None = None
        self._watching = True  # the agent's turn: past the disk limit its processes are ended
        self._layer_before: tamper.Manifest | None = None
        self._ld_cache_before: ld_cache.Cache | None = None
        self._disk_ended = ""  # why the disk watcher ended the sandbox

    # -- lifecycle -------------------------------------------------------------------------
    def _start(self) -> None:
        client()  # fail fast, with the fix in the message, when no engine answers
        engine_tools_dir()
        with DockerSandbox._orphans_lock:
            if not DockerSandbox._orphans_checked:
                DockerSandbox._orphans_checked = True
                remove_orphans()
        image = task_image(
            self.spec.environment_dir,
            self.spec.image,
            dict(self.spec.image_aliases),
            self.spec.build_failures_dir,
            network=self.spec.build_network,
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
    def workdir(self) -> str:
        """The image's WORKDIR, as under Harbor; the spec's (/app) for images that set none."""
        return self._profile.workdir or self.spec.workdir

    def _create_container(self, image: str):
        p = self._profile
        owner = f"{p.uid}:{p.gid}"
        wd = shell_quote(self.workdir)
        b = BUSYBOX
        # pid 1 is the engine's busybox, not the image's: a shell that ignores every signal it
        # can (init gets no SIGKILL from inside its namespace), so the agent cannot stop the
        # container, and that ignores SIGCHLD, so the orphans the agent leaves are reaped by the
        # kernel. It idles reading a FIFO nobody writes to and has no child of its own, so that
        # ending the agent's processes means ending every process but pid 1. It runs as
        # INIT_USER from an unreadable binary, so it cannot be traced (BUSYBOX_INIT).
        init = (
            f"{b} mkfifo /tmp/.trsi-idle && exec 3<>/tmp/.trsi-idle && {b} rm -f /tmp/.trsi-idle || exit 1\n"
            "trap '' CHLD HUP INT TERM QUIT USR1 USR2 PIPE ALRM\n"
            "while :; do read -r _ <&3; done\n"
        )
        # As root, whatever the image's USER: a non-root user could not create these; a working
        # directory created here belongs to the user who will work in it.
        prepare = (
            f"[ -d {wd} ] || {{ {b} mkdir -p {wd} && {b} chown {owner} {wd}; }} || exit 1\n"
            f"{b} mkdir -p /logs/agent /logs/verifier && {b} chown {owner} /logs/agent || exit 1\n"
        )
        container = self._run_container(image, init)
        done = subprocess.run(
            ["docker", "exec", "-u", "0:0", "-w", "/", container.id, b, "sh", "-c", prepare],
            env=_host_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        if done.returncode != 0:
            container.remove(force=True)
            raise SandboxError(f"could not prepare a container of {image}: {(done.stdout + done.stderr)[-300:]}")
        return container

    def _run_container(self, image: str, init: str):
        limits = self.spec.limits
        mem = f"{limits.memory_mb}m"
        try:
            return client().containers.run(
                image,
                entrypoint=[BUSYBOX_INIT, "sh", "-c", init],
                user=INIT_USER,
                detach=True,
                hostname="sandbox",
                volumes={engine_tools_dir(): {"bind": ENGINE_TOOLS, "mode": "ro"}},
                # The default bridge is off here; a task that may use the internet shares the host's.
                network_mode="host" if limits.allow_internet else "none",
                tmpfs={"/tmp": f"size={limits.disk_mb}m,mode=1777,nr_inodes={MAX_LAYER_FILES}"},
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

    def _layer(self) -> tuple[Path, list[Path]] | None:
        """The container's writable overlay layer and the image layers below it, on the host."""
        try:
            data = self._container.attrs["GraphDriver"]["Data"]  # type: ignore[union-attr]
            return Path(data["UpperDir"]), [Path(x) for x in (data.get("LowerDir") or "").split(":") if x]
        except (KeyError, TypeError):
            return None

    def _watch_disk(self) -> None:
        """overlay2 on ext4 has no quota: watch the writable layer and stop a fill in its tracks.

        It counts the blocks the layer holds on the host's disk, not the files' sizes: a sparse
        file takes no disk, and `fallocate --keep-size` takes disk without growing any file. Past
        the limit the agent's processes are ended; past it by DISK_HARD_MARGIN (a reservation
        made faster than any poll) the whole sandbox is, which frees the space at once."""
        layer = self._layer()
        if layer is None:
            return
        upper = str(layer[0])
        # /etc/hosts, /etc/hostname and /etc/resolv.conf are host files Docker binds in, outside
        # the layer: written to, they fill the host's disk just the same.
        try:
            # Docker names those files once the container has started; `run` returned its
            # attributes from before that.
            attrs = client().api.inspect_container(self._container.id)  # type: ignore[union-attr]
        except Exception:  # a container already gone has nothing left to watch
            log.warning("inspecting container %s failed", self._container.id, exc_info=True)  # type: ignore[union-attr]
            attrs = {}
        bound = [attrs[k] for k in ("HostsPath", "HostnamePath", "ResolvConfPath") if attrs.get(k)]
        limit = self.spec.limits.disk_mb * 1024 * 1024
        hard_limit = limit + DISK_HARD_MARGIN
        files_limit = MAX_LAYER_FILES
        polls = 0
        # The hard limit holds during the verifier's run too (its tests may run the agent's
        # programs); ending the agent's processes is for its turn alone.
        while not self._stopped:
            try:
                du = subprocess.run(
                    ["du", "-sx", "--block-size=1", upper], capture_output=True, text=True, errors="replace", timeout=30
                )
                used = int(du.stdout.split()[0])
            except (ValueError, IndexError, subprocess.TimeoutExpired, OSError):
                used = 0
            used += sum(_allocated(p) for p in bound)
            if used > hard_limit and not self._stopped:
                self._end_for_disk(used)
                return
            files = 0
            if polls % 4 == 0 and self._watching:  # a second count of the same tree: once a second is enough
                try:
                    out = subprocess.run(
                        ["du", "-sx", "--inodes", upper], capture_output=True, text=True, errors="replace", timeout=30
                    )
                    files = int(out.stdout.split()[0])
                except (ValueError, IndexError, subprocess.TimeoutExpired, OSError):
                    files = 0
            polls += 1
            if (used > limit or files > files_limit) and not self._stopped and self._watching:
                self._events["disk_limit"] = self._events.get("disk_limit", 0) + 1
                self._kill_all()
                # What was written stays; only further growth counts.
                limit = max(limit, used + 64 * 1024 * 1024)
                files_limit = max(files_limit, files + 10_000)
            threading.Event().wait(DISK_POLL_S)

    def _end_for_disk(self, used: int) -> None:
        self._disk_ended = (
            f"sandbox_disk: the agent's files took {used / 1024**3:.1f} GiB of the host's disk, over the "
            f"sandbox's storage limit ({self.spec.limits.disk_mb} MB) by more than "
            f"{DISK_HARD_MARGIN // 1024**3} GiB, and the sandbox was ended"
        )
        self._events["disk_limit"] = self._events.get("disk_limit", 0) + 1
        log.warning("container %s: %s", self._container.id, self._disk_ended)  # type: ignore[union-attr]
        try:
            self._container.remove(force=True)  # type: ignore[union-attr]
        except Exception:  # the teardown tries again; what failed is logged
            log.warning("removing container %s", self._container.id, exc_info=True)  # type: ignore[union-attr]

    @property
    def ended_by_the_agent(self) -> str:
        return self._disk_ended or super().ended_by_the_agent

    def _init_pid(self) -> int | None:
        """pid 1 of the container, as the host numbers it."""
        try:
            self._container.reload()  # type: ignore[union-attr]
            pid = int(self._container.attrs["State"]["Pid"])  # type: ignore[union-attr]
        except Exception:  # a container that cannot be inspected has nothing left to kill
            log.warning("inspecting container %s failed", getattr(self._container, "id", "?"), exc_info=True)
            return None
        return pid or None

    def _kill_all(self) -> set[int]:
        """Kill every process in the container but pid 1, from the host (inside, a fork-bombed
        container could not even start the command to do it); return those that survived."""
        init = self._init_pid()
        return end_namespace(init) if init is not None else set()

    def _cgroup_dirs(self) -> list[Path]:
        cid = self._container.id  # type: ignore[union-attr]
        dirs = [CGROUP_ROOT / c / "docker" / cid for c in ("pids", "memory")]
        dirs.append(CGROUP_ROOT / "system.slice" / f"docker-{cid}.scope")
        return [d for d in dirs if d.is_dir()]

    def agent_turn_starts(self) -> None:
        layer = self._layer()
        self._layer_before = tamper.snapshot(layer[0], MAX_LAYER_FILES) if layer else None
        init = self._init_pid()
        try:
            self._ld_cache_before = ld_cache.read(f"/proc/{init}/root") if init is not None else None
        except ld_cache.Unreadable:  # the image's own: nothing of the agent's to judge by it
            log.warning("container %s: its loader cache could not be read", self._container.id)  # type: ignore[union-attr]
            self._ld_cache_before = None

    def prepare_for_verification(self) -> None:
        """End every process but pid 1 (the agent's shell, its jobs, its daemons), then check the
        writable layer for changes to what the verifier runs on."""
        self._watching = False
        if self._session is not None:
            self._session.kill()
        if not self.alive:
            return  # verification fails on its own, as an infrastructure error
        survivors = self._kill_all()
        if survivors:
            raise AgentProcessesSurvived(f"{len(survivors)} agent process(es) could not be ended: {sorted(survivors)}")
        layer = self._layer()
        if layer is None or self._layer_before is None:
            log.warning("container %s: no writable layer to check for tampering", self._container.id)  # type: ignore[union-attr]
            return
        upper, lowers = layer
        limit = len(self._layer_before) + MAX_LAYER_FILES
        after = tamper.snapshot(upper, limit)
        if after is None or len(after) > MAX_LAYER_FILES:  # a flood that ended between two polls of the watcher
            self._events["disk_limit"] = self._events.get("disk_limit", 0) + 1
        if after is None:  # hard links count no inode, so the watcher need not have seen them
            raise EnvironmentTampered(f"the agent left over {limit} files and links: too many to check")
        init = self._init_pid()
        root = f"/proc/{init}/root" if init is not None else None
        found = tamper.tampered(
            tamper.changes(self._layer_before, after), upper, lowers, self._layer_before, root, self._profile.path
        )
        if found:
            shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
            raise EnvironmentTampered(f"the agent changed what the verifier runs on: {shown}")
        # Links in the writable layer, and in the tmpfs mounts outside it (/tmp, /dev, /dev/shm).
        if root is not None:
            try:
                moved = ld_cache.redirected(self._ld_cache_before, ld_cache.read(root))
            except ld_cache.Unreadable as exc:
                raise EnvironmentTampered(f"the loader's cache cannot be read: {exc}") from None
            if moved:
                shown = ", ".join(moved[:3])
                raise EnvironmentTampered(f"the loader's cache sends the image's libraries elsewhere: {shown}")
            made = ["/" + rel for rel, e in after.items() if e.kind == stat.S_IFLNK]
            found = links.leading_into_the_verifier(
                root, itertools.chain(made, links.links_under(root, ["/tmp", "/dev"]))
            )
            if found:
                raise EnvironmentTampered(f"links lead into the verifier's files: {', '.join(found[:3])}")
            git = tamper.git_configs_that_run_programs(root)
            if git:
                raise EnvironmentTampered(f"{', '.join(git)}: git settings that run programs on the tests' clone")
            linked = tamper.home_configs_elsewhere(root)
            if linked:
                raise EnvironmentTampered(f"{', '.join(linked[:3])}: root's configuration reached through a link")
            dev_links.put_back(root)

    def _teardown(self) -> None:
        if self._session is not None:
            self._session.kill()
        if self._container is not None:
            try:
                self._container.remove(force=True)
            except Exception:  # already gone is fine; anything else is logged
                log.debug("removing container %s", self._container.id, exc_info=True)

    @property
    def alive(self) -> bool:
        if self._stopped or self._container is None or self._disk_ended:
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
            "files",
            "wall-time",
        )

    @property
    def resource_events(self) -> dict[str, int]:
        """The container's own cgroup counters (State.OOMKilled only covers its main process)."""
        if self._container is None:
            return {}
        alive = self.alive  # reloads the container's state
        events = LimitGroup(dirs=self._cgroup_dirs()).events()
        events.update(self._events)
        if not alive and self._container.attrs.get("State", {}).get("OOMKilled"):
            # Its init was the OOM killer's victim (the container's cgroup is gone with it).
            events["oom_kill"] = max(events.get("oom_kill", 0), 1)
        init = self._init_pid() if alive else None
        if init is not None:  # /tmp is a capped tmpfs: full means a write failed with ENOSPC
            try:
                st = os.statvfs(f"/proc/{init}/root/tmp")
                if st.f_blocks and (st.f_bavail <= st.f_blocks // 100 or st.f_favail == 0):
                    events["disk_limit"] = events.get("disk_limit", 0) + 1
            except OSError:
                pass
        return events

    # -- plumbing --------------------------------------------------------------------------
    def _exec_argv(
        self, argv: list[str], cwd: str | None = None, env: dict[str, str] | None = None, as_agent: bool = False
    ) -> list[str]:
        """`docker exec` of argv. The container's environment (the image's ENV, PATH included) is
        inherited; only what the sandbox adds is passed. Root with Docker's default capabilities
        unless `as_agent`: then the image's USER, with its HOME."""
        if self._container is None:
            raise SandboxError("sandbox is not started")
        p = self._profile
        merged = {"TERM": "dumb", **({} if "LANG" in p.env_keys else {"LANG": "C.UTF-8"})}
        if as_agent and not p.as_root:
            merged.update(HOME=p.home, USER=str(p.uid))
        elif "HOME" not in p.env_keys:
            merged["HOME"] = p.root_home
        merged.update(dict(self.spec.env))
        merged.update(env or {})
        flags = ["-i", "-w", cwd or self.workdir]
        for k, v in merged.items():
            flags += ["-e", f"{k}={v}"]
        # Always named: the container's own user is INIT_USER, pid 1's.
        flags += ["-u", p.user or f"{p.uid}:{p.gid}"] if as_agent and not p.as_root else ["-u", "0:0"]
        return ["docker", "exec", *flags, self._container.id, *argv]

    def _emitter(self, channel: Channel):
        return lambda text: self.emit(OutputChunk(channel, "output", text))

    def _new_session(self, cwd: str | None = None) -> PipeShell:
        shell = PipeShell(
            self._exec_argv([self._profile.bash, "--noprofile", "--norc"], cwd=cwd, as_agent=True),
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
        """Kill what the session shell started (not the shell), from the host."""
        init = self._init_pid()
        if init is None:
            return
        for pid in namespace_members(init):
            if _ns_pid(pid) == self._session_pid:
                kill_pids(descendants(pid))
                return

    # -- commands --------------------------------------------------------------------------
    def exec(
        self, command: str, timeout: float, channel: Channel = "system", cwd: str | None = None, env: Env | None = None
    ) -> ExecResult:
        self.emit(OutputChunk(channel, "command", command))
        # `timeout` inside the container (the engine's busybox): killing the docker CLI alone
        # would leave the command running.
        argv = self._exec_argv(
            [
                BUSYBOX,
                "timeout",
                "-s",
                "KILL",
                str(max(1, int(timeout) + 1)),
                self._profile.bash,
                "--noprofile",
                "--norc",
                "-c",
                command,
            ],
            cwd=cwd,
            env=env,
            as_agent=channel == "agent",
        )
        result = run_streamed(argv, _host_env(), timeout, self._emitter(channel))
        self.emit(OutputChunk(channel, "exit", result.status_text))
        return result

    def _exec_private(self, command: str, timeout: float, req: PrivateExec) -> tuple[ExecResult, Path | None]:
        """The verifier's view, after every agent process has ended (prepare_for_verification):
        fresh directories at the uploads and at `collect`, every component of their paths a
        real directory (a link the agent planted is removed, never followed), masked files
        removed. The command runs as root; whatever it leaves running is killed before its
        results are read. No capability beyond Docker's defaults is needed for any of it."""
        b = BUSYBOX
        dests = shell_words([*req.uploads, req.collect])
        prep = (
            real_dir_function(f"{b} rm", f"{b} mkdir") + "\n"
            f'for d in {" ".join(dests)}; do real_dir "$d" || exit 1; '
            f'{b} rm -rf -- "$d" && {b} mkdir -- "$d" || exit 1; done\n'
            # The verifier starts in the working directory: the agent may have removed it.
            f"real_dir {shell_quote(req.cwd or self.workdir)} || exit 1\n"
        )
        if req.masks:
            prep += f"{b} rm -rf -- {' '.join(shell_words(list(req.masks)))}\n"
        done = _engine_exec(self._exec_argv([b, "sh", "-c", prep], cwd="/"), "preparing the verifier's directories")
        if done.returncode != 0:
            raise SandboxError(f"could not prepare the verifier's directories: {(done.stdout + done.stderr)[-300:]}")
        for dest, src in req.uploads.items():
            self._put(src, dest)
        result = self.exec(command, timeout, channel=req.channel, cwd=req.cwd, env=req.env)
        survivors = self._kill_all()  # a daemon of the program under test must not edit the results
        if survivors:
            raise SandboxError(f"{len(survivors)} process(es) of the verifier could not be ended")
        if result.timed_out:
            return result, None
        import tempfile

        out = Path(tempfile.mkdtemp(prefix="trsi-collect-"))
        self._download(req.collect, out, BoundedBytes(VERIFIER_RESULTS_LIMIT, "the verifier's results"))
        return result, out / Path(req.collect).name

    # -- files -----------------------------------------------------------------------------
    def _put(self, src: Path, dest: str) -> None:
        with packed_upload(src, dest) as (data, target_dir):
            if not self._container.put_archive(target_dir, data):  # type: ignore[union-attr]
                raise SandboxError(f"upload to {dest} failed")

    def upload(self, src: Path, dest: str) -> None:
        target_dir = upload_dir(src, dest)
        mk = _engine_exec(self._exec_argv([BUSYBOX, "mkdir", "-p", "--", target_dir]), f"the upload to {dest}")
        if mk.returncode != 0:
            raise SandboxError(f"upload to {dest} failed: {(mk.stdout + mk.stderr).strip()}")
        self._put(src, dest)

    def download(self, src: str, dest: Path) -> None:
        self._download(src, dest, BoundedBytes(transfer_limit(self.spec.limits), f"the download of {src}"))

    def _download(self, src: str, dest: Path, data: BoundedBytes) -> None:
        # The engine's busybox in a `docker exec`, not the daemon's archive API: a stream that is
        # too long (a sparse file) is cut by killing the exec, where the daemon's would hold the
        # container busy until every byte was read.
        parent, name = os.path.split(src.rstrip("/")) or ("/", src)
        argv = self._exec_argv([BUSYBOX, "tar", "-c", "-C", parent or "/", "--", name], cwd="/")
        archive = read_tar_bounded(argv, _host_env(), data, f"download of {src}")
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        try:
            with tarfile.open(fileobj=io.BytesIO(archive), mode="r") as tar:
                tar.extractall(dest, filter="data")
        except tarfile.TarError as exc:
            raise SandboxError(f"could not read the download of {src}: {exc}") from None


def _ns_pid(pid: int) -> str:
    """The pid a process has in its own (innermost) pid namespace, from the host's /proc."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("NSpid:"):
                    return line.split()[-1]
    except OSError:
        pass
    return ""
