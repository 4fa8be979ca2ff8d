"""Attacks through the programs a test.sh runs, found by a fifth red-team pass: apt installing
the agent's package, git running the agent's hooks and filters, sqlite3 reading the agent's
start-up file, and the local view mounting its masks through the agent's links.

Run as a task's "solution" under the oracle agent. Each forged a pass before its fix (the answer
written is wrong, or the check is one no agent can honestly pass); the honest counterparts must
still pass.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.rollout.verifier_results import parse_pytest_summary
from sandboxes import tamper
from tests.conftest import ctrf_test
from tests.test_hardening import episode
from tests.test_hostile_agents import GIT_CLONE_TEST, HARBOR_PYTEST, PACK_HOOK


@pytest.fixture(params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def backend(request) -> str:
    return request.param


# --- apt (Docker, where the agent is root over the image's /etc and /var) ---

# A flat local repository offering a newer "curl" whose pre-install script writes the verdict.
APT_REPO = (Path(__file__).parent / "data" / "hostile_apt_repo.sh").read_text()
# A Terminal-Bench 2 test.sh starts this way.
APT_TEST = HARBOR_PYTEST.replace(
    "mkdir -p /logs/verifier\n",
    "mkdir -p /logs/verifier\napt-get update >/dev/null 2>&1\napt-get install -y curl >/dev/null 2>&1\n",
    1,
)


@pytest.mark.docker
def test_an_apt_source_of_the_agents_is_refused(tmp_path: Path):
    """`deb [trusted=yes] file:/opt/r ./` in sources.list.d: the tests' `apt-get install -y curl`
    installed the agent's curl 99.0, offline, and its preinst wrote reward 1 as root."""
    r = episode(tmp_path, "docker", "apt-source", APT_REPO + "echo wrong > /app/out.txt\n", test=APT_TEST)
    assert r.scored and not r.success, (r.status, r.failure_mode, r.verifier_source, r.error)
    assert r.failure_mode == "tampered" and "/etc/apt/sources.list.d/r.list" in r.error


@pytest.mark.docker
@pytest.mark.parametrize(
    "plant, path",
    [
        ("echo 'pre-invoke=/app/hook true' > /etc/dpkg/dpkg.cfg.d/zz", "/etc/dpkg/dpkg.cfg.d/zz"),
        ("echo '/app/hook true' >> /var/lib/dpkg/info/libc-bin.postinst", "/var/lib/dpkg/info/libc-bin.postinst"),
    ],
    ids=["dpkg-hook", "maintainer-script"],
)
def test_what_dpkg_runs_by_itself_is_protected(tmp_path: Path, plant: str, path: str):
    """dpkg runs `pre-invoke` commands of its configuration on every run, and an installed
    package's maintainer scripts on its triggers (libc-bin's, on any install of a library), as
    root: a test.sh that installs anything would run them."""
    r = episode(tmp_path, "docker", "dpkg", PACK_HOOK + plant + "\necho s3cr3t-7f1c > /app/out.txt\n")
    assert r.failure_mode == "tampered" and path in r.error, (r.failure_mode, r.error)


@pytest.mark.docker
def test_an_honest_answer_passes_a_test_that_runs_apt(tmp_path: Path):
    r = episode(tmp_path, "docker", "apt-honest", "echo s3cr3t-7f1c > /app/out.txt", test=APT_TEST)
    assert r.success, (r.status, r.failure_mode, r.error, r.verifier_output[-500:])


# --- git ---

TEMPLATES = "/usr/share/git-core/templates/hooks"
# Docker's /tmp is noexec, where git ignores hooks; the same clone into HOME runs them.
CLONE_INTO_HOME = GIT_CLONE_TEST.replace("/tmp/c", "/root/c")
# Tests that make their own repository from the answer and commit it.
GIT_INIT_TEST = (
    "#!/bin/bash\nmkdir -p /logs/verifier\ncd /root && git init -q t && cd t && cp /app/repo/out.txt .\n"
    "git add out.txt && git -c user.email=a@b -c user.name=t commit -qm t\n"
    '[ "$(git show HEAD:out.txt)" = s3cr3t-7f1c ] && echo 1 > /logs/verifier/reward.txt'
    " || echo 0 > /logs/verifier/reward.txt\n"
)


