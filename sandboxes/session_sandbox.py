"""A sandbox whose agent session is a PipeShell: the run-and-recover logic both backends share."""

from __future__ import annotations

from abc import abstractmethod

from sandboxes.base import ExecResult, OutputChunk, Sandbox, SandboxError
from sandboxes.shell import PipeShell


class SessionSandbox(Sandbox):
    _session: PipeShell | None = None

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
