"""What travels to cluster workers, and how: task folders and model files through Ray's object store.

Nothing assumes a shared filesystem. The head packs each task folder (a tar, small) and each
model file a spec names (a GGUF base, a LoRA adapter) once, keyed by content digest, and puts
the bytes in the object store. A node unpacks each digest once into its cache
(`<cache>/cluster/`), shared by every worker on that node, so a base GGUF crosses the network
once per node and an adapter once per update. The bundled model is not shipped at all: every
node with trsi-tui's model extra has it installed.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tarfile
import tempfile
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from engine.policy import parse_model_spec
from engine.tasks import Task


class ShippingError(RuntimeError):
    """A task or model cannot be sent to the cluster's workers."""


@dataclass(frozen=True)
class Shipped:
    """One file or folder in the object store: `ref` is the Ray ObjectRef of its bytes."""

    digest: str
    name: str
    ref: object


@dataclass(frozen=True)
class ShippedTask:
    task: Task  # as loaded on the head; its path is replaced by the node's copy
    folder: Shipped


@dataclass(frozen=True)
class ShippedModel:
    """A model spec whose files travel: `template` holds `{0}`, `{1}`... where their node paths go."""

    spec: str  # as the head wrote it; also the name episodes record
    template: str
    files: tuple[Shipped, ...]

    @property
    def digest(self) -> str:
        """What identifies the checkpoint a worker serves: the spec with its files' contents."""
        h = hashlib.sha256(self.template.encode())
        for f in self.files:
            h.update(f.digest.encode())
        return h.hexdigest()[:16]


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def pack_folder(path: Path) -> bytes:
    """A deterministic tar of a folder (sorted names, no owners or times), so equal folders have
    equal digests."""
    buf = io.BytesIO()

    def clean(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = 0
        return info

    with tarfile.open(fileobj=buf, mode="w") as tar:
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(dirs) + sorted(files):
                full = Path(root) / name
                if full.is_symlink() or full.is_file() or full.is_dir():
                    tar.add(full, arcname=str(full.relative_to(path)), recursive=False, filter=clean)
    return buf.getvalue()


def model_files(spec: str) -> tuple[str, list[Path]]:
    """(template, files): the files a GGUF spec reads, replaced by `{i}` in the template. The
    bundled model is installed on every node, so only its adapter travels."""
    parsed = parse_model_spec(spec)
    if parsed.kind == "openai":
        return spec.replace("{", "{{").replace("}", "}}"), []
    if parsed.kind == "hf":
        raise ShippingError(
            f"{spec!r}: cluster workers serve GGUF models (bundled:, gguf:) and OpenAI-compatible servers; "
            "export the checkpoint to GGUF first"
        )
    base, *options = parsed.target.split("+")
    files: list[Path] = []
    parts = []
    if parsed.kind == "gguf":
        files.append(Path(base).expanduser())
        parts.append("{0}")
    else:
        parts.append(base.replace("{", "{{").replace("}", "}}"))
    for opt in options:
        key, _, value = opt.partition("=")
        files.append(Path(value).expanduser())
        parts.append(f"{key}={{{len(files) - 1}}}")
    return f"{parsed.kind}:" + "+".join(parts), files


class Shipper:
    """The head's side: each digest is put in the object store once and its ref kept (a ref
    that is dropped lets Ray free the bytes)."""

    def __init__(self, put: Callable[[bytes], object]) -> None:
        self._put = put
        self._by_digest: dict[str, Shipped] = {}
        # (path, size, mtime) -> digest: a 100 MB GGUF is hashed once, not per episode.
        self._digests: dict[tuple[str, int, int], str] = {}
        self._lock = threading.Lock()

    def _ship(self, digest: str, name: str, data: Callable[[], bytes]) -> Shipped:
        with self._lock:
            found = self._by_digest.get(digest)
            if found is None:
                found = self._by_digest[digest] = Shipped(digest, name, self._put(data()))
            return found

    def task(self, task: Task) -> ShippedTask:
        data = pack_folder(task.path)
        digest = hashlib.sha256(data).hexdigest()
        return ShippedTask(task, self._ship(digest, task.path.name, lambda: data))

    def model(self, spec: str) -> ShippedModel:
        template, paths = model_files(spec)
        shipped = []
        for path in paths:
            if not path.is_file():
                raise ShippingError(f"{spec!r}: {path} is not a file")
            st = path.stat()
            key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
            with self._lock:
                digest = self._digests.get(key)
            if digest is None:
                digest = file_digest(path)
                with self._lock:
                    self._digests[key] = digest
            shipped.append(self._ship(digest, path.name, path.read_bytes))
        return ShippedModel(spec, template, tuple(shipped))


class NodeCache:
    """A node's side: digests unpacked under `root`, once per node (workers of one node share
    it; a finished copy appears by an atomic rename, so a half-written one is never read)."""

    def __init__(self, root: Path, get: Callable[[object], bytes]) -> None:
        self.root = Path(root)
        self._get = get
        self._lock = threading.Lock()

    def _materialize(self, shipped: Shipped, write: Callable[[bytes, Path], None]) -> Path:
        final = self.root / shipped.digest[:32] / shipped.name
        if final.exists():
            return final
        with self._lock:
            if final.exists():
                return final
            final.parent.parent.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=".incoming-", dir=self.root))
            write(self._get(shipped.ref), staging / shipped.name)
            try:
                os.rename(staging, final.parent)
            except OSError:  # another worker of this node got there first
                shutil.rmtree(staging, ignore_errors=True)
                if not final.exists():
                    raise
        return final

    def task(self, shipped: ShippedTask) -> Task:
        def unpack(data: bytes, dest: Path) -> None:
            dest.mkdir()
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                tar.extractall(dest, filter="data")

        return replace(shipped.task, path=self._materialize(shipped.folder, unpack))

    def model(self, shipped: ShippedModel) -> str:
        """The spec with the node's copies of its files."""
        paths = [str(self._materialize(f, lambda data, dest: dest.write_bytes(data))) for f in shipped.files]
        return shipped.template.format(*paths)