@pytest.mark.docker
@pytest.mark.parametrize(
    "hook, test", [("post-checkout", CLONE_INTO_HOME), ("pre-commit", GIT_INIT_TEST)], ids=["clone", "init"]
)
def test_hooks_in_gits_default_templates_never_run_in_the_verifier(tmp_path: Path, hook: str, test: str):
    """A hook in git's built-in template directory went into the tests' clone (and their own
    `git init`) and ran there as root. The directory is protected, and the verifier's git takes
    its templates from an empty folder of the engine's."""
    solve = PACK_HOOK + f"cp /app/hook {TEMPLATES}/{hook} && chmod 755 {TEMPLATES}/{hook}\n"
    r = episode(tmp_path, "docker", f"git-templates-{hook}", solve, test=test)
    assert r.scored and not r.success, (r.status, r.failure_mode, r.verifier_source, r.error)


def test_an_honest_repository_of_the_tests_own_still_commits(tmp_path: Path, backend: str):
    """The engine's template folder is a working one: `git init` and a commit in the tests pass
    for a right answer."""
    solve = "mkdir -p /app/repo && echo s3cr3t-7f1c > /app/repo/out.txt"
    r = episode(tmp_path, backend, "git-init-honest", solve, test=GIT_INIT_TEST)
    assert r.success, (r.status, r.failure_mode, r.error, r.verifier_output[-500:])


ATTRIBUTES = (
    "cd /app/repo && echo '* filter={name}' > .gitattributes && git add .gitattributes"
    " && git -c user.email=a@b -c user.name=a commit -qm attrs\n"
)


def test_a_filter_that_only_begins_like_git_lfs_is_refused(tmp_path: Path, backend: str):
    """git runs a filter through the shell: `git-lfs >/dev/null; /app/hook cat` passed a check
    that allowed any command beginning with git-lfs, and ran the hook on the tests' clone."""
    solve = (
        PACK_HOOK
        + ATTRIBUTES.format(name="x")
        + "git config --global filter.x.smudge 'git-lfs >/dev/null 2>&1; /app/hook cat'\n"
    )
    r = episode(tmp_path, backend, "lfs-prefix", solve, test=GIT_CLONE_TEST)
    assert r.scored and not r.success, (r.status, r.failure_mode, r.verifier_source, r.error)
    assert r.failure_mode == "tampered"


@pytest.mark.docker
@pytest.mark.parametrize("key, value", [("smudge", "git-lfs smudge -- %f"), ("process", "git-lfs filter-process")])
def test_the_agents_own_git_lfs_never_runs_in_the_verifier(tmp_path: Path, key: str, value: str):
    """git-lfs's exact settings, with a `git-lfs` of the agent's in /usr/local/bin (the image has
    none, so it shadows nothing): the verifier turns git-lfs's filter off."""
    solve = (
        PACK_HOOK
        + "cp /app/hook /usr/local/bin/git-lfs && chmod 755 /usr/local/bin/git-lfs\n"
        + ATTRIBUTES.format(name="lfs")
        + f"git config --global filter.lfs.{key} '{value}'\n"
    )
    r = episode(tmp_path, "docker", f"lfs-{key}", solve, test=GIT_CLONE_TEST)
    assert r.scored and not r.success, (r.status, r.failure_mode, r.verifier_source, r.error)


