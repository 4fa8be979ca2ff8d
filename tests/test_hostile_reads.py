"""Attacks on what the verifier reads, found by two red-team passes after issue 30's curriculum
v6: the links of /dev, an answer linked to a standard stream, files the agent made unreadable,
and links the engine itself followed out of the sandbox.

Run as a task's "solution" under the oracle agent, on both backends. Each attack forged a pass
on the local backend before its fix (the answer written is wrong); each test also runs the
honest counterpart, which must still pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.rollout.agents import OracleAgent
from engine.rollout.episode import run_episode
from engine.tasks import load_task
from tests.conftest import ctrf_test, write_task
from tests.test_hardening import CONFIGS, episode


@pytest.fixture(params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def backend(request) -> str:
    return request.param


# bash expands `<(cmd)` to /dev/fd/63 (and 62): the check compares the answer with the secret
# through two pipes.
SUBSTITUTION_TEST = ctrf_test(("secret", "diff <(cat /app/out.txt) <(echo s3cr3t-7f1c)"))


@pytest.mark.parametrize(
    "swap",
    [
        "mkdir -p /app/.fd && : > /app/.fd/62 && : > /app/.fd/63 && rm -f /dev/fd && ln -s /app/.fd /dev/fd",
        "rm -f /dev/fd && mkdir /dev/fd && : > /dev/fd/62 && : > /dev/fd/63",
    ],
    ids=["linked-elsewhere", "a-folder"],
)
def test_process_substitution_reads_the_verifiers_own_pipes(tmp_path: Path, backend: str, swap: str):
    """/dev is the agent's to write and the verifier's too: with /dev/fd leading to two empty
    files of the agent's, `diff <(cat answer) <(echo secret)` compared them and passed."""
    r = episode(tmp_path, backend, "devfd", f"{swap}\necho wrong > /app/out.txt", test=SUBSTITUTION_TEST)
    assert r.scored and not r.success, (r.status, r.failure_mode, r.checks, r.error)


def test_an_honest_process_substitution_check_passes_after_dev_is_put_back(tmp_path: Path, backend: str):
    """The links the verifier needs are put back, not refused: an agent that broke /dev/stdout
    and /dev/fd while working still has its right answer judged right."""
    solve = "rm -f /dev/fd /dev/stdout && mkdir /dev/fd && echo s3cr3t-7f1c > /app/out.txt"
    r = episode(tmp_path, backend, "devfd-honest", solve, test=SUBSTITUTION_TEST)
    assert r.success, (r.status, r.failure_mode, r.checks, r.error, r.verifier_output[-500:])


# A test that prints what it expects before it reads the answer (common debugging output).
PRINTING_PYTEST = """#!/bin/bash
cat > /tests/test_secret.py <<'PY'
def test_secret():
    expected = "s3cr3t-7f1c"
    print("looking for", expected)
    assert expected in open('ANSWER').read()
PY
cd /app && python3 -m pytest /tests/test_secret.py -rA
"""


@pytest.mark.parametrize(
    "link,answer",
    [
        ("ln -sf /dev/stdout /app/out.txt", "/app/out.txt"),
        ("ln -s /proc/self/fd /app/fds && ln -s fds/1 /app/out.txt", "/app/out.txt"),
        # A second pass: /dev/stdout removed while the link check ran, put back for the test.
        ("rm -f /dev/stdout && ln -s /dev/stdout /app/out.txt", "/app/out.txt"),
        # ... and a folder link to where a stream link may stand, neither link judged wrong alone.
        (
            "mkdir /dev/x && ln -s /proc/self/fd/1 /dev/x/result.txt && ln -s /dev/x /app/output",
            "/app/output/result.txt",
        ),
        (
            "mkdir -p /var/log/x && ln -s /dev/stdout /var/log/x/result.txt && ln -s /var/log/x /app/output",
            "/app/output/result.txt",
        ),
    ],
    ids=["dev-stdout", "through-a-folder-link", "dev-stdout-removed-first", "folder-in-dev", "folder-in-var-log"],
)
def test_an_answer_linked_to_a_standard_stream(tmp_path: Path, backend: str, link: str, answer: str):
    """Under pytest's capture a test's fd 1 is a file: an answer linked to /dev/stdout read back
    what the test had printed, the expected value included, and passed. Services may log to the
    streams from /var/log (tests/test_hostile_agents.py), an answer may not, by any path."""
    r = episode(tmp_path, backend, "stdout-link", link, test=PRINTING_PYTEST.replace("ANSWER", answer))
    assert r.scored and not r.success and r.failure_mode == "tampered", (r.failure_mode, r.error)


