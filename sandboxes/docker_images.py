"""Images for Docker sandboxes, all built offline-friendly.

- The base images are debootstraps of Debian imported with `docker import`: no registry pull
  anywhere. `trsi-tui/base:bookworm` is the default; the `python` flavour
  (`trsi-tui/python:bookworm`: python3, pip, venv, `python` and `pip` on PATH, no
  externally-managed marker) stands in for `python:3.x-slim`. A CA bundle can be baked in so that
  pip and apt inside sandboxes trust a proxy that re-signs TLS.
- A task's environment/Dockerfile is built once and cached under a tag derived from the hash of
  its build context, so an unchanged task never rebuilds. A failed build is remembered for that
  hash (its log tail is the error) until the task changes or `forget_build_failure` is called.
- The build context is untrusted (it comes from a task folder): a symbolic link in it that
  leaves the context, or a FIFO, socket or device, is refused before anything is hashed, copied
  or sent; links that stay inside are hashed by their target's name and copied as links, so
  neither the hash nor the image ever holds a host file.
- Aliases map image names that cannot be pulled here (`ubuntu:24.04`, digest-pinned references)
  to local images; FROM lines are rewritten through them before a build.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from sandboxes.base import SandboxError, SandboxUnavailable

log = logging.getLogger(__name__)

BASE_IMAGE = "trsi-tui/base:bookworm"
PYTHON_IMAGE = "trsi-tui/python:bookworm"
TASK_IMAGE_REPO = "trsi-tui/task"
LABEL = "trsi-tui"
# Set on every stage of a task build (a LABEL line after each FROM): a container left by a failed
# step carries it, so `trsi-tui sandbox cleanup` can find build leftovers. Sandboxes override it.
BUILD_LABEL_VALUE = "task-build"
BASE_PACKAGES = (
    "bash,coreutils,python3,python3-pytest,git,sqlite3,procps,util-linux,less,file,tar,gzip,xz-utils,"
    "findutils,grep,sed,gawk,diffutils,patch,make,ca-certificates,curl"
)
BUILD_LOG_TAIL = 30  # lines of the build log kept in a failed build's error
# The engine colours a step's stderr; an error message carries plain text.
_TERMINAL_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|[\x00-\x08\x0b-\x1f\x7f]")


@dataclass(frozen=True)
class Flavour:
    image: str
    packages: str  # debootstrap --include
    # Commands run in the new root (chroot) before import, and ENV lines for the image.
    finish: tuple[str, ...] = ()
    env: tuple[str, ...] = ()


FLAVOURS = {
    "base": Flavour(BASE_IMAGE, BASE_PACKAGES),
    "python": Flavour(
        PYTHON_IMAGE,
        BASE_PACKAGES + ",python3-pip,python3-venv,python3-dev,python-is-python3",
        # python:3.x-slim lets `pip install` write to the system interpreter; Debian's marker
        # (PEP 668) would refuse it. `pip` on PATH as in the official image.
        finish=(
            "rm -f /usr/lib/python3*/EXTERNALLY-MANAGED",
            "[ -e /usr/local/bin/pip ] || ln -s /usr/bin/pip3 /usr/local/bin/pip",
        ),
        env=("PYTHONDONTWRITEBYTECODE=1",),
    ),
}
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
    """The build context's content, never read through a link: a link counts by its target's name."""
    h = hashlib.sha256()
    for path in _context_entries(context):
        h.update(str(path.relative_to(context)).encode() + b"\0")
        if path.is_symlink():
            h.update(b"L" + os.readlink(path).encode() + b"\0")
        elif path.is_file():
            with path.open("rb") as f:  # in pieces: a task may hold a gigabyte
                while chunk := f.read(1 << 20):
                    h.update(chunk)
            h.update(b"\0")
    h.update(repr(sorted(aliases.items())).encode())
    return h.hexdigest()[:16]


def _context_entries(context: Path) -> list[Path]:
    """Every path under `context`, sorted; linked folders are listed, never entered."""
    entries: list[Path] = []
    for directory, dirs, files in os.walk(context):  # followlinks=False
        entries += [Path(directory) / name for name in dirs + files]
    return sorted(entries)


def check_context(context: Path) -> None:
    """Refuse a build context that would carry a host file into the image: a symbolic link that
    is absolute or resolves outside `context` (Docker cannot use anything outside it anyway), or
    a FIFO, socket or device. Raises SandboxError naming the path."""
    real = os.path.realpath(context)
    for path in _context_entries(context):
        if path.is_symlink():
            target = os.readlink(path)
            lexical = os.path.normpath(os.path.join(os.path.relpath(path.parent, context), target))
            resolved = os.path.realpath(path)
            inside = resolved == real or resolved.startswith(real.rstrip(os.sep) + os.sep)
            if os.path.isabs(target) or lexical == ".." or lexical.startswith(".." + os.sep) or not inside:
                raise SandboxError(
                    f"{path} is a symbolic link to {target!r}, outside the build context {context}; "
                    "a task's files must not point outside it"
                )
        elif not (path.is_dir() or path.is_file()):
            raise SandboxError(f"{path} in the build context is not a regular file or folder")


def image_exists(name: str) -> bool:
    import docker

    try:
        client().images.get(name)
        return True
    except docker.errors.ImageNotFound:
        return False


def task_image(
    environment_dir: Path | None,
    docker_image: str | None,
    aliases: dict[str, str],
    failures_dir: Path | None = None,
    network: bool = False,
) -> str:
    """The local image a task runs in, building its Dockerfile if needed (with the network only
    if `network`: the user's [sandbox] allow_internet)."""
    dockerfile = environment_dir / "Dockerfile" if environment_dir else None
    if dockerfile is not None and dockerfile.is_file():
        return build_task_image(environment_dir, aliases, failures_dir, network=network)  # type: ignore[arg-type]
    name = resolve_alias(docker_image, aliases) if docker_image else BASE_IMAGE
    if not image_exists(name):
        raise SandboxError(
            f"image {name!r} is not available locally and cannot be pulled here: "
            f"{missing_image_hint(docker_image or name)}"
        )
    return name


def missing_image_hint(name: str) -> str:
    """What to do about an image that is neither local nor aliased."""
    if name == BASE_IMAGE:
        return "run `trsi-tui sandbox build-base`"
    repo = name.split("@", 1)[0].rsplit("/", 1)[-1]
    target = PYTHON_IMAGE if repo.startswith("python:") or repo == "python" else BASE_IMAGE
    build = "build-base --flavour python" if target == PYTHON_IMAGE else "build-base"
    return (
        f"add an alias under [sandbox.docker.aliases] in the config, for example "
        f'"{name.split("@", 1)[0]}" = "{target}" (built by `trsi-tui sandbox {build}`)'
    )


NO_BUILD_NETWORK = (
    "(the build had no network: set [sandbox] allow_internet = true in the config to build with the "
    "host's network, which lets a task's Dockerfile reach the host's own services too)\n"
)
_failed_builds: dict[str, str] = {}  # tag -> the error, for this process
_failed_lock = threading.Lock()


def _failure_file(failures_dir: Path | None, tag: str) -> Path | None:
    return failures_dir / (tag.split(":", 1)[1] + ".txt") if failures_dir is not None else None


def forget_build_failure(context: Path, aliases: dict[str, str], failures_dir: Path | None = None) -> bool:
    """Forget that the build of `context` failed (the user asked for a rebuild); True if it had."""
    tag = f"{TASK_IMAGE_REPO}:{context_hash(context, aliases)}"
    with _failed_lock:
        known = _failed_builds.pop(tag, None) is not None
    f = _failure_file(failures_dir, tag)
    if f is not None and f.is_file():
        f.unlink()
        known = True
    return known


def build_task_image(
    context: Path, aliases: dict[str, str], failures_dir: Path | None = None, *, network: bool = False
) -> str:
    """Build (once) the image of a task's environment/ and return its tag.

    A failed build raises SandboxError with the tail of the build log, and is remembered for
    this build context: later episodes of the task fail at once instead of rebuilding, until the
    task changes or the failure is forgotten (`trsi-tui sandbox rebuild`). `failures_dir` keeps
    that memory across processes."""
    check_context(context)  # before the hash, the copy or the engine read anything in it
    tag = f"{TASK_IMAGE_REPO}:{context_hash(context, aliases)}"
    if image_exists(tag):
        return tag
    remembered = _remembered_failure(tag, failures_dir)
    if remembered:
        raise SandboxError(remembered)
    text = rewrite_from_lines((context / "Dockerfile").read_text(), aliases)
    missing = [name for name in base_images(text) if not image_exists(name)]
    if missing:  # a build would try to pull it: never reach for a registry, say what to do instead
        raise SandboxError(
            f"building {context / 'Dockerfile'}: base image {missing[0]!r} is not available "
            f"locally and cannot be pulled here: {missing_image_hint(missing[0])}"
        )
    text = _label_stages(text)
    with tempfile.TemporaryDirectory(prefix="trsi-build-") as tmp:
        # Links as links (check_context kept them inside); the Dockerfile replaced, not written through.
        shutil.copytree(context, tmp, dirs_exist_ok=True, symlinks=True)
        (Path(tmp) / "Dockerfile").unlink(missing_ok=True)
        (Path(tmp) / "Dockerfile").write_text(text)
        try:
            # A task's Dockerfile is untrusted: with the host's network (the default bridge is off
            # on this kind of machine) its RUN steps reach the host's own services on 127.0.0.1,
            # so a build gets a network only with the user's consent. forcerm: a failed step's
            # container is removed too.
            client().images.build(
                path=tmp,
                tag=tag,
                network_mode="host" if network else "none",
                pull=False,
                rm=True,
                forcerm=True,
                labels={LABEL: "task-image"},
            )
        except Exception as exc:  # noqa: BLE001 - build errors come in several SDK types
            message = (
                f"building {context / 'Dockerfile'} failed: {_first_line(exc)}\n"
                f"{_build_log_tail(exc)}\n"
                + ("" if network else NO_BUILD_NETWORK)
                + "(remembered for this task until it changes; `trsi-tui sandbox rebuild "
                f"{context.parent}` tries again)"
            )
            log.warning("%s", message)
            _remember_failure(tag, message, failures_dir)
            raise SandboxError(message) from None
    return tag


def base_images(dockerfile: str) -> list[str]:
    """The images a Dockerfile's FROM lines name, less `scratch`, earlier stages and build args."""
    stages: set[str] = set()
    images: list[str] = []
    for m in _FROM.finditer(dockerfile):
        name, rest = m.group(2), m.group(3).split()
        if name.lower() != "scratch" and name not in stages and "$" not in name:
            images.append(name)
        if len(rest) >= 2 and rest[0].lower() == "as":
            stages.add(rest[1])
    return images


def _label_stages(dockerfile: str) -> str:
    return _FROM.sub(lambda m: f"{m.group(0)}\nLABEL {LABEL}={BUILD_LABEL_VALUE}", dockerfile)


def _first_line(exc: Exception) -> str:
    text = str(getattr(exc, "msg", "") or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _build_log_tail(exc: Exception) -> str:
    """The last lines the build printed (the SDK's BuildError carries the whole log)."""
    lines: list[str] = []
    for entry in getattr(exc, "build_log", None) or []:
        if isinstance(entry, dict):
            text = entry.get("stream") or entry.get("error") or ""
            if isinstance(entry.get("errorDetail"), dict) and not text:
                text = entry["errorDetail"].get("message", "")
            lines += [line for line in str(text).splitlines() if line.strip()]
    lines = [line for line in (_TERMINAL_CONTROL.sub("", line).rstrip() for line in lines) if line.strip()]
    if not lines:
        return "(the engine returned no build log)"
    return "build log (last lines):\n" + "\n".join("  " + line for line in lines[-BUILD_LOG_TAIL:])


def _remembered_failure(tag: str, failures_dir: Path | None) -> str:
    with _failed_lock:
        if tag in _failed_builds:
            return _failed_builds[tag]
    f = _failure_file(failures_dir, tag)
    if f is not None and f.is_file():
        text = f.read_text(errors="replace")
        with _failed_lock:
            _failed_builds[tag] = text
        return text
    return ""


def _remember_failure(tag: str, message: str, failures_dir: Path | None) -> None:
    with _failed_lock:
        _failed_builds[tag] = message
    f = _failure_file(failures_dir, tag)
    if f is not None:
        try:
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(message)
        except OSError:
            log.exception("could not record the failed build in %s", f)


def remove_build_leftovers() -> int:
    """Remove stopped containers left by task image builds (a failed step's, or a killed build's)."""
    removed = 0
    for container in client().containers.list(all=True, filters={"label": f"{LABEL}={BUILD_LABEL_VALUE}"}):
        if container.status in ("created", "exited", "dead"):
            container.remove(force=True)
            removed += 1
    return removed


def build_base_image(
    mirror: str = DEBIAN_MIRROR,
    suite: str = "bookworm",
    log=print,
    flavour: str = "base",
    ca_bundle: Path | None = None,
) -> str:
    """debootstrap Debian into a temp dir and `docker import` it as the flavour's image; with
    `ca_bundle`, its certificates are then trusted inside (see `trust_ca_bundle`)."""
    if flavour not in FLAVOURS:
        raise SandboxError(f"unknown base flavour {flavour!r}; choose one of {', '.join(FLAVOURS)}")
    spec = FLAVOURS[flavour]
    pem = read_ca_bundle(ca_bundle) if ca_bundle is not None else b""
    if shutil.which("debootstrap") is None:
        raise SandboxUnavailable("building the base image needs debootstrap: sudo apt-get install debootstrap")
    with tempfile.TemporaryDirectory(prefix="trsi-rootfs-") as root:
        log(f"debootstrap {suite} ({flavour}) from {mirror} (a few minutes)...")
        subprocess.run(
            ["debootstrap", "--variant=minbase", f"--include={spec.packages}", suite, root, mirror],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        for command in spec.finish:
            subprocess.run(["chroot", root, "/bin/sh", "-c", command], check=True)
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            shutil.rmtree(Path(root) / junk, ignore_errors=True)
            (Path(root) / junk).mkdir(parents=True, exist_ok=True)
        log("docker import ...")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(root, arcname=".")
        changes = [
            'CMD ["/bin/bash"]',
            "WORKDIR /app",
            f"LABEL {LABEL}=base",
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "ENV LANG=C.UTF-8",
        ]
        changes += [f"ENV {e}" for e in spec.env]
        argv = ["docker", "import"]
        for change in changes:
            argv += ["--change", change]
        proc = subprocess.run([*argv, "-", spec.image], input=buf.getvalue(), capture_output=True)
        if proc.returncode != 0:
            raise SandboxError(f"docker import failed: {proc.stderr.decode(errors='replace')}")
    if pem:
        log("adding the CA bundle ...")
        trust_ca_bundle(spec.image, pem, spec.image)
    return spec.image


def read_ca_bundle(path: Path) -> bytes:
    try:
        pem = Path(path).read_bytes()
    except OSError as exc:
        raise SandboxError(f"cannot read the CA bundle {path}: {exc.strerror}") from None
    if b"-----BEGIN CERTIFICATE-----" not in pem:
        raise SandboxError(f"{path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
    return pem


CA_STORE = "/etc/ssl/certs/ca-certificates.crt"


def trust_ca_bundle(image: str, pem: bytes, tag: str) -> str:
    """A layer on `image`, tagged `tag`, whose trust store also holds the certificates in `pem`, and
    whose pip, requests, curl and OpenSSL use that store: for a proxy that re-signs TLS."""
    dockerfile = (
        f"FROM {image}\nCOPY trsi-extra-ca.crt /usr/local/share/ca-certificates/trsi-extra-ca.crt\n"
        "RUN update-ca-certificates >/dev/null\n"
        f"ENV PIP_CERT={CA_STORE} REQUESTS_CA_BUNDLE={CA_STORE} SSL_CERT_FILE={CA_STORE} "
        f"CURL_CA_BUNDLE={CA_STORE}\n"
    )
    with tempfile.TemporaryDirectory(prefix="trsi-ca-") as tmp:
        (Path(tmp) / "Dockerfile").write_text(dockerfile)
        (Path(tmp) / "trsi-extra-ca.crt").write_bytes(pem)
        try:
            client().images.build(path=tmp, tag=tag, network_mode="none", pull=False, rm=True, forcerm=True)
        except Exception as exc:  # noqa: BLE001 - build errors come in several SDK types
            raise SandboxError(
                f"adding the CA bundle to {image} failed: {_first_line(exc)}\n{_build_log_tail(exc)}"
            ) from None
    return tag