@pytest.mark.parametrize(
    "config, runs",
    [
        (
            '[filter "lfs"]\n\tclean = git-lfs clean -- %f\n\tsmudge = git-lfs smudge -- %f\n'
            "\tprocess = git-lfs filter-process\n\trequired = true\n",
            False,
        ),
        ("[user]\n\tname = a\n\temail = a@b\n[core]\n\teditor = vim\n", False),
        ('[filter "x"]\n\tsmudge = git-lfs smudge -- %f\n', True),
        ('[filter "lfs"]\n\tsmudge = git-lfs >/dev/null; /app/x\n', True),
        ('[filter "lfs"] smudge = /app/x\n', True),
        ("[filter.x]\n\tsmudge = git-lfs smudge -- %f\n", True),
        ('[filter "lfs"]\n\tsmudge = git-lfs smudge -- %f \\\n ; /app/x\n', True),
        ('[diff "x"]\n\ttextconv = /app/x\n', True),
        ("[diff]\n\texternal = /app/x\n", True),
        ('[merge "x"]\n\tdriver = /app/x %A\n', True),
        # git ends a line at \n only, and a value may hold `]`: the parser read these as [core].
        ('[filter "x"]\n\tdescription = ][core]\n\tsmudge = /app/hook cat\n', True),
        ('[filter "x"]\n#\f[core]\n\tsmudge = /app/hook cat\n', True),
        ('[filter "x"]\n#\u2028[core]\n\tsmudge = /app/hook cat\n', True),
    ],
    ids=[
        "lfs-install",
        "identity",
        "lfs-values-elsewhere",
        "lfs-then-more",
        "one-line",
        "old-form",
        "continued",
        "textconv",
        "diff-external",
        "merge-driver",
        "bracket-in-value",
        "form-feed",
        "line-separator",
    ],
)
def test_which_git_settings_count_as_running_a_program(config: str, runs: bool):
    assert tamper.git_config_runs_programs(config.encode()) is runs


# A sixth pass: root's git configuration, whose dangerous keys a list kept missing, is read by
# the verifier's git only for an identity, aliases and the like (verifier.GIT_GLOBAL_KEYS).
LS_REMOTE_TEST = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    "git ls-remote file:///app/repo | grep -q refs/heads/ || { echo 0 > /logs/verifier/reward.txt; exit; }\n"
    "git clone -q file:///app/repo /tmp/c\n"
    '[ "$(cat /tmp/c/out.txt)" = s3cr3t-7f1c ] && echo 1 > /logs/verifier/reward.txt'
    " || echo 0 > /logs/verifier/reward.txt\n"
)
# The tests clone their own reference repository and compare the answer with it.
REFERENCE_TEST = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    "git init -q /tests/ref && cd /tests/ref && echo s3cr3t-7f1c > out.txt && git add out.txt"
    " && git -c user.email=t@t -c user.name=t commit -qm ref && cd /app\n"
    "git clone -q file:///tests/ref /tmp/ref\n"
    "cmp -s /tmp/ref/out.txt /app/out.txt && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
)
FAKE_REFERENCE = (
    "git init -q /app/fake && cd /app/fake && echo wrong > out.txt && git add out.txt"
    " && git -c user.email=a@b -c user.name=a commit -qm f && cd /app\necho wrong > /app/out.txt\n"
)
ROOTS_GIT_PLANTS = {
    # git execs git-remote-<vcs>, here the relative `git-remote-x/../hook` from test.sh's /app.
    "remote-helper": (
        PACK_HOOK + "mkdir -p /app/git-remote-x && git config --global remote.origin.vcs 'x/../hook'\n",
        GIT_CLONE_TEST,
    ),
    "upload-pack": (
        PACK_HOOK + "git config --global 'remote.file:///app/repo.uploadpack' '/app/hook git-upload-pack'\n",
        LS_REMOTE_TEST,
    ),
    "signing-key-command": (
        PACK_HOOK + "git config --global commit.gpgSign true && git config --global gpg.format ssh"
        " && git config --global gpg.ssh.defaultKeyCommand '/app/hook echo key::x'\n",
        GIT_INIT_TEST,
    ),
    "remote-url": (FAKE_REFERENCE + "git config --global remote.origin.url /app/fake\n", REFERENCE_TEST),
}


