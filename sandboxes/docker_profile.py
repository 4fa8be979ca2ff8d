"""What sandboxes need to know of an image (its WORKDIR, ENV names, USER, bash, root's HOME),
probed once per image, before any agent ran in a container of it."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from sandboxes.base import SandboxError
from sandboxes.docker_images import client

log = logging.getLogger(__name__)

_PROBE = "echo bash=$(command -v bash); echo ---passwd; cat /etc/passwd; echo ---group; cat /etc/group"


@dataclass(frozen=True)
class ImageProfile:
    """What sandboxes need to know of an image, probed once per image."""

    workdir: str  # the image's WORKDIR ('' when unset)
    env_keys: frozenset[str]  # names the image's ENV sets
    uid: int = 0  # the image's USER, resolved
    gid: int = 0
    home: str = "/root"
    user: str = ""  # the image's USER as written (docker exec resolves it, supplementary groups too)
    bash: str = "/bin/bash"  # where the image has bash, looked up before any agent ran
    # root's HOME in the image's /etc/passwd, read before any agent ran: given to every root exec,
    # since `docker exec` would read it from the container's /etc/passwd, which the agent can edit
    # (and so move the verifier's HOME, and the ~/.local/bin/env it sources, to a folder of its own).
    root_home: str = "/root"
    # The image's PATH (`ENV PATH=/opt/venv/bin:$PATH`): the verifier runs the programs there.
    path: tuple[str, ...] = ()

    @property
    def as_root(self) -> bool:
        return self.uid == 0


_profiles: dict[str, ImageProfile] = {}
_profiles_lock = threading.Lock()


def image_profile(image: str) -> ImageProfile:
    with _profiles_lock:
        if image not in _profiles:
            _profiles[image] = _probe_image(image)
        return _profiles[image]


def _probe_image(image: str) -> ImageProfile:
    try:
        config = client().images.get(image).attrs.get("Config") or {}
    except Exception as exc:  # noqa: BLE001 - the SDK raises several types for one failure
        raise SandboxError(f"cannot inspect image {image}: {exc}") from None
    env_keys = frozenset(e.split("=", 1)[0] for e in config.get("Env") or [])
    workdir = config.get("WorkingDir") or ""
    try:
        out = (
            client()
            .containers.run(image, entrypoint=["/bin/sh", "-c", _PROBE], user="0:0", network_mode="none", remove=True)
            .decode(errors="replace")
        )
    except Exception:  # no /bin/sh, or a broken image: no private view, no user lookup
        log.warning("probing image %s failed; its USER and bash are taken as written", image, exc_info=True)
        out = ""
    bash = next((line[5:] for line in out.splitlines() if line.startswith("bash=/")), "/bin/bash")
    passwd = out.split("---passwd", 1)[-1].split("---group", 1)[0] if "---passwd" in out else ""
    group = out.split("---group", 1)[-1] if "---group" in out else ""
    user = config.get("User") or ""
    uid, gid, home, _ = resolve_user(user, passwd, group)
    root_home = next(
        (e[5] for e in (line.split(":") for line in passwd.splitlines()) if len(e) >= 7 and e[2] == "0"), ""
    )
    path = next((e[5:] for e in config.get("Env") or [] if e.startswith("PATH=")), "")
    return ImageProfile(
        workdir,
        env_keys,
        uid,
        gid,
        home,
        user if uid != 0 else "",
        bash,
        root_home or "/root",
        tuple(d for d in path.split(":") if d.startswith("/")),
    )


def resolve_user(user: str, passwd: str, group: str) -> tuple[int, int, str, bool]:
    """An image's USER (`name`, `uid`, `name:group`, `uid:gid`) as (uid, gid, home, in passwd)."""
    if not user:
        return 0, 0, "/root", True
    name, _, grp = user.partition(":")
    entries = [line.split(":") for line in passwd.splitlines() if line.count(":") >= 6]
    match = next((e for e in entries if e[0] == name or (name.isdigit() and e[2] == name)), None)
    if match is None and not name.isdigit():
        raise SandboxError(f"the image's USER {user!r} is not in its /etc/passwd")
    uid = int(match[2]) if match else int(name)
    gid = int(match[3]) if match else uid
    home = match[5] if match else "/"
    if grp:
        groups = [line.split(":") for line in group.splitlines() if line.count(":") >= 3]
        g = next((e for e in groups if e[0] == grp or (grp.isdigit() and e[2] == grp)), None)
        if g is None and not grp.isdigit():
            raise SandboxError(f"the image's USER {user!r} names a group missing from its /etc/group")
        gid = int(g[2]) if g else int(grp)
    return uid, gid, home, match is not None
