"""Local sandboxes on bubblewrap: unprivileged namespaces, host userland read-only, no network.

Layout inside: the host's /usr (+ /bin, /lib*, /sbin) and /etc read-only; private size-capped
tmpfs at /, /app (the workspace) and /tmp; fresh /proc and /dev; /root as HOME. Nothing of the
host's project tree is visible, so a task's tests and solution exist in the sandbox only once
the engine uploads them.

Process model: bwrap holds the namespaces with an idle bash as pid 1, which the agent cannot
signal and which reaps the orphans it leaves. Every shell (the agent's persistent session,
setup, the verifier) joins those namespaces through nsenter with no capabilities (the verifier
keeps those that let it read every file: private_view.py). The verifier therefore gets a clean
shell the agent never touched, and killing bwrap's init (pid 1 of the
namespace) kills everything inside.

The sandbox's root directory is a writable tmpfs; /bin, /sbin and /lib* are read-only mounts
on it (never links an agent could repoint), and every program the engine runs inside is named
by its real path on the host, under the read-only /usr.
"""

from __future__ import annotations

import functools
import io
import json
import os
import secrets
import shutil
import stat
import subprocess
import tarfile
import threading
from pathlib import Path

from sandboxes import links, private_view, tamper
from sandboxes.base import (
    HOME_CONFIGS,
    VERIFIER_RESULTS_LIMIT,
    AgentProcessesSurvived,
    BoundedBytes,
    Channel,
    Env,
    EnvironmentTampered,
    ExecResult,
    Limits,
    OutputChunk,
    PrivateExec,
    SandboxError,
    SandboxSpec,
    SandboxUnavailable,
    packed_upload,
    transfer_limit,
)
from sandboxes.limits import LimitGroup, create_group
from sandboxes.pipes import PipeReader
from sandboxes.procs import children, descendants, end_namespace, kill_pids
from sandboxes.session_sandbox import SessionSandbox
from sandboxes.shell import PipeShell, read_tar_bounded, run_streamed, shell_quote

# user, mount, pid, network, IPC, UTS namespaces, root directory and working directory
_NAMESPACE_FLAGS = ("-U", "-m", "-p", "-n", "-i", "-u", "-r", "-w")
# The sandbox's init holds this capability (in the sandbox's user namespace only) and every
# process the agent runs holds none. The kernel lets a process trace another of its own uid only
# when the tracee's capabilities are a subset of its own, so no agent process can ptrace init
# (or write its memory through /proc/1/mem) and make it run code that outlives the agent's turn
# next to the verifier. Init never uses it; block-suspend means nothing in a user namespace.
INIT_CAPABILITY = "CAP_BLOCK_SUSPEND"
# Init (bwrap and an idle bash) in a memory group of its own, out of the OOM killer's reach
# when the agent fills its limit.
INIT_MEMORY_MB = 64
BASE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
INSTALL_HINT = (
    "bubblewrap (bwrap) is not installed, and the local sandbox backend needs it. "
    "Install it with `sudo apt-get install bubblewrap` (Debian/Ubuntu), "
    "`sudo dnf install bubblewrap` (Fedora) or `sudo pacman -S bubblewrap` (Arch)."
)
# Files Harbor-style test.sh scripts source after installing their tools (`source
# $HOME/.local/bin/env` after uv's installer). This sandbox's HOME starts empty, so any such
# file is the agent's, and the verifier's view covers it. (Docker images may ship them: there a
# changed one is tampering, sandboxes/tamper.py.)
SOURCED_FROM_HOME = tuple(f"/root/{name}" for name in HOME_CONFIGS)
# Unprivileged host uids for sandboxes when we run as root: one per sandbox, so RLIMIT_NPROC and
# file ownership never mix two sandboxes, and nothing inside maps to the host's real root.
_UID_BASE = 3_000_000
_UID_SPAN = 1_000_000


