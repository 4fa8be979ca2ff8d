"""A sandbox whose agent session is a PipeShell: the run-and-recover logic both backends share."""

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
    def _new_session(self) -> PipeShell:
        """Start a fresh session shell in the workdir."""

    def run(self, command: str, timeout: float) -> ExecResult:
        if self._session is None:
            raise SandboxError("sandbox is not started")
        self.emit(OutputChunk("agent", "command", command))
        result = self._session.run(command, timeout)
        if result.shell_restarted or not self._session.alive:
            # The shell exited (`exit`, a crash): replace it, unless the whole sandbox is gone.
            self._session.kill()
            if not self.alive:
                raise SandboxError(f"{self.backend_name} sandbox died during the command")
            self._session = self._new_session()
            result = ExecResult(
                result.output + f"\n[trsi: the shell exited; a new shell was started in {self.workdir}]\n",
                result.exit_code,
                result.timed_out,
                result.duration_s,
                result.truncated,
                True,
            )
        self.emit(OutputChunk("agent", "exit", result.status_text))
        return result