def test_an_answer_linked_to_a_descriptor_the_verifier_holds(tmp_path: Path, backend: str):
    """With /dev/fd removed while the link check ran, `/app/out.txt -> /dev/fd/3` led nowhere;
    put back for the test, it was whatever the reader had open as fd 3: `cmp -s
    /tests/expected.txt /app/out.txt` compared the expected file with itself."""
    test = (
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        "if cmp -s /tests/expected.txt /app/out.txt; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
    )
    d = write_task(tmp_path, "fd-link", solve="rm -f /dev/fd && ln -s /dev/fd/3 /app/out.txt", test=test)
    (d / "tests" / "expected.txt").write_text("s3cr3t-7f1c\n")
    r = run_episode(load_task(d), OracleAgent(), config=CONFIGS[backend], backend=backend)
    assert r.scored and not r.success and r.failure_mode == "tampered", (r.failure_mode, r.error)


def test_the_engine_reads_no_host_file_through_the_agents_links(tmp_path: Path, backend: str):
    """With `/run -> /` and `/root/.config -> /run/<a host folder>`, the engine's check of root's
    git config opened `<host folder>/git/config` on the host: the verdict told the agent whether
    a host file existed. In the verifier's view /run is a real folder, so there is no such config:
    the honest answer passes, whatever the host holds."""
    host = tmp_path / "host-only"
    (host / "git").mkdir(parents=True)
    (host / "git" / "config").write_text("[include]\n\tpath = /x\n")
    solve = f"rm -rf /run && ln -s / /run && ln -s /run{host} /root/.config && echo hello > /app/out.txt"
    r = episode(tmp_path, backend, "host-read", solve)
    assert r.success, (r.failure_mode, r.error)


NOTES = "/app/notes"
RENAME_SETUP = f"mkdir -p {NOTES}\n" + "".join(f"echo '{n} note' > {NOTES}/{n}.txt\n" for n in ("amber", "birch"))
# The built-in rename task's checks (engine/tasks/families/builtin_medium_hard.py: rename_ext).
RENAME_TEST = ctrf_test(
    ("no_txt_left", f'test -z "$(find {NOTES} -name "*.txt")"'),
    ("all_md_present", f"test -f {NOTES}/amber.md && test -f {NOTES}/birch.md"),
    ("contents_kept", f'test "$(cat {NOTES}/amber.md)" = "amber note"'),
)
COMMA_TEST = ctrf_test(("no_commas", "test -f /app/out.csv && ! grep -q , /app/out.csv"))


@pytest.mark.parametrize(
    "solve,test,setup",
    [
        (
            # Copies instead of renaming, and locks the originals away.
            f"cd {NOTES} && mkdir .k && for f in *.txt; do cp $f ${{f%.txt}}.md; mv $f .k/; done && chmod 0 .k",
            RENAME_TEST,
            RENAME_SETUP,
        ),
        ("echo 'a,b' > /app/out.csv && chmod 0 /app/out.csv", COMMA_TEST, ""),
    ],
    ids=["find-in-a-locked-folder", "grep-of-a-locked-file"],
)
def test_what_the_agent_made_unreadable_is_read_by_the_verifier(tmp_path: Path, backend: str, solve, test, setup):
    """A verifier without capabilities was a mere owner of the agent's files: `chmod 0` hid the
    originals a copy left behind from `find`, and a wrong answer from `grep`, whose errors the
    checks discard, so both absence checks passed (reward 1.0). It reads them as root does."""
    r = episode(tmp_path, backend, "unreadable", solve, test=test, setup=setup)
    assert r.scored and not r.success, (r.status, r.checks, r.error)


