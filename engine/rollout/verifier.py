"""Run a task's verifier in a sandbox after the agent's turn and collect per-check results.

The tests reach the sandbox only now, into fresh /tests and /logs/verifier directories that
only the verifier's clean shell can see (on the local backend, a private mount namespace):
nothing the agent wrote there, before or during verification, counts.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from engine.results import CheckResult
from engine.rollout.verifier_results import (
    VerifierParseError,
    parse_ctrf,
    parse_junit,
    parse_pytest_summary,
    parse_reward_json,
    parse_reward_txt,
)
from engine.tasks import Task
from sandboxes import Sandbox, SandboxError

# "infra": the engine or the container runtime failed while verifying (not the agent's doing).
VerifierStatus = Literal["ok", "timeout", "error", "infra"]


@dataclass(frozen=True)
class VerifierOutcome:
    status: VerifierStatus
    checks: tuple[CheckResult, ...] = ()
    source: str = ""
    output: str = ""
    error: str = ""
    exit_code: int | None = None
    duration_s: float = 0.0
    # What reward.txt / reward.json said (None without one): it decides success when present.
    verdict: bool | None = None

    @property
    def passed(self) -> int:
        return sum(1 for c in self.checks if c.passed)

    @property
    def total(self) -> int:
        return len(self.checks)

    @property
    def success(self) -> bool:
        if self.status != "ok" or self.total == 0:
            return False
        return self.verdict if self.verdict is not None else self.passed == self.total


@dataclass(frozen=True)
class Collected:
    checks: list[CheckResult]
    source: str
    verdict: bool | None = None


def collect_checks(logs_dir: Path, output: str) -> Collected:
    """The verdict and per-check detail from the verifier's own files. Raises VerifierParseError
    if there is nothing usable.

    `reward.json` / `reward.txt` decide success when present; CTRF or JUnit files give the
    per-check detail. Only when the verifier wrote no report file at all is a pytest summary
    read, and only from the very end of its output: earlier output may be the program's under
    test, which the agent controls.
    """
    problems: list[str] = []
    detail: list[CheckResult] = []
    source = ""
    ctrf = logs_dir / "ctrf.json"
    if ctrf.is_file():
        try:
            detail = parse_ctrf(ctrf.read_text(errors="replace"))
            source = "ctrf"
            if not detail:
                problems.append("ctrf.json lists no tests")
        except VerifierParseError as exc:
            problems.append(f"ctrf.json: {exc}")
    if not detail:
        for xml in sorted(logs_dir.glob("*.xml")):
            try:
                detail = parse_junit(xml.read_text(errors="replace"))
            except VerifierParseError as exc:
                problems.append(f"{xml.name}: {exc}")
                continue
            if detail:
                source = "junit"
                break
    for name, parse in (("reward.json", parse_reward_json), ("reward.txt", parse_reward_txt)):
        f = logs_dir / name
        if not f.is_file():
            continue
        try:
            (reward,) = parse(f.read_text(errors="replace"))
        except VerifierParseError as exc:
            # A reward file that does not parse must not let the detail decide instead.
            raise VerifierParseError(f"{exc}; a reward file that cannot be read decides nothing") from None
        verdict = reward.passed
        if not detail:
            return Collected([reward], name, verdict)
        if not verdict and all(c.passed for c in detail):
            # The reward file failed the episode: the detail must not look like a success.
            detail = [*detail, reward]
        return Collected(detail, f"{source}+{name}", verdict)
    if detail:
        return Collected(detail, source)
    wrote_a_report = ctrf.exists() or any(logs_dir.glob("*.xml"))
    if not wrote_a_report:
        checks = parse_pytest_summary(output)
        if checks:
            return Collected(checks, "pytest")
    detail_text = "; ".join(problems) if problems else "no ctrf.json, JUnit XML, reward file or pytest summary"
    raise VerifierParseError(f"the verifier produced no usable results ({detail_text})")


# Close the usual ways an agent's leftovers could steer a Python verifier without changing how
# the task's own code imports: user site-packages (usercustomize.py under /root/.local), conftest.py
# files above /tests, pytest's cache, and (engine/verifier_guard) a module in the working directory
# shadowing pytest itself. PYTHONSAFEPATH is not used: `python3 /app/main.py` must import the
# modules beside main.py during verification as it does during the agent's turn.
#
# Programs a test.sh commonly runs that would run the agent's code by configuration or take its
# files from a cache. git: the programs its read-only commands run on their own, set here above
# every config file (`core.fsmonitor` in /app/.git/config ran on the tests' `git status`, and a
# signature program on `git log` with `log.showSignature`, each writing reward 1 and killing
# test.sh). Not hooks, the editor or the pager: a task may ask for those (a pre-commit hook its
# tests commit against), read-only commands do not run them, and a test that reads
# `git config core.hooksPath` must see the agent's value. uv's and pip's caches, whose unpacked
# packages are installed without a second check (a pytest the agent patched in ~/.cache/uv went
# into the tests' fresh virtual environment).
COLOR_KEYS = (
    "ui", "advice", "branch", "diff", "decorate", "grep", "interactive", "push", "remote",
    "showBranch", "status", "transport",
)  # fmt: skip
GIT_OVERRIDES = (
    ("core.fsmonitor", "false"),
    ("log.showSignature", "false"),
    ("gpg.program", "gpg"),
    ("gpg.openpgp.program", "gpg"),
    ("gpg.x509.program", "gpgsm"),
    ("gpg.ssh.program", "ssh-keygen"),
    # `url.<ext::sh /app/x.sh>.insteadOf = file:///app/repo` in root's config ran the agent's
    # command on the tests' `git clone`: the transports that run a command are off.
    ("protocol.ext.allow", "never"),
    ("protocol.fd.allow", "never"),
    # ssh runs `core.sshCommand` and git:// `core.gitProxy` (a red-team pass rewrote the tests'
    # file:// clone to either with insteadOf); sandboxes have no network to reach either by.
    ("protocol.ssh.allow", "never"),
    ("protocol.git.allow", "never"),
    # Local clones stay allowed under GIT_PROTOCOL_FROM_USER=0 (below), which would refuse file://
    # too: git 2.38.1 gives it the "user" policy.
    ("protocol.file.allow", "always"),
    # git-lfs's filter, the one filter root's config may name (sandboxes/tamper.py): off, so that
    # no `git-lfs` program runs, the agent's own in /usr/local/bin included (an empty value is
    # no filter). With no network, a clone has no LFS content to fetch anyway.
    ("filter.lfs.smudge", ""),
    ("filter.lfs.clean", ""),
    ("filter.lfs.process", ""),
    ("filter.lfs.required", "false"),
    # Signing runs a program (gpg.ssh.defaultKeyCommand found the key for the tests' own commit,
    # a sixth red-team pass): the tests' commits and tags are not signed.
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("gpg.ssh.defaultKeyCommand", ""),
    # Colour only on a terminal, whatever a repository's config says: with `color.ui always` the
    # escape codes broke the tests' anchored greps (`! git status -s | grep -q "^??"` passed with
    # a stray file left; a seventh red-team pass). Each command's own key beats color.ui.
    *((f"color.{name}", "auto") for name in COLOR_KEYS),
)
GUARD_DIR = "/run/trsi-verifier-guard"
HARDENED_ENV = {
    "PYTHONNOUSERSITE": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTEST_ADDOPTS": "--confcutdir=/tests -p no:cacheprovider",
    "UV_NO_CACHE": "1",
    "PIP_NO_CACHE_DIR": "1",
    "GIT_CONFIG_COUNT": str(len(GIT_OVERRIDES)),
    **{f"GIT_CONFIG_KEY_{i}": key for i, (key, _) in enumerate(GIT_OVERRIDES)},
    **{f"GIT_CONFIG_VALUE_{i}": value for i, (_, value) in enumerate(GIT_OVERRIDES)},
    # New repositories (the tests' `git init`, `git clone`) take their hooks from git's template
    # directory, by default /usr/share/git-core/templates, which a root agent can write on Docker:
    # a post-checkout hook there ran on the tests' clone. An empty one of the engine's instead.
    "GIT_TEMPLATE_DIR": f"{GUARD_DIR}/git-templates",
    # Transports git knows only by a remote helper's name (`remote.origin.vcs = x/../hook` ran
    # /app/hook on the tests' clone) are refused; file, http(s), ssh and git keep their own rules.
    "GIT_PROTOCOL_FROM_USER": "0",
    # Replace refs and grafts show one object in another's place: `git replace` made the tests'
    # `git log -p --all` miss a secret that was still in the history.
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_GRAFT_FILE": "/dev/null",
    # A test in a temporary folder (`mktemp -d`, pytest's tmp_path) that compares two files with
    # `git diff --no-index` found the agent's /tmp/.git above it and ran its diff.external.
    "GIT_CEILING_DIRECTORIES": "/:/tmp",
}
# root's own git configuration (~/.gitconfig, ~/.config/git/config) as the verifier's git reads
# it: only an identity, aliases (git never lets one shadow a command of its own), a default branch
# that git takes for one, and safe.directory, copied into a file of the engine's
# (GIT_CONFIG_GLOBAL). Everything else there was the agent's way to make git run something, go
# elsewhere or show something else on the tests' behalf: a remote's url, helper or upload-pack,
# a filter, a signing key command, `format.pretty` printing the commit message a test grepped
# for, `status.showUntrackedFiles` hiding a file left uncommitted, and a value git refuses
# (`push.default bogus`), which made every git command of the tests fail and print nothing, so
# that `test -z "$(git status --porcelain)"` passed.
GIT_GLOBAL_KEYS = r"^(user\.(name|email)|alias\.[^.]+|init\.defaultbranch|safe\.directory)$"
GIT_GLOBAL = f"{GUARD_DIR}/gitconfig"
# Reads root's configuration with the system's git itself (never an include: `--global` reads
# none; never a git found on PATH, which on an image without git would be the agent's, run as
# root before every test.sh: sandboxes/tamper.py refuses a new one at the system's), keeps
# GIT_GLOBAL_KEYS, and points the verifier's git at the copy.
GIT_GLOBAL_PRELUDE = (
    f": > {GIT_GLOBAL} || exit 1\n"
    f"keep='{GIT_GLOBAL_KEYS}'\n"
    "GIT=; for g in /usr/bin/git /bin/git; do [ -x $g ] && GIT=$g && break; done\n"
    'if [ -n "$GIT" ]; then\n'
    "  while IFS= read -r -d '' rec; do\n"
    "    key=${rec%%$'\\n'*}; val=${rec#*$'\\n'}; [ \"$val\" = \"$rec\" ] && val=true\n"
    "    [[ $key =~ $keep ]] || continue\n"
    '    if [ "$key" = init.defaultbranch ]; then\n'
    '      "$GIT" check-ref-format --branch "$val" >/dev/null 2>&1 || continue\n'
    "    fi\n"
    f'    "$GIT" config --file {GIT_GLOBAL} --add "$key" "$val" || exit 1\n'
    '  done < <("$GIT" config --global --no-includes --list -z 2>/dev/null)\n'
    "fi\n"
    f"export GIT_CONFIG_GLOBAL={GIT_GLOBAL}\n"
)
GUARD_SOURCE = Path(__file__).resolve().parent / "verifier_guard"
# The guard goes in front of whatever PYTHONPATH the image sets. Python drops a PYTHONPATH entry
# it cannot reach without a word, so the verifier fails closed (no report: a zero) where the guard
# cannot be read by the test's own user: an agent's `chmod 000 /run` made the guard vanish.
VERIFIER_COMMAND = (
    f"[ -r {GUARD_DIR}/sitecustomize.py ] || {{ echo 'trsi: the verifier guard cannot be read' >&2; exit 1; }}\n"
    f"mkdir -p {GUARD_DIR}/git-templates || exit 1\n"
    f"{GIT_GLOBAL_PRELUDE}"
    f'PYTHONPATH="{GUARD_DIR}${{PYTHONPATH:+:$PYTHONPATH}}" bash /tests/test.sh'
)
# pytest looks for its ini file from /tests upwards, so files at the root written by the agent
# would configure the verifier's pytest (plugins, pythonpath, `addopts = --co`, which passes by
# running nothing). The verifier does not see them: every name any pytest version reads.
MASKED_FILES = (
    "/pytest.ini",
    "/.pytest.ini",
    "/pytest.toml",
    "/.pytest.toml",
    "/pyproject.toml",
    "/setup.cfg",
    "/tox.ini",
    "/conftest.py",
    "/setup.py",
)


def run_verifier(sandbox: Sandbox, task: Task) -> VerifierOutcome:
    """Run tests/test.sh in the sandbox's private verifier view and collect its checks."""
    collected: Path | None = None
    try:
        run, collected = sandbox.exec_private(
            VERIFIER_COMMAND,
            timeout=task.verifier_timeout_sec,
            uploads={"/tests": task.tests_dir, GUARD_DIR: GUARD_SOURCE},
            collect="/logs/verifier",
            masks=MASKED_FILES,
            channel="verifier",
            env={**HARDENED_ENV, **task.verifier_env},
        )
        if run.timed_out or collected is None:
            return VerifierOutcome(
                "timeout",
                output=run.output[-4000:],
                duration_s=run.duration_s,
                error=f"verifier exceeded {task.verifier_timeout_sec:g}s",
            )
        try:
            found = collect_checks(collected, run.output)
        except VerifierParseError as exc:
            return VerifierOutcome(
                "error", output=run.output[-4000:], error=str(exc), exit_code=run.exit_code, duration_s=run.duration_s
            )
        return VerifierOutcome(
            "ok",
            tuple(found.checks),
            found.source,
            run.output[-4000:],
            exit_code=run.exit_code,
            duration_s=run.duration_s,
            verdict=found.verdict,
        )
    except SandboxError as exc:
        # In a sandbox that is still alive, a verification that could not be set up or read back
        # failed because of what the agent left there (a file where a directory must be, a tree
        # too deep to remove): a zero. Only a sandbox that died is the machine's fault.
        status: VerifierStatus = "error" if sandbox.alive else "infra"
        return VerifierOutcome(status, error=f"verification failed: {exc}")
    finally:
        if collected is not None:
            shutil.rmtree(collected.parent, ignore_errors=True)
