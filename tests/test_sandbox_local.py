"""The local bubblewrap backend, exercised for real."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from sandboxes import Limits, OutputChunk, SandboxError, SandboxSpec, SandboxUnavailable, create_sandbox
from sandboxes.procs import descendants
from sandboxes.shell import PENDING_CAP, PipeShell


@pytest.fixture
def sandbox():
    sb = create_sandbox("local", SandboxSpec("test", Limits(memory_mb=256, pids=64, disk_mb=64)))
    sb.start()
    yield sb
    sb.stop()


def test_session_keeps_cwd_and_environment(sandbox):
    assert sandbox.run("mkdir -p /tmp/w && cd /tmp/w && export GREETING=hi", 5).exit_code == 0
    r = sandbox.run('pwd; echo "$GREETING"', 5)
    assert r.output == "/tmp/w\nhi\n"
    assert r.exit_code == 0


def test_exit_codes_and_output_without_trailing_newline(sandbox):
    r = sandbox.run("printf partial; false", 5)
    assert r.output == "partial"
    assert r.exit_code == 1


def test_output_streams_before_the_command_ends(sandbox):
    seen: list[tuple[float, OutputChunk]] = []
    sandbox.subscribe(lambda c: seen.append((time.monotonic(), c)))
    r = sandbox.run("echo first; sleep 0.6; echo second", 5)
    finished = time.monotonic()
    first = next(t for t, c in seen if c.kind == "output" and "first" in c.text)
    assert finished - first > 0.4, "the first line must reach subscribers while the command still runs"
    assert [c.kind for _, c in seen][0] == "command"
    assert r.output == "first\nsecond\n"


def test_timeout_kills_the_command_but_keeps_the_shell(sandbox):
    sandbox.run("cd /tmp && export KEEP=1", 5)
    t = time.monotonic()
    r = sandbox.run("sleep 30", 1)
    assert r.timed_out and r.exit_code is None
    assert time.monotonic() - t < 5
    after = sandbox.run('pwd; echo "$KEEP"', 5)
    assert after.output == "/tmp\n1\n"


def test_syntax_error_does_not_hang(sandbox):
    r = sandbox.run("echo 'unterminated", 5)
    assert not r.timed_out
    assert r.exit_code == 2
    assert sandbox.run("echo ok", 5).output == "ok\n"


def test_exit_starts_a_fresh_shell(sandbox):
    r = sandbox.run("exit 3", 5)
    assert r.shell_restarted and r.exit_code == 3
    assert sandbox.run("pwd", 5).output == "/app\n"


def test_commands_cannot_read_the_control_stream(sandbox):
    r = sandbox.run("cat; echo done", 5)
    assert r.output == "done\n"


def test_exec_is_a_clean_shell(sandbox):
    sandbox.run("export SECRET=1; cd /tmp; f() { echo hijacked; }", 5)
    r = sandbox.exec('echo "[$SECRET]"; pwd; type f 2>&1 | head -1', 5)
    assert r.output.splitlines()[:2] == ["[]", "/app"]
    assert "hijacked" not in r.output


def test_upload_and_download_round_trip(sandbox, tmp_path: Path):
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "a.txt").write_text("A")
    (src / "sub" / "b.sh").write_text("echo B")
    (src / "sub" / "b.sh").chmod(0o755)
    sandbox.upload(src, "/opt/data")
    assert sandbox.run("cat /opt/data/a.txt; /opt/data/sub/b.sh", 5).output == "AB\n"
    sandbox.run("echo made-inside > /opt/data/c.txt", 5)
    out = tmp_path / "out"
    sandbox.download("/opt/data", out)
    assert (out / "data" / "c.txt").read_text() == "made-inside\n"
    assert (out / "data" / "sub" / "b.sh").read_text() == "echo B"


def test_host_tree_and_network_are_invisible(sandbox):
    here = Path(__file__).resolve()
    r = sandbox.run(f"test -e {here} && echo visible || echo hidden; ls /", 5)
    assert r.output.startswith("hidden")
    assert "work" not in r.output.split()
    # Only the loopback interface exists in the sandbox's network namespace.
    net = sandbox.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '", 5).output.split()
    assert net == ["lo"]


def test_host_userland_is_read_only(sandbox):
    r = sandbox.run("touch /usr/bin/evil 2>&1; echo rc=$?", 5)
    assert "rc=1" in r.output


def test_memory_limit_kills_the_hog(sandbox):
    r = sandbox.run("python3 -c 'x = bytearray(600 * 1024 * 1024)'; echo rc=$?", 20)
    assert "rc=137" in r.output
    assert sandbox.run("echo alive", 5).output == "alive\n"


def test_process_limit_stops_runaway_forks(sandbox):
    r = sandbox.run("for i in $(seq 200); do sleep 5 & done 2>&1 | tail -1; jobs -p | wc -l", 20)
    assert "fork" in r.output or "Resource temporarily unavailable" in r.output
    sandbox.run("kill $(jobs -p) 2>/dev/null; wait", 10)


def test_disk_is_capped(sandbox):
    r = sandbox.run("head -c 200M /dev/zero > /app/big; echo rc=$?; du -m /app/big | cut -f1", 20)
    assert "No space left" in r.output and "rc=1" in r.output
    assert int(r.output.split()[-1]) <= 64


def test_stop_kills_everything(tmp_path: Path):
    sb = create_sandbox("local", SandboxSpec("stop"))
    sb.start()
    sb.run("sleep 1000 & sleep 1000 & sleep 0.3", 5)  # let both background sleeps exec
    # The real process tree: bwrap's init and what the session shell started (via nsenter).
    inside = descendants(sb._bwrap.pid) + descendants(sb._session.proc.pid)  # noqa: SLF001
    assert len([p for p in inside if "sleep 1000" in _cmdline(p)]) == 2
    sb.stop()
    time.sleep(0.2)
    alive = [p for p in inside if Path(f"/proc/{p}").exists()]
    assert alive == []
    assert not sb.alive


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_missing_bubblewrap_says_how_to_install(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    sb = create_sandbox("local", SandboxSpec("nobwrap"))
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        sb.start()


def test_limits_are_reported_honestly(sandbox):
    enforced = sandbox.limits_enforced
    assert "network" in enforced and "disk(tmpfs)" in enforced
    if os.geteuid() == 0:
        assert {"memory", "pids"} <= set(enforced)


def test_a_killed_shell_whose_output_pipe_lives_on_never_reads_another_pipe(tmp_path: Path):
    """A process that escaped a shell keeps its output pipe open after the shell is killed.

    The shell's reader used to be left blocked on that pipe's descriptor number while the kill
    closed it; the next pipe opened got the same number and the dead shell's reader swallowed
    its data (in CI: the next sandbox's start-up handshake, so the sandbox never started).
    """
    marker = f"{tmp_path}/escaped"
    # `( ... & )` re-parents the writer away from the shell, so killing the shell's tree misses it.
    escaped = f"(sleep 0.5; echo late; exec -a {marker} sleep 30) &"
    shell = PipeShell(
        ["/bin/sh", "-c", f"({escaped}); exec cat"], {"PATH": "/usr/bin:/bin"}, lambda _text: None, lambda _shell: None
    )
    try:
        time.sleep(0.2)
        shell.kill()
        # The lowest free numbers are reused first: the killed shell's among them.
        pipes = [os.pipe() for _ in range(20)]
        time.sleep(1.0)  # "late" arrives on the old pipe; a stale reader would then read a new one
        for _, write_end in pipes:
            os.write(write_end, b"ready")
            os.close(write_end)
        for read_end, _ in pipes:
            with os.fdopen(read_end, "rb") as got:
                assert got.read() == b"ready"
    finally:
        subprocess.run(["pkill", "-f", marker], check=False)


def test_a_sandbox_stopped_before_it_starts_never_starts():
    """A run cancelled just before an episode's sandbox starts: nothing may be left running."""
    sb = create_sandbox("local", SandboxSpec("cancelled"))
    sb.stop()
    with pytest.raises(SandboxError, match="stopped before it started"):
        sb.start()
    assert sb._bwrap is None  # noqa: SLF001


def test_a_stop_that_comes_while_the_sandbox_starts_tears_down_what_it_made(monkeypatch):
    sb = create_sandbox("local", SandboxSpec("cancelled-midway"))
    made = type(sb)._new_session  # noqa: SLF001

    def stop_from_elsewhere(self):
        self.stop()  # as a cancelling thread would, between the namespace and the session
        return made(self)

    monkeypatch.setattr(type(sb), "_new_session", stop_from_elsewhere)
    with pytest.raises(SandboxError):  # "not running" or "stopped while it started": start fails
        sb.start()
    init = sb._init_pid  # noqa: SLF001
    assert init is not None and sb._bwrap.wait(timeout=5) is not None  # noqa: SLF001
    assert not Path(f"/proc/{init}").exists() and not sb.alive
    assert sb._session is None or not sb._session.alive  # noqa: SLF001


def test_output_of_a_detached_writer_between_commands_is_held_to_a_cap(tmp_path: Path):
    """A process the agent detached writes without end while the model thinks: the engine keeps
    at most PENDING_CAP of it (the writer then blocks), and the next command still completes."""
    marker = f"{tmp_path}/flood"
    shell = _bash()
    try:
        assert shell.run(f"(setsid bash -c 'exec -a {marker} yes' &)", 5).exit_code == 0
        time.sleep(1.5)
        assert len(shell._pending) <= PENDING_CAP + 65536  # noqa: SLF001
        result = shell.run("echo next", 10)  # its output interleaves with the flood's, capped
        assert not result.timed_out and result.exit_code == 0
    finally:
        subprocess.run(["pkill", "-f", marker], check=False)
        shell.kill()


def test_a_command_sent_to_a_killed_shell_reports_a_restart_instead_of_raising():
    shell = _bash()
    shell.kill()  # a cancelled run, from another thread
    result = shell.run("echo hi", 5)
    assert result.shell_restarted and result.exit_code is None


def _bash() -> PipeShell:
    """A session shell on the host, for what the shell itself does with its pipes."""
    quiet = lambda _text: None  # noqa: E731
    return PipeShell(["/bin/bash", "--noprofile", "--norc"], {"PATH": "/usr/bin:/bin"}, quiet, lambda _shell: None)