def bwrap_path() -> str:
    found = shutil.which("bwrap")
    if not found:
        raise SandboxUnavailable(INSTALL_HINT)
    if os.stat(found).st_mode & stat.S_ISUID:
        # A setuid bwrap refuses --cap-add, and without it the sandbox's init could be traced and
        # made to run the agent's code through the verifier (see INIT_CAPABILITY).
        raise SandboxUnavailable(
            f"{found} is installed setuid root; the local backend needs a bubblewrap that uses "
            "unprivileged user namespaces (Debian's and Ubuntu's packages do)"
        )
    return found


@functools.cache
def host_tool(name: str) -> str:
    """The real path of a host program, as the sandbox sees it read-only: resolved through every
    link, so that it never passes through the sandbox's own (writable) /bin or /sbin links."""
    found = shutil.which(name, path=BASE_PATH)
    if not found:
        raise SandboxUnavailable(f"`{name}` is not installed on this machine; the local backend needs it")
    real = os.path.realpath(found)
    if not real.startswith(("/usr/", "/bin/", "/sbin/", "/lib")):
        raise SandboxUnavailable(f"`{name}` resolves to {real}, outside the host userland the sandbox mounts")
    return real


# The host's read-only mounts and the kernel's view: the rest of the sandbox (/dev and /dev/shm
# included) is the agent's to write.
READ_ONLY_TOPS = frozenset({"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/proc"})


def _userland_binds() -> list[str]:
    """/usr and /etc, and /bin, /sbin, /lib* as read-only mounts of what they are on the host.

    Not as links: the sandbox's root is writable, and a link there could be pointed elsewhere
    (`ln -sfn /opt/evil /lib64` gives every dynamic program the agent's ELF interpreter, the
    engine's and the verifier's included). A mount point can be neither removed nor renamed.
    """
    args = ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        host = Path("/") / name
        if host.is_dir():  # a link to a directory (merged /usr) or a directory
            args += ["--ro-bind", os.path.realpath(host), f"/{name}"]
    return args