def test_a_task_that_asks_for_a_locked_file_can_be_checked(tmp_path: Path, backend: str):
    """What the verifier's reading rights are for: the contents of a file the task asked the agent
    to make unreadable (mode 000) can be compared."""
    test = ctrf_test(
        ("mode_000", 'test "$(stat -c %a /app/vault.txt)" = 0'),
        ("contents_kept", 'test "$(cat /app/vault.txt)" = s3cr3t-7f1c'),
    )
    r = episode(tmp_path, backend, "locked", "echo s3cr3t-7f1c > /app/vault.txt && chmod 000 /app/vault.txt", test=test)
    assert r.success, (r.status, r.checks, r.error, r.verifier_output[-500:])


def test_dev_links_put_back_from_the_host_follow_nothing_the_agent_planted(tmp_path: Path):
    """Docker's way (from the host, through /proc/<init>/root): each standard link is made again,
    a folder planted in its place is removed without following the links inside it, and a link
    the runtime never made is not added."""
    from sandboxes import dev_links

    outside = tmp_path / "host-file"
    outside.write_text("keep")
    dev = tmp_path / "root" / "dev"
    (dev / "stdin").mkdir(parents=True)
    (dev / "stdin" / "to-host").symlink_to(outside)
    (dev / "fd").symlink_to("/app/.fd")
    (dev / "stderr").symlink_to("/proc/self/fd/2")
    (dev / "ptmx").write_text("")
    changed = dev_links.restore(str(tmp_path / "root"))
    assert sorted(changed) == ["fd", "ptmx", "stdin", "stdout"]
    assert {p.name: str(p.readlink()) for p in dev.iterdir()} == {
        "fd": "/proc/self/fd",
        "stdin": "/proc/self/fd/0",
        "stdout": "/proc/self/fd/1",
        "stderr": "/proc/self/fd/2",
        "ptmx": "pts/ptmx",
    }
    assert outside.read_text() == "keep"
    assert dev_links.restore(str(tmp_path / "root")) == []


def test_a_librarys_soname_is_read_from_its_elf_header(tmp_path: Path):
    """The Docker tamper check goes by soname (the loader cache's key): it is read from the file
    itself, and whatever is not a regular ELF library, or is cut short, has none."""
    import os
    import shutil

    from sandboxes import elf

    libc = os.path.realpath("/lib/x86_64-linux-gnu/libc.so.6")
    if not os.path.exists(libc):
        pytest.skip("no x86-64 libc here")
    copy = tmp_path / "libzz.so.1"
    shutil.copy(libc, copy)
    assert elf.soname(str(copy)) == "libc.so.6"
    (tmp_path / "cut.so").write_bytes(copy.read_bytes()[:100])
    (tmp_path / "link.so").symlink_to(copy)
    (tmp_path / "text.so").write_text("not a library\n")
    assert [elf.soname(str(tmp_path / n)) for n in ("cut.so", "link.so", "text.so")] == [None, None, None]


def test_the_loader_cache_is_read_as_the_loader_reads_it(tmp_path: Path):
    """Docker compares the image's loader cache with the one the agent leaves: a soname the
    image had that now leads to another path is what sent bash to the agent's library."""
    from sandboxes import ld_cache

    host = Path("/etc/ld.so.cache")
    if not host.exists():
        pytest.skip("no loader cache on this machine")
    cache = ld_cache.parse(host.read_bytes())
    assert any(name.startswith("libc.so.") for name in cache)
    moved = {**cache, "libc.so.6": cache["libc.so.6"] | {"/opt/evil/libc.so.6"}}
    assert ld_cache.redirected(cache, moved) == ["libc.so.6 -> /opt/evil/libc.so.6"]
    assert ld_cache.redirected(cache, {**cache, "libnew.so.1": frozenset({"/usr/local/lib/libnew.so.1"})}) == []
    with pytest.raises(ld_cache.Unreadable):
        ld_cache.parse(host.read_bytes()[:60])