@pytest.mark.parametrize("plant", sorted(ROOTS_GIT_PLANTS))
def test_roots_git_configuration_sends_the_tests_git_nowhere_of_the_agents(tmp_path: Path, backend: str, plant: str):
    """Each forged a pass: a remote helper of the agent's ran on the tests' clone, an upload-pack
    on their `git ls-remote`, a signing key command on their own commit, and `remote.origin.url`
    sent the clone of their own reference repository to the agent's."""
    solve, test = ROOTS_GIT_PLANTS[plant]
    r = episode(tmp_path, backend, f"roots-git-{plant}", solve, test=test)
    assert r.scored and not r.success, (r.status, r.failure_mode, r.verifier_source, r.error)


SHOWN_REPO = (
    "cd /app && git init -q repo && cd repo && echo a > a && git add a"
    " && git -c user.email=a@b -c user.name=a commit -qm first && echo b > left-out\n"
)
SHOWN_PLANTS = {
    # A test that greps the log for the commit it asked for.
    "log-format": ("git config --global format.pretty 'format:fix the parser'", "git log | grep -q 'fix the parser'"),
    # A test that nothing is left uncommitted.
    "untracked-hidden": ("git config --global status.showUntrackedFiles no", 'test -z "$(git status --porcelain)"'),
    "ignored-globally": (
        "echo left-out > /root/.gitignore_global && git config --global core.excludesFile /root/.gitignore_global",
        'test -z "$(git status --porcelain)"',
    ),
}


@pytest.mark.parametrize("plant", sorted(SHOWN_PLANTS))
def test_what_git_shows_the_tests_is_the_repositorys(tmp_path: Path, backend: str, plant: str):
    setting, check = SHOWN_PLANTS[plant]
    test = (
        "#!/bin/bash\nmkdir -p /logs/verifier\ncd /app/repo\n"
        + check
        + (" && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n")
    )
    r = episode(tmp_path, backend, f"git-shows-{plant}", SHOWN_REPO + setting + "\n", test=test)
    assert r.scored and not r.success, (r.status, r.failure_mode, r.verifier_source, r.error)


# A seventh pass. "Remove the secret from the history and commit everything": the history is
# untouched and the fix left uncommitted.
UNFINISHED = (
    "cd /app && git init -q repo && cd repo\n"
    "echo key=hunter2 > cfg && git add cfg && git -c user.email=a@b -c user.name=a commit -qm c1\n"
    "echo key=REDACTED > cfg\n"
)
UNFINISHED_TEST = ctrf_test(
    ("redacted", "grep -qx key=REDACTED /app/repo/cfg"),
    ("clean_tree", 'cd /app/repo && test -z "$(git status --porcelain)"'),
    ("secret_gone", "cd /app/repo && ! git log -p --all | grep -q hunter2"),
)
# "... and delete the branch old, leave nothing untracked."
LEFT_BEHIND = (
    "cd /app && git init -q repo && cd repo && C='git -c user.email=a@b -c user.name=a'\n"
    "echo 1 > a && git add a && $C commit -qm one && git branch old && echo junk > stray.txt\n"
)
LEFT_BEHIND_TEST = ctrf_test(
    ("no_untracked", 'cd /app/repo && ! git status -s | grep -q "^??"'),
    ("old_deleted", 'cd /app/repo && ! git branch | grep -qx "  old"'),
)
FAILING_GIT_PLANTS = {
    # A value git refuses made every git command of the tests fail and print nothing.
    "bad-value": (UNFINISHED + "git config --global push.default bogus\n", UNFINISHED_TEST),
    "bad-advice": (UNFINISHED + "git config --global advice.statusHints maybe\n", UNFINISHED_TEST),
    # Escape codes broke the anchored greps.
    "colour-global": (LEFT_BEHIND + "git config --global color.ui always\n", LEFT_BEHIND_TEST),
    "colour-repository": (
        LEFT_BEHIND + "git config color.status always && git config color.branch always\n",
        LEFT_BEHIND_TEST,
    ),
}


