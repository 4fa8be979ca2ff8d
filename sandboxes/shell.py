"""A persistent bash session over pipes, plus one-shot streamed commands.

Protocol: each command is sent as `eval '<quoted command>' </dev/null` followed by a printf of
a random per-command end marker carrying `$?`. `eval` keeps cd/export in the session; a
syntax error fails immediately instead of leaving bash waiting for more input; `</dev/null`
stops commands from swallowing the control stream. The marker nonce is fresh per command, so
output cannot fake the end of a command it has not seen.
"""

from __future__ import annotations

import codecs
import re
import secrets
import subprocess
import threading
import time
from typing import Callable, Sequence

from sandboxes.base import BoundedBytes, ExecResult, SandboxError
from sandboxes.pipes import PipeReader
from sandboxes.procs import descendants, kill_pids

Emit = Callable[[str], None]

CAPTURE_HEAD = 512 * 1024
CAPTURE_TAIL = 512 * 1024
STREAM_CAP = 4 * 1024 * 1024
# Session output buffered while no command reads it; past this, its writer waits (PipeShell).
PENDING_CAP = 1024 * 1024
# After a timeout, how long the shell gets to report back once its children were killed.
INTERRUPT_GRACE_S = 3.0


def shell_quote(text: str) -> str:
    return "'" + text.replace("\x00", "").replace("'", "'\\''") + "'"


def real_dir_function(rm: str, mkdir: str) -> str:
    """A POSIX sh function `real_dir PATH` that makes every component of PATH a real directory:
    a link or a file an agent left on the way (at /logs, say) is removed, never followed. `rm`
    and `mkdir` are the (quoted) programs to call, so each backend names its trusted ones."""
    return (
        'real_dir() { (p=; IFS=/; set -f; for c in $1; do [ -n "$c" ] || continue; p="$p/$c"; '
        f'if [ -L "$p" ] || {{ [ -e "$p" ] && [ ! -d "$p" ]; }}; then {rm} -rf -- "$p" || exit 1; fi; '
        f'[ -d "$p" ] || {mkdir} -- "$p" || exit 1; done) }}'
    )


class _Capture:
    """Keeps the head and tail of a command's output and streams it (up to a cap)."""

    def __init__(self, emit: Emit) -> None:
        self._emit = emit
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0
        self.streamed = 0
        self._stream_notice = False

    def add(self, data: bytes) -> None:
        if not data:
            return
        if len(self.head) < CAPTURE_HEAD:
            room = CAPTURE_HEAD - len(self.head)
            self.head += data[:room]
            data_rest = data[room:]
        else:
            data_rest = data
        if data_rest:
            self.tail += data_rest
            if len(self.tail) > CAPTURE_TAIL:
                cut = len(self.tail) - CAPTURE_TAIL
                self.dropped += cut
                del self.tail[:cut]
        if self.streamed < STREAM_CAP:
            part = data[: STREAM_CAP - self.streamed]
            self.streamed += len(part)
            text = self._decoder.decode(part)
            if text:
                self._emit(text)
        elif not self._stream_notice:
            self._stream_notice = True
            self._emit("\n[trsi: output stream capped; the rest is kept only in the episode log]\n")

    @property
    def truncated(self) -> bool:
        return self.dropped > 0

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        if not self.tail:
            return head
        tail = self.tail.decode("utf-8", errors="replace")
        if self.dropped:
            return f"{head}\n[... {self.dropped} bytes truncated ...]\n{tail}"
        return head + tail


def _marker_holdback(window: bytearray, prefix: bytes) -> int:
    """How many trailing bytes might be the start of the end marker (and must wait)."""
    at = window.find(prefix)
    if at >= 0:
        return len(window) - at
    for n in range(min(len(prefix) - 1, len(window)), 0, -1):
        if window.endswith(prefix[:n]):
            return n
    return 0


