"""The engine's own programs inside containers: a static busybox the host bind-mounts read-only.

Nothing from a container's filesystem runs for the engine. Every program the engine starts in a
container (pid 1, `timeout`, the verifier's preparation) is this busybox, called by absolute
path under ENGINE_TOOLS, from a host directory that only this user can write.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
from pathlib import Path

from sandboxes.base import SandboxUnavailable

ENGINE_TOOLS = "/.trsi-engine"
BUSYBOX = f"{ENGINE_TOOLS}/busybox"
# The same busybox, executable but not readable (mode 0111): what the container's pid 1 runs, as
# INIT_USER. A process that execs a file it cannot read is not dumpable, so no process of the
# agent (root, or root turned INIT_USER) may ptrace it or write its memory through /proc/1/mem:
# the kernel asks CAP_SYS_PTRACE for that, which Docker's default set lacks. Run as root, pid 1
# could read its binary, stay dumpable, and be made to run the agent's code next to the verifier.
BUSYBOX_INIT = f"{ENGINE_TOOLS}/busybox-init"
INIT_USER = "65534:65534"
BUSYBOX_HINT = (
    "the Docker backend needs a statically linked busybox on this machine, to run the engine's "
    "own helpers inside containers from a read-only mount: `sudo apt-get install busybox-static` "
    "(Debian/Ubuntu) or `sudo dnf install busybox` (Fedora)"
)


def _is_static_elf(path: str) -> bool:
    """An ELF executable without a program interpreter (PT_INTERP) needs no library from the
    container: it runs the same whatever the agent did to /lib."""
    import struct

    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
            if head[:4] != b"\x7fELF" or head[4] != 2:  # 64-bit only
                return False
            phoff, phentsize, phnum = struct.unpack_from("<Q", head, 32)[0], *struct.unpack_from("<HH", head, 54)
            fh.seek(phoff)
            table = fh.read(phentsize * phnum)
    except (OSError, struct.error):
        return False
    return all(struct.unpack_from("<I", table, i * phentsize)[0] != 3 for i in range(phnum))


@functools.cache
def engine_tools_dir() -> str:
    """A host directory holding only a static busybox, owned by this user and not writable by
    others, bind-mounted read-only into every container at ENGINE_TOOLS."""
    import hashlib
    import tempfile

    found = shutil.which("busybox") or ("/bin/busybox" if os.path.exists("/bin/busybox") else None)
    if not found or not _is_static_elf(os.path.realpath(found)):
        raise SandboxUnavailable(BUSYBOX_HINT)
    data = Path(os.path.realpath(found)).read_bytes()
    digest = hashlib.sha256(data).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / f"trsi-engine-tools-{os.geteuid()}-{digest}"
    try:
        target.mkdir(mode=0o755)
    except FileExistsError:
        pass
    st = os.lstat(target)
    # Someone else's directory (or a link) at that name: use a fresh one instead.
    if not os.path.isdir(target) or os.path.islink(target) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        target = Path(tempfile.mkdtemp(prefix="trsi-engine-tools-"))
        os.chmod(target, 0o755)
    binary = target / "busybox"
    if not binary.is_file() or binary.read_bytes() != data:
        _install(target, "busybox", data, 0o755)
    init = target / "busybox-init"  # not readable, even by us: the directory is ours alone
    st = os.lstat(init) if init.exists() else None
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_size != len(data) or stat.S_IMODE(st.st_mode) != 0o111:
        _install(target, "busybox-init", data, 0o111)
    return str(target)


def _install(target: Path, name: str, data: bytes, mode: int) -> None:
    tmp = target / f".{name}.{os.getpid()}"
    tmp.write_bytes(data)
    os.chmod(tmp, mode)
    os.replace(tmp, target / name)