@pytest.mark.parametrize("plant", sorted(FAILING_GIT_PLANTS))
def test_git_settings_that_blind_the_tests_are_not_theirs(tmp_path: Path, backend: str, plant: str):
    solve, test = FAILING_GIT_PLANTS[plant]
    r = episode(tmp_path, backend, f"git-blind-{plant}", solve, test=test)
    assert r.scored and not r.success, (r.status, r.failure_mode, r.verifier_source, r.error)


def no_index_test(cwd: str) -> str:
    """Compare the answer with the expected one by `git diff --no-index`, as a test may."""
    return (
        f"#!/bin/bash\nmkdir -p /logs/verifier\n{cwd}\necho s3cr3t-7f1c > expected.txt\n"
        "if git diff --no-index --exit-code expected.txt /app/out.txt; then echo 1 > /logs/verifier/reward.txt;"
        " else echo 0 > /logs/verifier/reward.txt; fi\n"
    )


NO_INDEX = {
    "tmp": ("git init -q /tmp && git -C /tmp config diff.external /app/hook", "cd $(mktemp -d)"),
    "app": ("git init -q /app && git -C /app config diff.external /app/hook", "cd /app"),
}


@pytest.mark.parametrize("case", sorted(NO_INDEX))
def test_a_diff_program_of_a_repository_where_the_tests_work_never_runs(tmp_path: Path, backend: str, case: str):
    """`git diff --no-index` in a temporary folder, or in test.sh's /app, found a repository of
    the agent's above or at it and ran its diff.external as root."""
    plant, cwd = NO_INDEX[case]
    r = episode(
        tmp_path,
        backend,
        f"no-index-{case}",
        PACK_HOOK + plant + "\necho wrong > /app/out.txt\n",
        test=no_index_test(cwd),
    )
    assert r.scored and not r.success, (r.status, r.failure_mode, r.verifier_source, r.error)


def test_a_no_index_comparison_of_a_right_answer_passes(tmp_path: Path, backend: str):
    r = episode(
        tmp_path, backend, "no-index-honest", "echo s3cr3t-7f1c > /app/out.txt", test=no_index_test("cd $(mktemp -d)")
    )
    assert r.success, (r.status, r.failure_mode, r.error, r.verifier_output[-500:])


@pytest.mark.docker
def test_docker_a_remote_helper_program_of_the_agents_never_runs(tmp_path: Path):
    solve = PACK_HOOK + (
        "cp /app/hook /usr/local/bin/git-remote-evil && chmod 755 /usr/local/bin/git-remote-evil\n"
        "git config --global remote.origin.vcs evil\n"
    )
    r = episode(tmp_path, "docker", "remote-helper-program", solve, test=GIT_CLONE_TEST)
    assert r.scored and not r.success, (r.status, r.failure_mode, r.verifier_source, r.error)


def test_roots_git_identity_and_aliases_reach_the_tests(tmp_path: Path, backend: str):
    """What tasks ask of root's git configuration still reaches the tests: an identity, an alias,
    a default branch; and a clone of the tests' own repository works as ever."""
    solve = (
        "git config --global user.name 'Ada L' && git config --global user.email ada@example.com"
        " && git config --global alias.st status && git config --global init.defaultBranch trunk"
        " && echo s3cr3t-7f1c > /app/out.txt"
    )
    test = ctrf_test(
        ("identity", 'test "$(git config --global user.name)" = "Ada L"'),
        ("alias", 'test "$(git config --get alias.st)" = status'),
        ("branch", 'cd /tmp && git init -q b && test "$(git -C b symbolic-ref --short HEAD)" = trunk'),
        (
            "clone",
            "cd /tmp && git init -q r && cd r && echo x > f && git add f && git commit -qm m"
            " && git clone -q file:///tmp/r /tmp/r2 && test -f /tmp/r2/f",
        ),
    )
    r = episode(tmp_path, backend, "roots-git-honest", solve, test=test)
    assert r.success, (r.status, r.failure_mode, r.checks, r.error, r.verifier_output[-800:])


