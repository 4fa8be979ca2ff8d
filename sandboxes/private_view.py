"""The verifier's private view on the local backend: its own mount and pid namespaces.

`build(...)` returns a POSIX sh script and the tar of the uploads it expects on stdin. Run it
with capabilities over the sandbox's namespaces inside `unshare --mount --pid --fork
--mount-proc --propagation private`, by the trusted paths in `tools`: it mounts fresh tmpfs at
every upload destination and at the collect directory, covers masked files, puts /dev's
standard links back (dev_links.py), unpacks the uploads, runs the command with every
capability dropped but those that let root read every file (KEEP_VERIFIER_CAPS) and only
`inner_env` as its environment, kills whatever the command left running in its pid namespace,
then writes a tar of the collect directory to the file descriptor `collect_fd`.

Nothing from the sandbox's writable filesystem runs while capabilities are held: every program
of the script is named by an absolute path that the sandbox mounts read-only from the host, and
the script's own environment is the engine's. By the time it runs, the engine has ended every
process of the agent's turn (`Sandbox.prepare_for_verification`), so nothing can watch the view
through /proc either; what the verifier itself starts lives in its pid namespace and is killed
before the results are read.
"""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sandboxes import dev_links
from sandboxes.base import ExecResult, SandboxError
from sandboxes.shell import real_dir_function, shell_quote

SETUP_FAILED = 96
READY = "TRSI-VIEW-READY\n"
# The verifier keeps only what lets root read and judge every file the agent left: with no
# capability it was a mere owner, and a folder the agent made unreadable (`chmod 0`) hid its
# files from `find` and `grep`, whose errors checks send to /dev/null, so an absence check
# passed. These hold in the sandbox's user namespace only (files of the host's read-only mounts
# are owned by uids it does not map), mount and signal nothing, and are what Docker's root has.
VERIFIER_CAPS = ("dac_override", "dac_read_search", "fowner")
KEEP_VERIFIER_CAPS = (
    "--bounding-set=-all," + ",".join(f"+{c}" for c in VERIFIER_CAPS),
    "--inh-caps=-all",
    "--no-new-privs",
)
TOOLS = ("sh", "bash", "setpriv", "unshare", "mount", "tar", "mkdir", "rm", "ln", "env")


@dataclass(frozen=True)
class PrivateRun:
    script: str
    uploads_tar: bytes
    collect_name: str


def build(
    command: str,
    *,
    uploads: dict[str, Path],
    collect: str,
    masks: tuple[str, ...],
    cwd: str,
    size_mb: int,
    collect_fd: int,
    tools: dict[str, str],
    inner_env: dict[str, str],
) -> PrivateRun:
    """`tools`: absolute, read-only paths of the programs in TOOLS; `inner_env`: the command's
    whole environment (nothing of the script's reaches it)."""
    t = {name: shell_quote(tools[name]) for name in TOOLS}
    dirs = [*uploads, collect]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for dest, src in uploads.items():
            tar.add(Path(src), arcname=dest.strip("/"))
    # Every component of each directory's path is made a real directory: a link or a file the
    # agent left there (at /logs, say) is removed, never followed. The mounted tmpfs then hides
    # whatever the directory held.
    lines: list[str] = [real_dir_function(t["rm"], t["mkdir"])]
    for d in map(shell_quote, dirs):
        lines.append(f"real_dir {d} || {{ echo 'trsi: cannot make '{d} >&2; exit {SETUP_FAILED}; }}")
        lines.append(f"{t['mount']} -t tmpfs -o size={size_mb}m,mode=0755 trsi-private {d} || exit {SETUP_FAILED}")
    # A masked file is covered by an empty one in this view only; the agent's copy stays. A link
    # is removed instead: a mount would follow it (and fail, or cover its target). Nothing is
    # mounted through a link on the way, or a folder the agent swapped for one (/root/.config ->
    # /usr/lib/python3/dist-packages) put the mask on the image's own files; the engine has
    # refused such a link already where something is behind it (tamper.home_configs_elsewhere).
    lines.append(
        'mask() { (p=; IFS=/; set -f; for c in $1; do [ -n "$c" ] || continue; '
        'if [ -n "$p" ] && { [ -L "$p" ] || [ ! -d "$p" ]; }; then exit 0; fi; p="$p/$c"; done; '
        f'if [ -L "$p" ]; then {t["rm"]} -f -- "$p" || exit 1; elif [ -e "$p" ]; then '
        f'{t["mount"]} --bind /dev/null "$p" 2>/dev/null || '
        f'{t["mount"]} -t tmpfs -o size=4k,mode=0555 trsi-mask "$p" || exit 1; fi) }}'
    )
    for m in map(shell_quote, masks):
        lines.append(f"mask {m} || exit {SETUP_FAILED}")
    inner = f"cd -- {shell_quote(cwd)} || exit 1\n{command}"
    env_words = " ".join(shell_quote(f"{k}={v}") for k, v in inner_env.items())
    # With collect_fd 1, the command's output goes to stderr.
    keep_collect_clean = ">&2" if collect_fd == 1 else f"{collect_fd}>&-"
    parent, name = os.path.split(collect.rstrip("/"))
    # /dev's links as the sandbox had them: the agent may have pointed /dev/fd at its own files.
    lines.append(dev_links.restore_script(t["rm"], t["ln"], f"exit {SETUP_FAILED}"))
    lines += [
        f"{t['tar']} -x --no-same-owner -C / || exit {SETUP_FAILED}",
        # The view is ready: said on the results' channel, which the command cannot write to,
        # so no exit code of the command's can pass for a failed set-up.
        f"printf '{READY.strip()}\\n' >&{collect_fd}",
        f"{t['setpriv']} {' '.join(KEEP_VERIFIER_CAPS)} {t['env']} -i {env_words} "
        f"{t['bash']} --noprofile --norc -c {shell_quote(inner)} </dev/null {keep_collect_clean}",
        "rc=$?",
        # This shell is pid 1 of the verifier's pid namespace: kill(-1) ends everything the
        # command left behind (a daemon of the program under test), before the results are read.
        "kill -KILL -1 2>/dev/null",
        f"{t['tar']} -c -C {shell_quote(parent or '/')} -- {shell_quote(name)} >&{collect_fd}",
        "exit $rc",
    ]
    return PrivateRun("\n".join(lines) + "\n", buf.getvalue(), name)


def finish(result: ExecResult, collected: bytes, run: PrivateRun) -> tuple[ExecResult, Path | None]:
    """The end of a private run: an error if the view was never ready, no results after a
    timeout, else a host copy of the collected directory."""
    if not collected.startswith(READY.encode()):
        raise SandboxError(f"private verifier view failed: {result.output.strip()[-300:]}")
    if result.timed_out:
        return result, None
    return result, unpack(collected[len(READY) :], run.collect_name)


def unpack(collected: bytes, name: str) -> Path:
    out = Path(tempfile.mkdtemp(prefix="trsi-collect-"))
    try:
        with tarfile.open(fileobj=io.BytesIO(collected), mode="r") as tar:
            tar.extractall(out, filter="data")
    except tarfile.TarError as exc:
        raise SandboxError(f"could not read the verifier's results back: {exc}") from None
    return out / name
