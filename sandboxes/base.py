"""The sandbox contract shared by every execution backend.

A sandbox is one isolated Linux environment for one episode. It offers a persistent shell
session (the agent's), one-shot clean shells for the system (setup, verifier), file transfer,
and a stream of output chunks that subscribers (the event bus, the TUI) receive as it arrives.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable, Literal

log = logging.getLogger(__name__)

Channel = Literal["setup", "agent", "verifier", "system"]
Env = dict[str, str]  # extra environment variables for one command
ChunkKind = Literal["command", "output", "exit"]


class SandboxError(RuntimeError):
    """The sandbox failed for infrastructure reasons (not because of the agent)."""


class SandboxUnavailable(SandboxError):
    """The backend cannot run on this machine; the message says how to fix that."""


class AgentProcessesSurvived(RuntimeError):
    """A process of the agent's turn could not be ended before verification. Not an
    infrastructure error: the episode fails closed (scored 0), it is never verified."""


class EnvironmentTampered(RuntimeError):
    """The agent changed what the verifier runs on (the interpreter, the standard library, the
    test runner or a helper): the episode is scored 0, never verified."""


@dataclass(frozen=True)
class Limits:
    cpus: float = 1.0
    memory_mb: int = 2048
    pids: int = 512
    # Size cap of each writable filesystem in the sandbox (/app, /tmp, /).
    disk_mb: int = 2048
    allow_internet: bool = False


@dataclass(frozen=True)
class SandboxSpec:
    name: str
    limits: Limits = field(default_factory=Limits)
    # Extra environment for every shell (task-provided), on top of the backend's clean base.
    env: tuple[tuple[str, str], ...] = ()
    workdir: str = "/app"
    # For image-based backends (docker): the task's environment/ (with a Dockerfile), the
    # task's docker_image, and aliases for image names that cannot be pulled here.
    environment_dir: Path | None = None
    image: str | None = None
    image_aliases: tuple[tuple[str, str], ...] = ()
    # Docker: how many started containers to keep ready per image and limits (0 = none).
    warm_pool: int = 0
    # Docker: where failed task-image builds are remembered across processes (None: this process only).
    build_failures_dir: Path | None = None
    # Docker: whether a task image's build may use the network ([sandbox] allow_internet).
    build_network: bool = False


@dataclass(frozen=True)
class PrivateExec:
    """What `Sandbox.exec_private` is asked for, as the backends receive it."""

    uploads: dict[str, Path]
    collect: str
    masks: tuple[str, ...] = ()
    channel: Channel = "verifier"
    cwd: str | None = None
    env: dict[str, str] | None = None


@dataclass(frozen=True)
class OutputChunk:
    channel: Channel
    kind: ChunkKind
    text: str


@dataclass(frozen=True)
class ExecResult:
    output: str
    exit_code: int | None
    timed_out: bool
    duration_s: float
    # Output beyond the capture cap was dropped from `output` (it was still streamed up to a cap).
    truncated: bool = False
    # The shell died during the command (e.g. the agent ran `exit`); a fresh one replaces it.
    shell_restarted: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def status_text(self) -> str:
        return "timed out" if self.timed_out else f"exit {self.exit_code}"


OutputListener = Callable[[OutputChunk], None]


# Files in root's HOME that make a program a test.sh runs load or run code, or fetch something
# else: Harbor's test.sh sources ~/.local/bin/env and pipes `curl ... | sh` (a ~/.curlrc with a
# `url` of the agent's ran its script). The local verifier's view covers them, the Docker tamper
# check refuses them created or changed.
HOME_CONFIGS = (
    ".local/bin/env",
    ".cargo/env",
    ".curlrc",
    ".config/curlrc",
    ".wgetrc",
    ".npmrc",
    ".pip/pip.conf",
    ".pydistutils.cfg",
    ".config/pip",
    ".config/uv",
    # Read by a program itself at every start, through root's passwd entry rather than $HOME:
    # `.print <answer>` then `.output /dev/null` in ~/.sqliterc made every query the tests ran
    # print the expected answer (a red-team pass); `.system`, `\!`, `system()` run programs.
    ".sqliterc",
    ".config/sqlite3",
    ".psqlrc",
    ".Rprofile",
    ".gdbinit",
    ".config/gdb",
    ".irbrc",
    # jq sources ~/.jq into every program: `def length: 3;` answered the tests' `jq '... | length'`.
    ".jq",
    # Cargo's `build.rustc-wrapper` and go's `GOFLAGS=-toolexec=` run a program of the agent's
    # on every build the tests make; matplotlib imports the backend module its rc names.
    ".cargo/config",
    ".cargo/config.toml",
    ".config/go",
    ".config/matplotlib",
    ".matplotlib",
)


def upload_dir(src: Path, dest: str) -> str:
    """The sandbox directory an upload of `src` unpacks in: a directory's contents land in
    `dest`, and a file becomes `dest`."""
    return dest if Path(src).is_dir() else str(Path(dest).parent)


@contextlib.contextmanager
def packed_upload(src: Path, dest: str) -> Iterator[tuple[BinaryIO, str]]:
    """A tar of `src` in a temporary file, read from its start, and `upload_dir(src, dest)`.
    A file, not memory: a task's environment may hold up to a gigabyte."""
    import tarfile
    import tempfile

    src = Path(src)
    if not src.exists():
        raise SandboxError(f"upload source does not exist: {src}")
    with tempfile.TemporaryFile(prefix="trsi-upload-") as f:
        with tarfile.open(fileobj=f, mode="w") as tar:
            if src.is_dir():
                for child in sorted(src.iterdir()):
                    tar.add(child, arcname=child.name)
            else:
                tar.add(src, arcname=Path(dest).name)
        f.seek(0)
        yield f, upload_dir(src, dest)


