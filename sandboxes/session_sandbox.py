"""A sandbox whose agent session is a PipeShell: the run-and-recover logic both backends share.

When the agent's shell exits, a new one replaces it. When none can start in a sandbox that is
still there (the agent removed or locked the working directory, or the whole filesystem), or the
agent got the sandbox ended (its memory or disk use), that is the agent's doing: its session is lost, each
further command is answered so, and the episode goes on to be verified (scored), never dropped
as an infrastructure error. A sandbox that dies any other way is the machine's failure."""

from __future__ import annotations

import threading
from abc import abstractmethod

from sandboxes.base import ExecResult, OutputChunk, Sandbox, SandboxError, SandboxSpec
from sandboxes.shell import PipeShell


class SessionSandbox(Sandbox):
    _session: PipeShell | None = None

    def __init__(self, spec: SandboxSpec) -> None:
        super().__init__(spec)
        self._lock = threading.Lock()
        self._stopped = False
        self._starting = False
        self._session_lost = ""  # why the agent has no shell any more

    # -- lifecycle -------------------------------------------------------------------------
    # A run cancelled just before an episode's sandbox starts stops it first, or while start()
    # is half-way (from another thread): what start() made must still be torn down, and once
    # only, so stop() leaves that to start() while it runs, and start() refuses a stopped sandbox.
    def start(self) -> None:
        with self._lock:
            if self._stopped:
                raise SandboxError("the sandbox was stopped before it started")
            self._starting = True
        try:
            self._start()
        except BaseException:
            self._end_start(failed=True)
            raise
        if self._end_start(failed=False):
            raise SandboxError("the sandbox was stopped while it started")

    def _end_start(self, failed: bool) -> bool:
        """Leave start(); True (after tearing down) when it failed or a stop came meanwhile."""
        with self._lock:
            self._starting = False
            stop = self._stopped or failed
            self._stopped = stop
        if stop:
            self._teardown()
        return stop

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            if self._starting:
                return  # start() tears down what it made once it is done
        self._teardown()

    @abstractmethod
    def _start(self) -> None:
        """Create the sandbox and its session shell (stop() may be called from another thread)."""

    @abstractmethod
    def _teardown(self) -> None:
        """Kill everything in the sandbox and release what _start() made (any part of it). Runs once."""

    @abstractmethod
    def _new_session(self, cwd: str | None = None) -> PipeShell:
        """Start a fresh session shell in `cwd` (default: the workdir)."""

    def run(self, command: str, timeout: float) -> ExecResult:
        if self._session is None:
            if not self._session_lost:
                raise SandboxError("sandbox is not started")
            self.emit(OutputChunk("agent", "command", command))
            result = ExecResult(f"[trsi: not run: {self._session_lost}]\n", None, False, 0.0)
            self.emit(OutputChunk("agent", "exit", result.status_text))
            return result
        self.emit(OutputChunk("agent", "command", command))
        result = self._session.run(command, timeout)
        if result.shell_restarted or not self._session.alive:
            # The shell exited (`exit`, a crash): replace it, unless the whole sandbox is gone.
            self._session.kill()
            self._session = None
            result = ExecResult(
                result.output + f"\n[trsi: {self._restart_session()}]\n",
                result.exit_code,
                result.timed_out,
                result.duration_s,
                result.truncated,
                True,
            )
        self.emit(OutputChunk("agent", "exit", result.status_text))
        return result

    def _restart_session(self) -> str:
        """Start a new session shell after the last one exited; say what happened."""
        error = ""
        # The workdir first; the root when the agent made the workdir unusable.
        for cwd in dict.fromkeys((self.workdir, "/")):
            if not self.alive:
                break
            try:
                self._session = self._new_session(cwd)
                return f"the shell exited; a new shell was started in {cwd}"
            except SandboxError as exc:
                error = str(exc)
        if self.alive:
            self._session_lost = f"the shell exited and no new shell could start ({error[-200:]})"
        elif self.ended_by_the_agent:
            self._session_lost = self.ended_by_the_agent.partition(": ")[2]
        else:
            raise SandboxError(f"{self.backend_name} sandbox died during the command")
        return self._session_lost