class PipeShell:
    """One bash process speaking the marker protocol. Not thread-safe: one command at a time."""

    def __init__(
        self, argv: Sequence[str], env: dict[str, str], emit: Emit, interrupt: Callable[["PipeShell"], None]
    ) -> None:
        self._emit = emit
        self._interrupt = interrupt
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            bufsize=0,
            start_new_session=True,
        )
        self._cond = threading.Condition()
        self._pending = bytearray()
        self._eof = False
        self._closed = False
        # kill() may come from another thread (a cancelled run) while run() writes a command.
        self._stdin_lock = threading.Lock()
        assert self.proc.stdout is not None
        self._reader = PipeReader(self.proc.stdout, self._received, "pipeshell-reader", on_end=self._ended)

    def _received(self, data: bytes) -> None:
        # Between commands nobody drains the buffer, and a process the agent detached (setsid)
        # may write without end: past the cap the reader waits, so the writer blocks on a full
        # pipe instead of the engine's memory filling up. run() drains and wakes it.
        with self._cond:
            while len(self._pending) >= PENDING_CAP and not self._closed:
                self._cond.wait()
            self._pending += data
            self._cond.notify_all()

    def _ended(self) -> None:
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None and not self._eof

    def rebind(self, emit: Emit, interrupt: Callable[["PipeShell"], None]) -> None:
        """Send output to a new owner (a warm-pool shell handed to a sandbox)."""
        self._emit = emit
        self._interrupt = interrupt

    def run(self, command: str, timeout: float) -> ExecResult:
        start = time.monotonic()
        nonce = secrets.token_hex(8)
        marker = re.compile(rb"\n__TRSI_" + nonce.encode() + rb"_(\d+)__\n")
        marker_prefix = b"\n__TRSI_" + nonce.encode() + b"_"
        payload = (
            f"eval {shell_quote(command)} </dev/null\nbuiltin printf '\\n__TRSI_{nonce}_%d__\\n' \"$?\"\n"
        ).encode()
        capture = _Capture(self._emit)
        try:
            with self._stdin_lock:
                if self._closed:
                    raise BrokenPipeError("the shell was killed")
                assert self.proc.stdin is not None
                self.proc.stdin.write(payload)
                self.proc.stdin.flush()
        except OSError:
            return ExecResult("", None, False, time.monotonic() - start, shell_restarted=True)

        window = bytearray()
        deadline = start + timeout
        interrupted = False
        while True:
            with self._cond:
                while not self._pending and not self._eof and time.monotonic() < deadline:
                    self._cond.wait(timeout=max(0.0, deadline - time.monotonic()))
                data = bytes(self._pending)
                self._pending.clear()
                eof = self._eof
                self._cond.notify_all()  # a reader held back at the cap goes on
            if data:
                window += data
                found = marker.search(window)
                if found:
                    capture.add(bytes(window[: found.start()]))
                    rest = window[found.end() :]
                    if rest:  # output from background jobs after the marker: keep it for next time
                        with self._cond:
                            self._pending[:0] = rest
                    return ExecResult(
                        capture.text(),
                        None if interrupted else int(found.group(1)),
                        interrupted,
                        time.monotonic() - start,
                        truncated=capture.truncated,
                    )
                keep = _marker_holdback(window, marker_prefix)
                capture.add(bytes(window[: len(window) - keep]))
                del window[: len(window) - keep]
            if eof:
                capture.add(bytes(window))
                code = self.proc.wait()
                return ExecResult(
                    capture.text(),
                    code,
                    interrupted,
                    time.monotonic() - start,
                    truncated=capture.truncated,
                    shell_restarted=True,
                )
            if time.monotonic() >= deadline:
                if not interrupted:
                    interrupted = True
                    self._interrupt(self)
                    deadline = time.monotonic() + INTERRUPT_GRACE_S
                else:
                    # The shell itself is stuck (e.g. it redirected its own stdout): give up on it.
                    self.kill()
                    capture.add(bytes(window))
                    return ExecResult(
                        capture.text(),
                        None,
                        True,
                        time.monotonic() - start,
                        truncated=capture.truncated,
                        shell_restarted=True,
                    )

    def kill(self) -> None:
        # The process dies first, so that a write blocked on its full stdin fails and lets go.
        terminate(self.proc)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._reader.stop()
        with self._stdin_lock:
            try:
                if self.proc.stdin:
                    self.proc.stdin.close()
            except OSError:
                pass  # a dead shell's stdin may fail to flush; it is being thrown away