class BoundedBytes:
    """Bytes read back from a sandbox, at most `limit` of them.

    A sandbox cannot hold more than its disk, but a file can claim more: a sparse one (`truncate
    -s 1T`) takes no space in the sandbox and streams its full size through `tar`, into the
    engine's memory and then the host's disk. Past the limit the rest is read and dropped (the
    sender must not block), `on_overflow` is told once (to stop the sender: a 1 TiB file would
    otherwise be read to the end), and `check` says what went wrong.
    """

    def __init__(self, limit: int, what: str, on_overflow: Callable[[], None] | None = None) -> None:
        self.data = bytearray()
        self.limit, self.what = limit, what
        self.overflow = False
        self._on_overflow = on_overflow

    def extend(self, chunk: bytes) -> None:
        if self.overflow:
            return
        if len(self.data) + len(chunk) > self.limit:
            self.overflow = True
            self.data = bytearray()
            if self._on_overflow is not None:
                self._on_overflow()
        else:
            self.data.extend(chunk)

    def check(self) -> bytes:
        if self.overflow:
            raise SandboxError(f"{self.what} came to over {self.limit // 2**20} MiB, the most that is read back")
        return bytes(self.data)


# What a verifier writes to its results directory: a reward, a report, some logs. Far more is
# not a result but an attack on the engine's memory.
VERIFIER_RESULTS_LIMIT = 64 * 2**20


def transfer_limit(limits: Limits) -> int:
    """The most bytes one transfer out of a sandbox may carry: its disk, and room for the
    archive's own headers."""
    return (limits.disk_mb + 16) * 2**20


def shell_words(words: list[str]) -> list[str]:
    return ["'" + w.replace("'", "'\\''") + "'" for w in words]