HISTORY = (
    "cd /app && git init -q repo && cd repo && git config user.email a@b && git config user.name a\n"
    "echo key=hunter2 > cfg && git add cfg && git commit -qm c1\necho key=REDACTED > cfg && git commit -qam c2\n"
)
# "Remove the secret from the repository's history."
HISTORY_TEST = (
    "#!/bin/bash\nmkdir -p /logs/verifier\ncd /app/repo || { echo 0 > /logs/verifier/reward.txt; exit; }\n"
    "if git log -p --all | grep -q hunter2; then echo 0\n"
    'elif [ "$(git show HEAD:cfg)" = key=REDACTED ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n'
)


def test_a_replace_ref_never_hides_history_from_the_tests(tmp_path: Path, backend: str):
    """`git replace <blob with the secret> <clean blob>` made the tests' `git log -p --all` show
    the clean one, while the secret stayed in the history every clone carries."""
    solve = HISTORY + "git replace $(git rev-parse HEAD~1:cfg) $(echo key=REDACTED | git hash-object -w --stdin)\n"
    r = episode(tmp_path, backend, "replace-ref", solve, test=HISTORY_TEST)
    assert r.scored and not r.success, (r.status, r.failure_mode, r.verifier_source, r.error)


def test_history_rewritten_for_real_passes(tmp_path: Path, backend: str):
    solve = HISTORY + (
        "git filter-branch -f --tree-filter 'echo key=REDACTED > cfg' -- --all >/dev/null 2>&1\n"
        "git for-each-ref --format='%(refname)' refs/original | xargs -rn1 git update-ref -d\n"
    )
    r = episode(tmp_path, backend, "history-honest", solve, test=HISTORY_TEST)
    assert r.success, (r.status, r.failure_mode, r.error, r.verifier_output[-500:])


def test_a_git_of_the_agents_where_the_image_has_none_is_refused(tmp_path: Path):
    """The verifier runs the system's git itself before every test.sh (its copy of root's
    configuration); on an image without git, one the agent put at /usr/bin/git would run there
    as root. (An image's own git, changed, is a changed system file as before.)"""
    upper, lower, bare = tmp_path / "upper", tmp_path / "lower", tmp_path / "bare"
    for layer in (upper, lower, bare):
        (layer / "usr" / "bin").mkdir(parents=True)
    (upper / "usr" / "bin" / "git").write_text("#!/bin/sh\n")
    (lower / "usr" / "bin" / "git").write_text("#!/bin/sh\n")
    assert tamper.tampered(["usr/bin/git"], upper, [bare], {}, None)
    assert tamper.tampered(["usr/bin/git"], upper, [lower], {}, None)  # the image's, changed
    assert not tamper.tampered(["usr/bin/gitk"], upper, [bare], {}, None)


# An eighth pass (Docker, where /etc and the image's own folders are the agent's to write).
OWNERSHIP_TEST = ctrf_test(
    ("owner_is_nobody", 'test "$(stat -c %U /app/out.txt)" = nobody'),
    ("group_is_nogroup", 'test "$(stat -c %G /app/out.txt)" = nogroup'),
)


@pytest.mark.docker
@pytest.mark.parametrize(
    "solve, passes",
    [
        (
            "sed -i '1i nobody:x:0:0:nobody:/nonexistent:/usr/sbin/nologin' /etc/passwd\n"
            "sed -i '1i nogroup:x:0:' /etc/group\necho hi > /app/out.txt",
            False,
        ),
        ("useradd -u 4321 ada && echo hi > /app/out.txt && chown nobody:nogroup /app/out.txt", True),
    ],
    ids=["a-second-name-for-root", "honest-chown-and-a-new-user"],
)
def test_docker_an_ownership_check_reads_the_images_names(tmp_path: Path, solve: str, passes: bool):
    """ "Hand /app/out.txt to nobody": a second uid-0 line named nobody ahead of root's made
    `stat -c %U` print nobody for a file left root's. New users with new ids stay allowed."""
    r = episode(tmp_path, "docker", "passwd-names", solve, test=OWNERSHIP_TEST)
    assert r.success is passes, (r.status, r.failure_mode, r.error, r.checks)