class LocalSandbox(SessionSandbox):
    backend_name = "local"

    def __init__(self, spec: SandboxSpec) -> None:
        super().__init__(spec)
        self._bwrap: subprocess.Popen | None = None
        self._init_pid: int | None = None
        self._group: LimitGroup | None = None
        # Init's own group: in the agent's, an agent that raised init's oom_score_adj and then
        # filled its memory limit had the OOM killer end init, and the sandbox with it.
        self._init_group: LimitGroup | None = None
        # The verifier's own budget: an agent's runaway processes must not starve the judge.
        self._verifier_group: LimitGroup | None = None
        self._session: PipeShell | None = None
        self._as_root = os.geteuid() == 0
        self._uid = _UID_BASE + secrets.randbelow(_UID_SPAN)
        self._hold_w: int | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def _start(self) -> None:
        bwrap = bwrap_path()
        limits = self.spec.limits
        self._group = create_group(limits)
        self._init_group = create_group(Limits(cpus=limits.cpus, memory_mb=INIT_MEMORY_MB, pids=8), tag="trsi-init")
        size = str(limits.disk_mb * 1024 * 1024)
        argv = [
            bwrap,
            "--unshare-all",
            "--uid",
            "0",
            "--gid",
            "0",
            "--hostname",
            "sandbox",
            "--die-with-parent",
            "--new-session",
        ]
        if limits.allow_internet:
            argv.append("--share-net")
        argv += ["--size", size, "--tmpfs", "/"]
        argv += _userland_binds()
        argv += [
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--size",
            size,
            "--tmpfs",
            "/tmp",
            "--size",
            size,
            "--tmpfs",
            "/app",
            "--dir",
            "/root",
            "--dir",
            "/logs",
            "--chdir",
            self.spec.workdir,
        ]
        read_fd, write_fd = os.pipe()
        ready_r, ready_w = os.pipe()
        # The namespace's pid 1 is a bash that the agent cannot signal (init ignores what it has
        # no handler for, SIGKILL included) and that reaps the orphans the agent leaves. It idles
        # reading a pipe the engine holds open and never writes: closing it ends the sandbox.
        # bwrap reports the pid on --info-fd before the mounts are finished; the idle command
        # itself writes to the ready pipe, so nobody enters a half-built namespace.
        hold_r, self._hold_w = os.pipe()
        idle = (
            f"echo ready >&{ready_w}; exec {ready_w}>&- 4<&{hold_r} {hold_r}<&-; "
            "trap '' HUP INT TERM QUIT USR1 USR2 PIPE; while :; do read -r -u 4 _ || exit 0; done"
        )
        argv += [
            "--cap-add",
            INIT_CAPABILITY,
            "--as-pid-1",
            "--info-fd",
            str(write_fd),
            "--",
            host_tool("bash"),
            "--noprofile",
            "--norc",
            "-c",
            idle,
        ]  # dash only takes fds 0-9
        try:
            self._bwrap = subprocess.Popen(
                self._wrap(argv, group=self._init_group),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(write_fd, ready_w, hold_r),
                start_new_session=True,
                env={"PATH": BASE_PATH},
            )
        finally:
            os.close(write_fd)
            os.close(ready_w)
            os.close(hold_r)
        with os.fdopen(read_fd, "rb") as info_file:
            raw = info_file.read()
        with os.fdopen(ready_r, "rb") as ready_file:
            ready = ready_file.read(5)
        try:
            if ready != b"ready":
                raise ValueError("sandbox never became ready")
            self._init_pid = int(json.loads(raw)["child-pid"])
        except (ValueError, KeyError):
            err = b""
            os.close(self._hold_w)  # its init, if it runs, ends: bwrap exits and says why
            self._hold_w = None
            if self._bwrap.stderr is not None:
                try:
                    self._bwrap.wait(timeout=5)
                    err = self._bwrap.stderr.read()
                except subprocess.TimeoutExpired:
                    pass
            raise SandboxError(f"bwrap failed to start: {err.decode(errors='replace').strip() or 'no info'}")
        self._session = self._new_session()

    def _teardown(self) -> None:
        if self._hold_w is not None:
            os.close(self._hold_w)
            self._hold_w = None
        if self._init_pid is not None:
            # pid 1 of the namespace: when it dies the kernel kills every process inside. It goes
            # first so each nsenter is still there to reap its own child (see shell.terminate).
            kill_pids([self._init_pid])
        if self._session is not None:
            self._session.kill()
        if self._bwrap is not None:
            # The outer bwrap reaps its child (the namespace's init) and exits by itself; killing it
            # first would leave that init a zombie of the host's pid 1.
            try:
                self._bwrap.wait(timeout=2)
            except subprocess.TimeoutExpired:
                kill_pids([self._bwrap.pid])
                try:
                    self._bwrap.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
            if self._bwrap.stderr is not None:
                self._bwrap.stderr.close()
        for group in (self._group, self._init_group, self._verifier_group):
            if group is not None:
                group.destroy()

    @property
    def alive(self) -> bool:
        return not self._stopped and self._bwrap is not None and self._bwrap.poll() is None

    @property
    def limits_enforced(self) -> tuple[str, ...]:
        base = ("network" if not self.spec.limits.allow_internet else "", "disk(tmpfs)", "wall-time")
        return tuple(x for x in base if x) + (self._group.enforced if self._group else ())

    @property
    def resource_events(self) -> dict[str, int]:
        events = self._group.events() if self._group else {}
        if self.alive and self._init_pid is not None:
            # A tmpfs at its cap means a write failed with ENOSPC: report it as the disk limit.
            # Read from the host through the init's root: nothing of the sandbox's runs for it.
            for mount in ("/", "/app", "/tmp"):
                try:
                    st = os.statvfs(f"/proc/{self._init_pid}/root{mount}")
                except OSError:
                    continue
                if st.f_blocks and st.f_bavail <= st.f_blocks // 100:
                    events["disk_limit"] = 1
        return events

    # -- process plumbing ------------------------------------------------------------------
    def _wrap(self, argv: list[str], group: LimitGroup | None = None) -> list[str]:
        """Enter the limit group, then (as root) drop to this sandbox's own unprivileged uid."""
        group = group or self._group
        assert group is not None
        prefix: list[str] = []
        if self._as_root and argv[0].endswith("bwrap"):
            prefix = ["setpriv", f"--reuid={self._uid}", f"--regid={self._uid}", "--clear-groups"]
        script = group.enter_script()
        return ["/bin/sh", "-c", f'{script + "; " if script else ""}exec "$@"', "trsi-enter", *prefix, *argv]

    def _enter(self) -> list[str]:
        """nsenter into every namespace of the sandbox's init (then the command follows)."""
        return [host_tool("nsenter"), "-t", str(self._init_pid), *_NAMESPACE_FLAGS, "--"]

    def _nsenter(self, argv: list[str]) -> list[str]:
        if self._init_pid is None or not self.alive:
            raise SandboxError("sandbox is not running")
        return self._wrap(
            [*self._enter(), host_tool("setpriv"), "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs", *argv]
        )

    def _env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {"PATH": BASE_PATH, "HOME": "/root", "LANG": "C.UTF-8", "TERM": "dumb", "USER": "root"}
        env.update(dict(self.spec.env))
        if extra:
            env.update(extra)
        return env

    def _emitter(self, channel: Channel):
        def emit(text: str) -> None:
            self.emit(OutputChunk(channel, "output", text))

        return emit

    def _new_session(self, cwd: str | None = None) -> PipeShell:
        shell = PipeShell(
            self._nsenter([host_tool("bash"), "--noprofile", "--norc"]),
            self._env(),
            self._emitter("agent"),
            self._interrupt_session,
        )
        probe = shell.run(f"cd -- {shell_quote(cwd or self.spec.workdir)}", timeout=10)
        if probe.exit_code != 0:
            shell.kill()
            raise SandboxError(f"sandbox shell did not start: {probe.output.strip()!r}")
        return shell

    @staticmethod
    def _interrupt_session(shell: PipeShell) -> None:
        # The session's bash is nsenter's only child; kill what bash started, not bash itself.
        for bash_pid in children(shell.proc.pid):
            kill_pids(descendants(bash_pid))

    # -- commands --------------------------------------------------------------------------
    def exec(
        self, command: str, timeout: float, channel: Channel = "system", cwd: str | None = None, env: Env | None = None
    ) -> ExecResult:
        self.emit(OutputChunk(channel, "command", command))
        # nsenter's --wd resolves on the host side, so change directory inside the shell.
        script = f"cd -- {shell_quote(cwd or self.spec.workdir)} || exit 1\n{command}"
        argv = self._nsenter([host_tool("bash"), "--noprofile", "--norc", "-c", script])
        result = run_streamed(argv, self._env(env), timeout, self._emitter(channel))
        self.emit(OutputChunk(channel, "exit", result.status_text))
        return result

    def prepare_for_verification(self) -> None:
        """End every process of the agent's turn, daemons included, before the verifier starts.

        They are all in the sandbox's pid namespace (or one below it): each is stopped, then
        killed, until none is left. A process that survives that is an episode the engine cannot
        verify honestly, and the caller is told so.
        """
        if self._session is not None:
            self._session.kill()
        if self._init_pid is None or not self.alive:
            return
        survivors = end_namespace(self._init_pid)
        if survivors:
            raise AgentProcessesSurvived(f"{len(survivors)} agent process(es) could not be ended: {sorted(survivors)}")
        # Everything outside the host's read-only mounts is the agent's to write, links included.
        root = f"/proc/{self._init_pid}/root"
        found = links.leading_into_the_verifier(root, links.links_under(root, ["/"], skip=READ_ONLY_TOPS))
        if found:
            raise EnvironmentTampered(f"links lead into the verifier's files: {', '.join(found[:3])}")
        git = tamper.git_configs_that_run_programs(root)
        if git:
            raise EnvironmentTampered(f"{', '.join(git)}: git settings that run programs on the tests' clone")
        linked = tamper.home_configs_elsewhere(root)
        if linked:
            raise EnvironmentTampered(f"{', '.join(linked[:3])}: root's configuration reached through a link")

    def _exec_private(self, command: str, timeout: float, req: PrivateExec) -> tuple[ExecResult, Path | None]:
        """The verifier's view: private mount and pid namespaces with tmpfs at each upload and at
        `collect`. Built with capabilities by the host's read-only programs, with the engine's
        environment; the command itself runs with none and with only its own environment."""
        uploads, collect, masks, channel, cwd, env = req.uploads, req.collect, req.masks, req.channel, req.cwd, req.env
        run = private_view.build(
            command,
            uploads=uploads,
            collect=collect,
            masks=(*masks, *SOURCED_FROM_HOME),
            cwd=cwd or self.spec.workdir,
            size_mb=self.spec.limits.disk_mb,
            collect_fd=3,
            tools={name: host_tool(name) for name in private_view.TOOLS},
            inner_env=self._env(env),
        )
        if self._verifier_group is None:
            self._verifier_group = create_group(self.spec.limits, tag="trsi-verifier")
        view = ["--mount", "--pid", "--fork", "--mount-proc", "--propagation", "private"]
        argv = self._wrap(
            [*self._enter(), host_tool("unshare"), *view, host_tool("sh"), "-c", run.script], group=self._verifier_group
        )
        self.emit(OutputChunk(channel, "command", command))
        read_fd, write_fd = os.pipe()
        # Past the limit the run is ended: a sparse 1 TiB file would stream until the timeout.
        overflowed = threading.Event()
        collected = BoundedBytes(VERIFIER_RESULTS_LIMIT, "the verifier's results", on_overflow=overflowed.set)
        reader = PipeReader(os.fdopen(read_fd, "rb", buffering=0), collected.extend, "collect-reader")
        try:
            # The child must see the pipe as fd 3: bash dups it there (dash only handles fds 0-9).
            argv = ["/bin/bash", "-c", f'exec 3>&{write_fd} {write_fd}>&-; exec "$@"', "trsi-fd3", *argv]
            # The privileged script gets the engine's environment only; the task's reaches the
            # command through the script (inner_env).
            result = run_streamed(
                argv,
                {"PATH": BASE_PATH, "LANG": "C.UTF-8"},
                timeout,
                self._emitter(channel),
                stdin_data=run.uploads_tar,
                pass_fds=(write_fd,),
                abort=overflowed,
            )
        finally:
            os.close(write_fd)
        if not reader.join(timeout=10):
            # Something still holds the pipe: what arrived may be cut anywhere, so none of it counts.
            reader.stop()
            reader.join(timeout=1)
            raise SandboxError("the verifier's results did not arrive whole: their pipe stayed open")
        self.emit(OutputChunk(channel, "exit", result.status_text))
        return private_view.finish(result, collected.check(), run)

    # -- files -----------------------------------------------------------------------------
    def upload(self, src: Path, dest: str) -> None:
        script = 'mkdir -p "$1" && tar -x --no-same-owner -C "$1"'
        with packed_upload(src, dest) as (data, target_dir):
            proc = subprocess.run(
                self._nsenter([host_tool("sh"), "-c", script, "upload", target_dir]),
                stdin=data,
                capture_output=True,
                env=self._env(),
                timeout=120,
            )
        if proc.returncode != 0:
            raise SandboxError(f"upload to {dest} failed: {proc.stderr.decode(errors='replace').strip()}")

    def download(self, src: str, dest: Path) -> None:
        parent, name = os.path.split(src.rstrip("/")) or ("/", src)
        data = BoundedBytes(transfer_limit(self.spec.limits), f"the download of {src}")
        argv = self._nsenter([host_tool("sh"), "-c", 'tar -c -C "$1" -- "$2"', "download", parent or "/", name])
        archive = read_tar_bounded(argv, self._env(), data, f"download of {src}")
        dest = Path(dest)
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r") as tar:
            tar.extractall(dest, filter="data")
