"""A GGUF's weights written again in another tensor type, cached, for faster batched decoding.

The bundled model ships as Q4_1. On x86 CPUs llama.cpp multiplies Q8_0 weights with a batch of
tokens through its tiled matrix kernels (llamafile's sgemm), while Q4_1 goes through a dot product
per weight row and token; so reading a prompt, and decoding several sequences in one batch, can
cost less per token in Q8_0.

Re-encoding keeps the model: every Q4_1 weight is d*q + m (fp16 d and m, a 4-bit q), which Q8_0
holds to within 1/254 of its block's largest weight; LoRA adapters apply to it as to the file.
Q8_0 and not F16: F16's tiled kernel sums a batch in another order than a single token, so an
episode's tokens would depend on which others share its batch; Q8_0's do not (tested).
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

from engine.policy.base import PolicyError

log = logging.getLogger(__name__)

WEIGHT_TYPES: tuple[str, ...] = ("as-is", "q8_0")


def reencoded_gguf(path: Path, weights: str, cache_dir: Path) -> Path:
    """`path` itself for "as-is", else its weights in `weights`, written once into `cache_dir`.

    The cached file is named by the source's resolved path, size and modification time, so a
    changed source is encoded again; it is written under a temporary name and renamed, so a
    process that stops half way (or two that encode at once) never leaves a torn file."""
    if weights == "as-is":
        return path
    if weights not in WEIGHT_TYPES:
        raise PolicyError(f"unknown GGUF weight type {weights!r} ({', '.join(WEIGHT_TYPES)})")
    source = Path(path).resolve()
    try:
        stat = source.stat()
    except OSError as exc:
        raise PolicyError(f"cannot read the GGUF file {path}: {exc}") from None
    key = hashlib.sha256(f"{source}\0{stat.st_size}\0{stat.st_mtime_ns}".encode()).hexdigest()[:12]
    target = Path(cache_dir) / f"{source.stem}.{key}.{weights}.gguf"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    try:
        import llama_cpp as L
    except ImportError:
        raise PolicyError("re-encoding GGUF weights needs llama-cpp-python: pip install llama-cpp-python") from None
    params = L.llama_model_quantize_default_params()
    params.ftype = L.LLAMA_FTYPE_MOSTLY_Q8_0
    params.allow_requantize = True  # the source is already quantized; llama.cpp dequantizes it first
    params.nthread = os.cpu_count() or 1
    log.info("re-encoding %s as %s into %s", source, weights, target)
    try:
        rc = L.llama_model_quantize(str(source).encode(), str(partial).encode(), params)
        if rc != 0:
            raise PolicyError(f"llama.cpp could not re-encode {source} as {weights} (code {rc})")
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target