VENV_IMAGE = (
    "FROM trsi-tui/base:bookworm\n"
    "RUN python3 -m venv --without-pip --system-site-packages /opt/venv\n"
    "ENV PATH=/opt/venv/bin:$PATH\n"
)
VENV_PLANTS = {
    "python-replaced": (
        "rm -f /opt/venv/bin/python3\n"
        "printf '#!/bin/sh\\necho \"1 passed in 0.01s\"\\nexit 0\\n' > /opt/venv/bin/python3\n"
        "chmod +x /opt/venv/bin/python3\n"
    ),
    # No program changed: the venv's home points at a copy of the standard library that exits 0.
    "home-moved": (
        "mkdir -p /var/tmp/py/bin /var/tmp/py/lib && cp -a /usr/lib/python3.11 /var/tmp/py/lib/\n"
        "printf 'import os; os.write(1, b\"1 passed\\\\n\"); os._exit(0)\\n'"
        " >> /var/tmp/py/lib/python3.11/encodings/__init__.py\n"
        "sed -i 's|^home = .*|home = /var/tmp/py/bin|' /opt/venv/pyvenv.cfg\n"
    ),
    "honest": "",
}


@pytest.mark.docker
@pytest.mark.parametrize("plant", sorted(VENV_PLANTS))
def test_docker_a_venv_on_the_images_path_is_what_the_verifier_runs(tmp_path: Path, plant: str):
    """An image that puts a virtual environment on PATH gets the tests' python3 from it; its
    interpreter and its pyvenv.cfg were checked nowhere."""
    from engine.rollout.agents import OracleAgent
    from engine.rollout.episode import run_episode
    from engine.tasks import load_task
    from tests.conftest import write_task
    from tests.test_hardening import CONFIGS

    answer = "s3cr3t-7f1c" if plant == "honest" else "wrong"
    d = write_task(
        tmp_path, f"venv-{plant}", solve=VENV_PLANTS[plant] + f"echo {answer} > /app/out.txt\n", test=HARBOR_PYTEST
    )
    (d / "environment" / "Dockerfile").write_text(VENV_IMAGE)
    r = run_episode(load_task(d), OracleAgent(), config=CONFIGS["docker"], backend="docker")
    assert r.scored and r.success is (plant == "honest"), (r.status, r.failure_mode, r.error, r.verifier_output[-500:])


# --- start-up files of the programs tests run ---

SQLITE_SETUP = "mkdir -p /app\n"
SQLITE_DB = "sqlite3 /app/db.sqlite \"create table t(v); insert into t values('{value}')\"\n"
SQLITE_TEST = ctrf_test(("answer", 'test "$(sqlite3 /app/db.sqlite "select v from t")" = s3cr3t-7f1c'))


def test_a_sqliterc_of_the_agents_never_answers_the_tests_queries(tmp_path: Path, backend: str):
    """`.print <answer>` then `.output /dev/null` made every query print the expected answer.
    sqlite3 finds the file through root's passwd entry, so a fresh $HOME would not do."""
    plant = "printf '.print s3cr3t-7f1c\\n.output /dev/null\\n' > /root/.sqliterc\n"
    solve = SQLITE_DB.format(value="wrong") + plant
    r = episode(tmp_path, backend, "sqliterc", solve, setup=SQLITE_SETUP, test=SQLITE_TEST)
    assert r.scored and not r.success, (r.status, r.failure_mode, r.verifier_source, r.error)


