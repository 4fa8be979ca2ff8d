"""Images for Docker sandboxes, all built offline-friendly.

- The base image (`trsi-tui/base:bookworm`) is a debootstrap of Debian imported with
  `docker import`: no registry pull anywhere.
- A task's environment/Dockerfile is built once and cached under a tag derived from the hash of
  its build context, so an unchanged task never rebuilds.
- Aliases map image names that cannot be pulled here (`ubuntu:24.04`, digest-pinned references)
  to local images; FROM lines are rewritten through them before a build.
"""

from __future__ import annotations

import hashlib
import io
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from sandboxes.base import SandboxError, SandboxUnavailable

BASE_IMAGE = "trsi-tui/base:bookworm"
TASK_IMAGE_REPO = "trsi-tui/task"
LABEL = "trsi-tui"
BASE_PACKAGES = (
    "bash,coreutils,python3,python3-pytest,git,sqlite3,procps,util-linux,less,file,tar,gzip,xz-utils,"
    "findutils,grep,sed,gawk,diffutils,patch,make,ca-certificates,curl"
)
DEBIAN_MIRROR = "http://deb.debian.org/debian"
_FROM = re.compile(r"^(\s*FROM\s+(?:--platform=\S+\s+)?)(\S+)(.*)$", re.IGNORECASE | re.MULTILINE)


def client():
    try:
        import docker  # the Docker SDK
    except ImportError:
        raise SandboxUnavailable("the Docker backend needs the Docker SDK: pip install docker") from None
    try:
        c = docker.from_env(timeout=120)
        c.ping()
        return c
    except Exception as exc:  # noqa: BLE001 - any failure here means "no usable engine"
        raise SandboxUnavailable(
            f"no Docker engine answers ({exc}). Install and start one, for example "
            "`sudo apt-get install docker.io && sudo dockerd --bridge=none --iptables=false &`"
        ) from None


def resolve_alias(name: str, aliases: dict[str, str]) -> str:
    if name in aliases:
        return aliases[name]
    bare = name.split("@", 1)[0]  # digest-pinned: the alias may name the image without the digest
    return aliases.get(bare, name)


def rewrite_from_lines(dockerfile: str, aliases: dict[str, str]) -> str:
    return _FROM.sub(lambda m: f"{m.group(1)}{resolve_alias(m.group(2), aliases)}{m.group(3)}", dockerfile)


def context_hash(context: Path, aliases: dict[str, str]) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in context.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(context)).encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    h.update(repr(sorted(aliases.items())).encode())
    return h.hexdigest()[:16]


def image_exists(name: str) -> bool:
    import docker

    try:
        client().images.get(name)
        return True
    except docker.errors.ImageNotFound:
        return False


def task_image(environment_dir: Path | None, docker_image: str | None, aliases: dict[str, str]) -> str:
    """The local image a task runs in, building its Dockerfile if needed."""
    dockerfile = environment_dir / "Dockerfile" if environment_dir else None
    if dockerfile is not None and dockerfile.is_file():
        return build_task_image(environment_dir, aliases)  # type: ignore[arg-type]
    name = resolve_alias(docker_image, aliases) if docker_image else BASE_IMAGE
    if not image_exists(name):
        hint = ("run `trsi-tui sandbox build-base`" if name == BASE_IMAGE
                else f"add an alias for {docker_image!r} under [sandbox.docker.aliases] in the config")
        raise SandboxError(f"image {name!r} is not available locally and cannot be pulled here: {hint}")
    return name


def build_task_image(context: Path, aliases: dict[str, str]) -> str:
    tag = f"{TASK_IMAGE_REPO}:{context_hash(context, aliases)}"
    if image_exists(tag):
        return tag
    text = rewrite_from_lines((context / "Dockerfile").read_text(), aliases)
    with tempfile.TemporaryDirectory(prefix="trsi-build-") as tmp:
        shutil.copytree(context, tmp, dirs_exist_ok=True)
        (Path(tmp) / "Dockerfile").write_text(text)
        try:
            # The default bridge is off on this kind of machine: builds that fetch packages use the
            # host's network, while the sandboxes themselves run with networking off.
            client().images.build(path=tmp, tag=tag, network_mode="host", pull=False, rm=True,
                                  labels={LABEL: "task-image"})
        except Exception as exc:  # noqa: BLE001 - build errors come in several SDK types
            raise SandboxError(f"building {context / 'Dockerfile'} failed: {exc}") from None
    return tag


def build_base_image(mirror: str = DEBIAN_MIRROR, suite: str = "bookworm", log=print) -> str:
    """debootstrap Debian into a temp dir and `docker import` it as the base image."""
    if shutil.which("debootstrap") is None:
        raise SandboxUnavailable("building the base image needs debootstrap: sudo apt-get install debootstrap")
    with tempfile.TemporaryDirectory(prefix="trsi-rootfs-") as root:
        log(f"debootstrap {suite} from {mirror} (a few minutes)...")
        subprocess.run(["debootstrap", "--variant=minbase", f"--include={BASE_PACKAGES}", suite, root, mirror],
                       check=True, stdout=subprocess.DEVNULL)
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            shutil.rmtree(Path(root) / junk, ignore_errors=True)
            (Path(root) / junk).mkdir(parents=True, exist_ok=True)
        log("docker import ...")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(root, arcname=".")
        proc = subprocess.run(
            ["docker", "import", "--change", "CMD [\"/bin/bash\"]", "--change", "WORKDIR /app",
             "--change", f"LABEL {LABEL}=base", "-", BASE_IMAGE],
            input=buf.getvalue(), capture_output=True,
        )
        if proc.returncode != 0:
            raise SandboxError(f"docker import failed: {proc.stderr.decode(errors='replace')}")
    return BASE_IMAGE
