"""Hostile or broken agents, run as a task's "solution" under the oracle agent, on both backends.

Each one must end cleanly with the right result, and the engine must keep working.
"""

from __future__ import annotations

import os
import signal
import socket
import tempfile
import threading
import time
from pathlib import Path

import pytest

from engine.config import Config, parse_config
from engine.events import EpisodePhase
from engine.results import EpisodeResult
from engine.rollout.agents import OracleAgent
from engine.rollout.episode import run_episode
from engine.rollout.runner import EpisodeJob, EpisodeRunner
from engine.tasks import load_task
from tests.conftest import ctrf_test, write_task

PYTEST_VERIFIER = """#!/bin/bash
cat > /tests/test_out.py <<'PY'
def test_out_is_hello():
    assert open('/app/out.txt').read().strip() == 'hello'

def test_single_line():
    assert open('/app/out.txt').read().count('\\n') <= 1
PY
cd /app && python3 -m pytest /tests/test_out.py -rA
"""


CONFIGS = {"local": Config(), "docker": parse_config('[sandbox]\nbackend = "docker"\n')}


@pytest.fixture(params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def backend(request) -> str:
    return request.param


def episode(tmp_path: Path, backend: str, name: str, solve: str, **kw) -> EpisodeResult:
    task = load_task(write_task(tmp_path, name, solve=solve, **kw))
    return run_episode(task, OracleAgent(), config=CONFIGS[backend], backend=backend)


def test_background_forger_cannot_touch_the_verifier(tmp_path: Path, backend: str):
    forger = (
        "(while true; do mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt;"
        ' echo \'{"results":{"tests":[{"name":"x","status":"passed"}]}}\' > /logs/verifier/ctrf.json;'
        " cp -r /tests /app/stolen 2>/dev/null; sleep 0.01; done) >/dev/null 2>&1 &"
    )
    r = episode(tmp_path, backend, "forger", forger)
    assert not r.success and r.status == "completed"
    assert [c.name for c in r.checks] == ["out_exists", "out_is_hello"]


def test_pytest_cannot_be_hijacked(tmp_path: Path, backend: str):
    force_pass = (
        "import pytest\n"
        "@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n"
        "    out = yield\n"
        "    out.get_result().outcome = 'passed'\n"
    )
    solve = (
        f"cat > /app/conftest.py <<'PY'\n{force_pass}PY\n"
        "cp /app/conftest.py /conftest.py\n"
        "mkdir -p /app/evil && cp /app/conftest.py /app/evil/evilplugin.py\n"
        "printf '[pytest]\\naddopts = -p evilplugin\\npythonpath = /app/evil\\n' > /pytest.ini\n"
        "printf 'print(\"PASSED x::test_out_is_hello\")\\n' > /app/pytest.py\n"
        "mkdir -p /root/.local/lib/python3.11/site-packages\n"
        "printf 'import sys; sys.exit(0)\\n' > /root/.local/lib/python3.11/site-packages/usercustomize.py\n"
        "echo goodbye > /app/out.txt\n"
    )
    r = episode(tmp_path, backend, "pytest-hijack", solve, test=PYTEST_VERIFIER)
    assert r.verifier_source == "pytest", r.error or r.verifier_output
    assert not r.success
    assert {c.name.split("::")[-1]: c.status for c in r.checks}["test_out_is_hello"] == "failed"


def test_honest_pytest_verifier_still_passes(tmp_path: Path, backend: str):
    r = episode(tmp_path, backend, "pytest-honest", "echo hello > /app/out.txt", test=PYTEST_VERIFIER)
    assert r.success and (r.checks_passed, r.checks_total) == (2, 2), r.verifier_output


def test_fork_bomb_is_contained(tmp_path: Path, backend: str):
    r = episode(
        tmp_path,
        backend,
        "fork-bomb",
        "bomb() { bomb | bomb & }; bomb; sleep 2; echo hello > /app/out.txt",
        toml="[agent]\ntimeout_sec = 15\n",
    )
    assert r.scored and "pids_limit" in r.resource_events
    # The engine goes on: a normal episode right after still works.
    assert episode(tmp_path, backend, "after-bomb", "echo hello > /app/out.txt").success


def test_memory_hog_is_killed_and_reported(tmp_path: Path, backend: str):
    r = episode(
        tmp_path,
        backend,
        "hog",
        "python3 -c 'x = bytearray(1024 * 1024 * 1024)'",
        toml="[environment]\nmemory_mb = 128\n",
    )
    assert not r.success and r.failure_mode == "oom_killed" and "oom_kill" in r.resource_events


@pytest.mark.parametrize("target", ["/app/fill", "/fill", "/tmp/fill"])
def test_disk_fill_is_capped_and_verification_still_runs(tmp_path: Path, target: str, backend: str):
    name = "fill" + target.replace("/", "-")
    r = episode(
        tmp_path,
        backend,
        name,
        f"head -c 5G /dev/zero > {target}; echo hello > /app/out.txt",
        toml="[environment]\nstorage_mb = 32\nmemory_mb = 512\n",
    )
    assert r.scored, r.error
    assert r.checks_total == 2  # the verifier ran and reported, even with the disk full
    assert "disk_limit" in r.resource_events


def test_output_flood_is_capped(tmp_path: Path, backend: str):
    r = episode(tmp_path, backend, "flood", "yes 'flooding the engine with output'", toml="[agent]\ntimeout_sec = 4\n")
    assert r.status == "agent_timeout" and "output_capped" in r.resource_events
    (step,) = r.steps
    assert len(step.output) < 1_200_000  # head and tail kept, the rest dropped


def test_host_loopback_listener_and_dns_are_unreachable(tmp_path: Path, backend: str):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                accepted.append(server.accept())
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    solve = (
        f"(echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo reached > /app/net || echo blocked > /app/net;"
        " getent hosts pypi.org > /dev/null && echo resolved > /app/dns || echo failed > /app/dns"
    )
    test = ctrf_test(
        ("loopback_blocked", 'test "$(cat /app/net)" = blocked'), ("dns_fails", 'test "$(cat /app/dns)" = failed')
    )
    r = episode(tmp_path, backend, "net", solve, test=test)
    stop.set()
    t.join()
    server.close()
    assert r.success, r.checks
    assert accepted == []


def test_writes_outside_the_workspace_leave_the_host_unchanged(tmp_path: Path, backend: str):
    marker = tmp_path / "host-file"
    marker.write_text("original")
    solve = (
        f"echo changed > {marker}; touch /usr/bin/trsi-evil /etc/trsi-evil; "
        f"test -e {marker} && echo visible > /app/out.txt || echo hello > /app/out.txt"
    )
    r = episode(tmp_path, backend, "escape", solve)
    assert r.success  # the host path was not even visible
    assert marker.read_text() == "original"
    assert not Path("/usr/bin/trsi-evil").exists() and not Path("/etc/trsi-evil").exists()


@pytest.mark.parametrize("phase", ["setup", "agent"])
def test_sandbox_killed_from_outside_is_an_infra_failure(tmp_path: Path, backend: str, phase: str):
    # The victim sleeps in the phase under attack, so the kill lands there whatever the machine's speed.
    setup = "mkdir -p /app; sleep 60" if phase == "setup" else "mkdir -p /app"
    victim = load_task(
        write_task(tmp_path, "victim", setup=setup, solve="sleep 60", toml="[agent]\ntimeout_sec = 90\n")
    )
    bystander = load_task(write_task(tmp_path, "bystander", solve="sleep 1; echo hello > /app/out.txt"))
    runner = EpisodeRunner(config=CONFIGS[backend], backend=backend, store=None, bus=None)
    victim_in_phase = threading.Event()

    def watch(event) -> None:
        if isinstance(event, EpisodePhase) and event.phase == phase:
            sandbox = runner._live.get(event.episode_id)  # noqa: SLF001
            if sandbox is not None and sandbox.spec.name == "victim":
                victim_in_phase.set()

    runner.bus.subscribe(watch)

    def kill(sandbox) -> None:
        if backend == "local":  # SIGKILL the namespace's init
            os.kill(sandbox._init_pid, signal.SIGKILL)  # noqa: SLF001
        else:  # `docker kill`
            sandbox._container.kill()  # noqa: SLF001

    def assassin() -> None:
        if not victim_in_phase.wait(60):
            return
        time.sleep(1.0)  # well inside the phase's 60 s sleep
        for sandbox in list(runner._live.values()):  # noqa: SLF001
            if sandbox.spec.name == "victim":
                kill(sandbox)

    threading.Thread(target=assassin, daemon=True).start()
    _, results = runner.run(
        [EpisodeJob(victim, OracleAgent), EpisodeJob(bystander, OracleAgent)],
        kind="eval",
        agent_label="oracle",
        tasks_path="x",
        concurrency=2,
    )
    by_task = {r.task: r for r in results}
    assert victim_in_phase.is_set()
    assert by_task["victim"].status == "infra_error" and by_task["victim"].failure_mode == "sandbox_error"
    assert by_task["victim"].reward is None
    assert by_task["victim"].duration_s < 45  # ended by the kill, not by its own 60 s sleep
    assert by_task["bystander"].success


def test_tests_and_solution_are_not_there_during_the_turn(tmp_path: Path, backend: str):
    spy = (
        "ls /tests > /app/seen_tests 2>&1; ls / > /app/root_listing; "
        "cat /solution/solve.sh > /dev/null && echo hello > /app/out.txt"
    )
    test = ctrf_test(
        ("tests_hidden", 'grep -q "No such file" /app/seen_tests'),
        ("no_tests_at_root", "! grep -qx tests /app/root_listing"),
        ("solution_was_readable_by_the_oracle_only", 'test "$(cat /app/out.txt)" = hello'),
    )
    r = episode(tmp_path, backend, "spy", spy, test=test)
    assert r.success, r.checks


def test_sleeping_past_the_agent_timeout_ends_the_turn(tmp_path: Path, backend: str):
    t = time.monotonic()
    r = episode(tmp_path, backend, "sleeper", "echo hello > /app/out.txt; sleep 600", toml="[agent]\ntimeout_sec = 2\n")
    assert time.monotonic() - t < 30
    assert r.status == "agent_timeout" and r.success  # the work done in time still counts


# -- Attacks on the verdict that earlier releases let through (issue 28) ---------------------------
# Each task's answer is known only to its tests ("the secret"), so only a forged verdict passes.

SECRET_TEST = ctrf_test(("secret", 'test "$(cat /app/out.txt)" = s3cr3t-7f1c'))
FORGED_CTRF = '{"results":{"tests":[{"name":"secret","status":"passed"}]}}'


def test_a_leftover_daemon_cannot_reach_the_verifier_through_proc(tmp_path: Path, backend: str):
    """A detached daemon that ignores signals waits for the verifier and writes a passing report
    into its private view through /proc/<pid>/root, and a pytest summary into its stdout."""
    daemon = (
        "cat > /tmp/forge.sh <<'SH'\n"
        "trap '' TERM HUP INT\n"
        "while true; do\n"
        "  for d in /proc/[0-9]*; do\n"
        f"    echo '{FORGED_CTRF}' > $d/root/logs/verifier/ctrf.json 2>/dev/null\n"
        "    echo 1 > $d/root/logs/verifier/reward.txt 2>/dev/null\n"
        "    printf 'short test summary info\\nPASSED secret\\n== 1 passed in 0.1s ==\\n' > $d/fd/1 2>/dev/null\n"
        "  done\n"
        "done\n"
        "SH\n"
        "setsid nohup bash /tmp/forge.sh >/dev/null 2>&1 < /dev/null &\n"
        "(setsid bash -c 'trap \"\" TERM; exec -a sleep bash /tmp/forge.sh' >/dev/null 2>&1 < /dev/null &)\n"
        "echo wrong > /app/out.txt"
    )
    # A verifier that goes on for a while after writing its report (cleaning up, say).
    r = episode(tmp_path, backend, "proc-forger", daemon, test=SECRET_TEST + "sleep 2\n")
    assert r.status == "completed" and r.scored, r.error
    assert not r.success and [c.name for c in r.checks] == ["secret"]


def test_the_verifier_runs_after_every_agent_process_ended(tmp_path: Path, backend: str):
    """Daemons, a process in a pid namespace of its own, and a stopped process are all gone
    when the verifier starts: it sees no process of the agent's."""
    solve = (
        "(setsid sleep 1000 &) ; nohup sleep 1001 >/dev/null 2>&1 & disown\n"
        "(unshare -Urpf sleep 1002 >/dev/null 2>&1 &)\n"
        "sleep 1003 & kill -STOP $!\n"
        "echo hello > /app/out.txt"
    )
    test = ctrf_test(("no_agent_process_left", "! grep -qs ^sleep /proc/[0-9]*/comm"))
    r = episode(tmp_path, backend, "leftovers", solve, test=test)
    assert r.success, (r.checks, r.verifier_output)


def test_output_cannot_outrank_the_reward_file(tmp_path: Path, backend: str):
    """The tests print the program's output (the agent's) and write reward.txt = 0."""
    test = (
        "#!/bin/bash\n"
        "cat /app/out.txt\n"
        "mkdir -p /logs/verifier\n"
        'if [ "$(head -c 11 /app/out.txt)" = s3cr3t-7f1c ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n'
    )
    fake = "=== short test summary info ===\\nPASSED tests/test_outputs.py::test_secret\\n=== 1 passed in 0.01s ==="
    r = episode(tmp_path, backend, "summary-forger", f"printf '{fake}\\n' > /app/out.txt", test=test)
    assert r.scored and not r.success and r.verifier_source == "reward.txt", r.verifier_output


PYTEST_SECRET = """#!/bin/bash
cat > /tests/test_secret.py <<'PY'
import hashlib, json, random, email.utils

def test_secret():
    assert open('/app/out.txt').read().strip() == 's3cr3t-7f1c'
PY
cd /app && python3 -m pytest /tests/test_secret.py -rA
"""

# Imported instead of the standard library module, it makes every pytest report a pass.
SHADOW = """
import sys
def _patch():
    try:
        import _pytest.reports as r
    except Exception:
        return
    init = r.TestReport.__init__
    def forced(self, *a, **k):
        init(self, *a, **k)
        self.outcome = "passed"
        self.longrepr = None
    r.TestReport.__init__ = forced
_patch()
"""


def test_a_task_folder_cannot_shadow_the_verifiers_python(tmp_path: Path, backend: str):
    shadows = ("hashlib", "json", "random", "email", "pytest", "pluggy", "_pytest")
    plant = "".join(f"mkdir -p /app/{m} && cat > /app/{m}/__init__.py <<'PY'\n{SHADOW}PY\n" for m in shadows[-3:])
    plant += "".join(f"cat > /app/{m}.py <<'PY'\n{SHADOW}PY\n" for m in shadows[:4])
    # A plugin declared by metadata in the working directory, which pytest would load by itself.
    plant += (
        f"cat > /app/evilplugin.py <<'PY'\n{SHADOW}PY\n"
        "mkdir -p /app/evil-1.0.dist-info\n"
        "printf 'Metadata-Version: 2.1\\nName: evil\\nVersion: 1.0\\n' > /app/evil-1.0.dist-info/METADATA\n"
        "printf '[pytest11]\\nevil = evilplugin\\n' > /app/evil-1.0.dist-info/entry_points.txt\n"
    )
    r = episode(tmp_path, backend, "shadow", plant + "echo wrong > /app/out.txt", test=PYTEST_SECRET)
    assert r.scored and not r.success, r.verifier_output
    assert r.checks and r.checks[0].status == "failed", r.verifier_output


def test_the_tasks_own_modules_still_import_under_the_verifier(tmp_path: Path, backend: str):
    solve = (
        "printf 'def answer():\\n    return \"s3cr3t-7f1c\"\\n' > /app/mylib.py\n"
        "printf 'import mylib\\nprint(mylib.answer())\\n' > /app/main.py\n"
        "echo s3cr3t-7f1c > /app/out.txt"
    )
    test = PYTEST_SECRET.replace(
        "def test_secret():",
        "def test_main_imports_its_module():\n"
        "    import subprocess\n"
        "    out = subprocess.run(['python3', '/app/main.py'], capture_output=True, text=True).stdout\n"
        "    assert out.strip() == 's3cr3t-7f1c'\n"
        "    import mylib\n"
        "    assert mylib.answer() == 's3cr3t-7f1c'\n\n"
        "def test_secret():",
    )
    r = episode(tmp_path, backend, "own-modules", solve, test=test)
    assert r.success and r.checks_total == 2, r.verifier_output


def test_breaking_the_verifier_is_a_failure_not_a_drop(tmp_path: Path, backend: str):
    """The verifier runs the agent's program, which the agent armed with a fork bomb and a kill
    of everything in sight: a zero with its reason, never an unscored episode."""
    solve = (
        "cat > /app/check.sh <<'SH'\n"
        "kill -9 -1 2>/dev/null\n"
        "bomb() { bomb | bomb & }; bomb\n"
        "SH\n"
        "echo wrong > /app/out.txt"
    )
    test = "#!/bin/bash\nbash /app/check.sh\n" + SECRET_TEST.split("\n", 1)[1]
    r = episode(tmp_path, backend, "verifier-breaker", solve, test=test, toml="[verifier]\ntimeout_sec = 10\n")
    assert r.scored and r.reward == 0.0 and not r.success, (r.status, r.error)


def test_replaced_system_programs_never_run_for_the_engine(tmp_path: Path, backend: str):
    """A root agent wraps bash, sh, timeout, setpriv and unshare wherever it can write: each
    wrapper runs the real program, then forges a passing report. Whatever runs between the
    turn and the verdict is never one of them (or the episode is refused as tampered)."""
    forge = (
        f"mkdir -p /logs/verifier; echo '{FORGED_CTRF}' > /logs/verifier/ctrf.json; echo 1 > /logs/verifier/reward.txt"
    )
    solve = (
        # The local sandbox's /bin and /sbin are links on its writable root; Docker's /usr is writable.
        "for d in /bin /sbin /usr/bin /usr/sbin /usr/local/bin; do\n"
        "  if [ -L $d ]; then rm -f $d && mkdir -p $d || continue; fi\n"
        "  for p in bash sh timeout setpriv unshare mount tar env; do\n"
        "    real=/usr/bin/$p; [ -e $d/$p ] && mv $d/$p $d/$p.real 2>/dev/null && real=$d/$p.real\n"
        f'    printf \'#!/usr/bin/dash\\n"%s" "$@"; rc=$?; {forge}; exit $rc\\n\' "$real" > $d/$p 2>/dev/null'
        " && chmod +x $d/$p\n"
        "  done\n"
        "done\n"
        "true"
    )
    r = episode(tmp_path, backend, "replacer", solve, test=SECRET_TEST)
    assert not r.success, (r.status, r.checks, r.verifier_output)
    if backend == "docker":  # /usr is the agent's to write there: refused before verifying
        assert r.scored and r.failure_mode == "tampered" and "bin/bash (" in r.error, r.error


CAP_SYS_ADMIN = 21
RECORD_CAPS = (
    "for d in /proc/[0-9]*; do "
    "echo \"$(readlink $d/exe) $(grep -E '^Cap(Eff|Prm|Bnd|Amb)' $d/status | tr -s '\\t\\n' '  ')\"; done"
)


def _caps_with_sys_admin(listing: str, fields: tuple[str, ...]) -> list[str]:
    bad = []
    for line in listing.splitlines():
        words = line.split()
        caps = dict(zip(words[1::2], words[2::2]))
        if any(int(caps.get(f + ":", "0"), 16) >> CAP_SYS_ADMIN & 1 for f in fields):
            bad.append(line)
    return bad


def test_no_process_an_agent_could_control_holds_sys_admin(tmp_path: Path, backend: str):
    """Every process in the sandbox, during the agent's turn and during the verifier's (pid 1,
    the engine's helpers, the verifier itself), read from /proc/<pid>/status."""
    # /proc/1/exe is closed to the agent (pid 1 cannot be traced); its command line is not.
    solve = (
        f"({RECORD_CAPS}) > /app/caps_during_turn; "
        "tr '\\0' ' ' < /proc/1/cmdline | cut -d' ' -f1 | head -n 1 > /app/init_exe; echo hello > /app/out.txt"
    )
    test = ctrf_test(("out_is_hello", 'test "$(cat /app/out.txt)" = hello')).replace(
        "mkdir -p /logs/verifier", f"mkdir -p /logs/verifier; ({RECORD_CAPS}) > /logs/verifier/caps_during_verifier"
    )
    # The records come back with the verifier's output: print them there.
    test += (
        "cat /app/caps_during_turn; echo ===; cat /logs/verifier/caps_during_verifier; echo ===; cat /app/init_exe\n"
    )
    r = episode(tmp_path, backend, "caps", solve, test=test)
    assert r.success, r.verifier_output
    during_turn, during_verifier, init_exe = r.verifier_output.split("===")
    assert during_turn.strip() and during_verifier.strip()
    # Docker: not even in a bounding set (no setuid binary can get it back); local: the sandbox's
    # root is an unprivileged uid, and no process holds the capability in its user namespace.
    fields = ("CapEff", "CapPrm", "CapAmb", "CapBnd") if backend == "docker" else ("CapEff", "CapPrm", "CapAmb")
    assert _caps_with_sys_admin(during_turn, fields) == []
    assert _caps_with_sys_admin(during_verifier, fields) == []
    # pid 1 is the engine's own program, from a place the agent cannot write.
    assert init_exe.strip() in ("/.trsi-engine/busybox-init", "/usr/bin/bash"), init_exe


@pytest.mark.docker
def test_a_pth_file_in_site_packages_is_tampering():
    task_dir = write_task(
        Path(tempfile.mkdtemp()),
        "pth",
        solve=(
            "site=$(python3 -c 'import site; print(site.getsitepackages()[0])')\n"
            "mkdir -p $site\n"
            "echo \"import os; os.environ.setdefault('FORGED', '1')\" > $site/zz-evil.pth\n"
            "echo wrong > /app/out.txt"
        ),
        test=PYTEST_SECRET,
    )
    r = run_episode(load_task(task_dir), OracleAgent(), config=CONFIGS["docker"], backend="docker")
    assert r.scored and r.reward == 0.0 and r.failure_mode == "tampered", (r.failure_mode, r.error)
    assert "zz-evil.pth" in r.error


@pytest.mark.docker
def test_packages_an_agent_installs_still_work(tmp_path: Path):
    """New files in site-packages and a new program on PATH (what pip and apt leave) are not
    tampering: the verifier imports and runs them."""
    solve = (
        "site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')\n"
        "mkdir -p $site/secretpkg && echo 'VALUE = \"s3cr3t-7f1c\"' > $site/secretpkg/__init__.py\n"
        "printf '#!/bin/sh\\necho s3cr3t-7f1c\\n' > /usr/local/bin/secret-tool && chmod +x /usr/local/bin/secret-tool\n"
        "secret-tool > /app/out.txt"
    )
    test = PYTEST_SECRET.replace(
        "def test_secret():",
        "def test_package_imports():\n"
        "    import secretpkg, subprocess\n"
        "    out = subprocess.run(['secret-tool'], capture_output=True, text=True).stdout\n"
        "    assert secretpkg.VALUE == out.strip()\n\n"
        "def test_secret():",
    )
    r = episode(tmp_path, "docker", "installs", solve, test=test)
    assert r.success and r.checks_total == 2, (r.error, r.verifier_output)


@pytest.mark.docker
def test_an_image_without_setpriv_or_unshare_is_isolated_all_the_same(tmp_path: Path):
    d = write_task(tmp_path, "no-tools", test=SECRET_TEST)
    (d / "environment" / "Dockerfile").write_text(
        "FROM trsi-tui/base:bookworm\nRUN rm -f /usr/bin/setpriv /usr/bin/unshare /bin/setpriv /bin/unshare\n"
    )
    daemon = (
        '(setsid bash -c \'trap "" TERM; while true; do mkdir -p /logs/verifier; '
        f"echo \\'{FORGED_CTRF}\\' > /logs/verifier/ctrf.json; done' >/dev/null 2>&1 < /dev/null &)\n"
        "echo wrong > /app/out.txt"
    )
    (d / "solution" / "solve.sh").write_text("#!/bin/bash\n" + daemon + "\n")
    r = run_episode(load_task(d), OracleAgent(), config=CONFIGS["docker"], backend="docker")
    assert r.scored and not r.success and [c.name for c in r.checks] == ["secret"], (r.error, r.verifier_output)


@pytest.mark.docker
def test_a_flood_of_empty_files_hits_the_file_limit(tmp_path: Path):
    solve = "mkdir -p /var/flood && cd /var/flood && seq 1 250000 | xargs touch; echo hello > /app/out.txt"
    r = episode(tmp_path, "docker", "inode-flood", solve, toml="[agent]\ntimeout_sec = 120\n")
    assert r.scored and "disk_limit" in r.resource_events, (r.status, r.resource_events, r.error)