class Sandbox(ABC):
    """One isolated environment. Use as a context manager so `stop()` always runs."""

    backend_name: str = "abstract"

    def __init__(self, spec: SandboxSpec) -> None:
        self.spec = spec
        self._listeners: list[OutputListener] = []
        self._listeners_lock = threading.Lock()

    # -- streaming -------------------------------------------------------------------------
    def subscribe(self, listener: OutputListener) -> Callable[[], None]:
        with self._listeners_lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._listeners_lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def emit(self, chunk: OutputChunk) -> None:
        with self._listeners_lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(chunk)
            except Exception:  # a broken subscriber must not kill the episode
                log.exception("an output listener of sandbox %s failed", self.spec.name)

    # -- lifecycle -------------------------------------------------------------------------
    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def stop(self) -> None:
        """Kill everything in the sandbox and release its resources. Idempotent."""

    @property
    @abstractmethod
    def alive(self) -> bool: ...

    @property
    def ended_by_the_agent(self) -> str:
        """Why the sandbox is gone by the agent's doing, as `failure_mode: reason`; "" when it is
        not. Here: its own memory limit's OOM killer was at work, the agent having filled the
        memory it was given and made the sandbox's init the victim (`/proc/1/oom_score_adj`).
        The agent's doing, never the machine's, so the episode scores 0 rather than being dropped."""
        if not self.stopped and not self.alive and "oom_kill" in self.resource_events:
            return "sandbox_oom: the agent's processes filled the sandbox's memory limit and the sandbox was ended"
        return ""

    @property
    def stopped(self) -> bool:
        """Whether stop() has been called on it: the engine ending its episode (a stop request).
        A flag, unlike `alive`, which may ask the backend: an agent checks it between tokens."""
        return bool(getattr(self, "_stopped", False))

    @property
    def workdir(self) -> str:
        """Where the agent's shell starts (an image may set its own)."""
        return self.spec.workdir

    # -- commands --------------------------------------------------------------------------
    @abstractmethod
    def run(self, command: str, timeout: float) -> ExecResult:
        """Run in the persistent session shell (cwd and variables persist). Channel 'agent'."""

    @abstractmethod
    def exec(
        self, command: str, timeout: float, channel: Channel = "system", cwd: str | None = None, env: Env | None = None
    ) -> ExecResult:
        """Run in a fresh, clean shell that shares the sandbox but none of the session's state."""

    def exec_private(
        self,
        command: str,
        timeout: float,
        *,
        uploads: dict[str, Path],
        collect: str,
        masks: tuple[str, ...] = (),
        channel: Channel = "verifier",
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> tuple[ExecResult, Path | None]:
        """Run `command` as root in a clean shell that alone sees fresh directories at the
        `uploads` destinations (filled from the host) and at `collect` (empty), and does not see
        the files in `masks`; return the result and a host copy of `collect` afterwards (None if
        the command timed out). Called after `prepare_for_verification`, so no process of the
        agent's is left to watch or change any of it; whatever the command leaves running is
        ended before `collect` is read."""
        return self._exec_private(command, timeout, PrivateExec(uploads, collect, masks, channel, cwd, env))

    @abstractmethod
    def _exec_private(self, command: str, timeout: float, req: PrivateExec) -> tuple[ExecResult, Path | None]: ...

    # -- files -----------------------------------------------------------------------------
    @abstractmethod
    def upload(self, src: Path, dest: str) -> None:
        """Copy a host file or directory to `dest` (a directory's contents go into `dest`)."""

    @abstractmethod
    def download(self, src: str, dest: Path) -> None:
        """Copy a sandbox file or directory to the host path `dest`."""

    def agent_turn_starts(self) -> None:
        """Called right before the agent's turn: backends that check the verifier's environment
        for tampering take their reference here (setup.sh's changes are the task's)."""

    @abstractmethod
    def prepare_for_verification(self) -> None:
        """Called between the agent's turn and the verifier: end every process the agent's turn
        started (detached daemons included), or raise AgentProcessesSurvived; raise
        EnvironmentTampered when the agent changed what the verifier runs on."""

    @property
    def resource_events(self) -> dict[str, int]:
        """Limit hits observed so far (e.g. {'oom_kill': 1}); read before stop()."""
        return {}

    @property
    def limits_enforced(self) -> tuple[str, ...]:
        """Which limits the backend really enforces on this machine, for honest reporting."""
        return ()

    def __enter__(self) -> "Sandbox":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