def terminate(proc: subprocess.Popen) -> None:
    """Kill a process tree children first, so the direct child reaps them before it dies.

    Order matters with nsenter: a child orphaned inside a pid namespace is re-parented to the
    host's init, which on some machines never reaps it; the zombie then keeps the namespace's
    init from exiting.
    """
    kids = descendants(proc.pid)
    kill_pids(list(reversed(kids)))
    if kids:
        try:
            proc.wait(timeout=2)  # it reaps its children and exits by itself
            return
        except subprocess.TimeoutExpired:
            pass
    # No local children (a `docker exec` client), or it did not exit: kill it outright.
    proc.kill()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def run_streamed(
    argv: Sequence[str],
    env: dict[str, str],
    timeout: float,
    emit: Emit,
    on_timeout: Callable[[subprocess.Popen], None] = terminate,
    stdin_data: bytes | None = None,
    pass_fds: Sequence[int] = (),
    stdout_sink: Callable[[bytes], None] | None = None,
    abort: threading.Event | None = None,
) -> ExecResult:
    """Run a one-shot command to completion, streaming its merged output.

    With `stdout_sink`, stdout is raw data for the sink and only stderr is the command's output.
    Setting `abort` ends the command as a timeout would (exit code None, not timed out).
    """
    start = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if stdout_sink else subprocess.STDOUT,
        env=env,
        bufsize=0,
        start_new_session=True,
        pass_fds=tuple(pass_fds),
    )
    if stdin_data is not None:

        def feed() -> None:
            try:
                proc.stdin.write(stdin_data)  # type: ignore[union-attr]
            except (BrokenPipeError, OSError):
                pass
            finally:
                try:
                    proc.stdin.close()  # type: ignore[union-attr]
                except OSError:
                    pass

        threading.Thread(target=feed, name="exec-stdin", daemon=True).start()
    capture = _Capture(emit)
    assert proc.stdout is not None
    text_stream = proc.stderr if stdout_sink else proc.stdout

    readers = [PipeReader(text_stream, capture.add, "exec-reader")]
    if stdout_sink:
        readers.append(PipeReader(proc.stdout, stdout_sink, "exec-data"))
    code: int | None = None
    deadline = start + timeout
    while True:
        try:
            code = proc.wait(timeout=0.05 if abort is not None else max(0.0, deadline - time.monotonic()))
            timed_out = False
            break
        except subprocess.TimeoutExpired:
            timed_out = time.monotonic() >= deadline
            if timed_out or (abort is not None and abort.is_set()):
                on_timeout(proc)
                break
    # A background process that inherited the pipe may keep it open: don't wait for it forever.
    for reader in readers:
        if not reader.join(timeout=2.0 if reader is readers[0] else 30.0):
            reader.stop()
            reader.join(timeout=1.0)  # it may be handing a last chunk to its sink
    return ExecResult(capture.text(), code, timed_out, time.monotonic() - start, truncated=capture.truncated)


def read_tar_bounded(
    argv: list[str], env: dict[str, str], data: BoundedBytes, what: str, timeout: float = 120
) -> bytes:
    """The stdout of `argv` (a `tar -c` in a sandbox), at most `data.limit` bytes of it: the
    command is killed as soon as it sends more, or when `timeout` passes."""
    errors = bytearray()
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as proc:
        readers = [
            PipeReader(proc.stdout, data.extend, "tar-reader"),  # type: ignore[arg-type]
            PipeReader(proc.stderr, errors.extend, "tar-stderr"),  # type: ignore[arg-type]
        ]
        deadline = time.monotonic() + timeout
        while proc.poll() is None and not data.overflow and time.monotonic() < deadline:
            time.sleep(0.02)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for reader in readers:
            reader.join(timeout=10)
    if data.overflow:
        data.check()  # raises, saying how much was too much
    if proc.returncode != 0:
        message = errors.decode(errors="replace").strip()[-300:] or f"exit {proc.returncode}"
        raise SandboxError(f"{what} failed: {message}")
    return data.check()