@pytest.mark.skipif(shutil.which("jq") is None, reason="the host has no jq")
def test_a_jq_file_of_the_agents_never_answers_the_tests_filters(tmp_path: Path):
    """jq sources ~/.jq into every program: `def length: 3;` made the tests' `jq '.items |
    length'` answer 3 whatever the file held. (Local: the host's jq; the Docker images have none.)"""
    solve = "echo '{\"items\": [0]}' > /app/out.json\nprintf 'def length: 3;\\n' > /root/.jq\n"
    test = ctrf_test(("three_items", 'test "$(jq ".items | length" /app/out.json)" = 3'))
    r = episode(tmp_path, "local", "jq-rc", solve, test=test)
    assert r.scored and not r.success, (r.status, r.failure_mode, r.verifier_source, r.error)


def test_an_honest_database_passes(tmp_path: Path, backend: str):
    r = episode(
        tmp_path, backend, "sqlite-honest", SQLITE_DB.format(value="s3cr3t-7f1c"), setup=SQLITE_SETUP, test=SQLITE_TEST
    )
    assert r.success, (r.status, r.failure_mode, r.error, r.verifier_output[-500:])


def test_a_link_on_the_way_to_roots_configuration_is_refused(tmp_path: Path, backend: str):
    """/root/.config -> a folder of the agent's holding pip/pip.conf: each backend guards
    /root/.config/pip at its own path (masked, or refused when written), and pip would have read
    the agent's configuration through the link."""
    solve = (
        "mkdir -p /opt/cfg/pip && printf '[global]\\nno-index = true\\n' > /opt/cfg/pip/pip.conf\n"
        "rm -rf /root/.config && ln -s /opt/cfg /root/.config && echo s3cr3t-7f1c > /app/out.txt\n"
    )
    r = episode(tmp_path, backend, "config-link", solve, test=ctrf_test(("secret", "true")))
    assert r.scored and not r.success, (r.status, r.failure_mode, r.verifier_source, r.error)
    assert r.failure_mode == "tampered" and "/root/.config/pip" in r.error


HOST_PIP = Path("/usr/lib/python3/dist-packages/pip")


@pytest.mark.skipif(not HOST_PIP.is_dir(), reason="the host's Python has no pip package to hide")
def test_the_local_view_never_mounts_a_mask_through_the_agents_link(tmp_path: Path):
    """/root/.config -> /usr/lib/python3/dist-packages: the local view mounted its mask for
    /root/.config/pip through the link, over the host's own pip, and a check that pip is gone,
    which no agent can pass on the read-only /usr, passed."""
    solve = "rm -rf /root/.config && ln -s /usr/lib/python3/dist-packages /root/.config\n"
    r = episode(
        tmp_path, "local", "config-link-host", solve, test=ctrf_test(("pip_gone", "! python3 -m pip --version"))
    )
    assert r.scored and not r.success, (r.status, r.failure_mode, r.verifier_source, r.error)


def test_a_config_folder_linked_where_nothing_of_roots_is_passes(tmp_path: Path, backend: str):
    """A link at /root/.config that leads to none of the configuration files is no one's concern."""
    solve = (
        "mkdir -p /app/cfg && rm -rf /root/.config && ln -s /app/cfg /root/.config && echo s3cr3t-7f1c > /app/out.txt"
    )
    test = ctrf_test(("secret", 'test "$(cat /app/out.txt)" = s3cr3t-7f1c'))
    r = episode(tmp_path, backend, "config-link-honest", solve, test=test)
    assert r.success, (r.status, r.failure_mode, r.error, r.verifier_output[-500:])


# --- the engine reading the verifier's output ---


def test_a_long_last_line_is_not_read_as_pytests_summary():
    """The final-line regex backtracked quadratically over a crafted 512 KiB last line (11 s with
    the GIL held, every engine thread stalled); a line that long is not pytest's anyway."""
    output = "short test summary info\nPASSED t.py::a\n= " + "x in 1s (" * 58254
    assert parse_pytest_summary(output) == []
    honest = "=== short test summary info ===\nPASSED t.py::a\n=== 1 passed in 0.01s ==="
    assert [c.status for c in parse_pytest_summary(honest)] == ["passed"]
