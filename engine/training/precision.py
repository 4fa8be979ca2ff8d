"""Which precision the trainer computes in: bf16 autocast where the hardware has it, else fp32.

Weights and optimizer state stay float32; under autocast the matrix products run in bfloat16.
On a CPU with AVX512-BF16 or AMX, a forward and backward pass of the bundled model take 0.6x the
float32 time (docs/benchmarks.md); on one without, bf16 is emulated and slower, so "auto" keeps
float32 there. A virtual machine can advertise instructions it then refuses to execute (seen
here with llama.cpp's native build), so "auto" trusts a CPU's bf16 only after a small bf16
product has run in a child process.
"""

from __future__ import annotations

import functools
import logging
import subprocess
import sys
from contextlib import nullcontext
from typing import Literal

log = logging.getLogger(__name__)

Precision = Literal["auto", "fp32", "bf16"]

_PROBE = (
    "import torch\n"
    "a = torch.randn(512, 512)\n"
    "with torch.autocast('cpu', dtype=torch.bfloat16):\n"
    "    assert torch.isfinite((a @ a).float()).all()\n"
)


@functools.cache
def cpu_has_fast_bf16() -> bool:
    import torch

    advertised = any(
        getattr(torch.cpu, name, lambda: False)() for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    )
    if not advertised:
        return False
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("bf16 probe could not run (%s); training in float32", exc)
        return False
    if done.returncode != 0:
        log.warning(
            "this CPU advertises bf16 but a bf16 product failed (exit %s); training in float32", done.returncode
        )
    return done.returncode == 0


def compute_dtype(precision: Precision, device) -> str:
    """ "bf16" or "fp32": what `precision` means on `device` (a torch.device)."""
    import torch

    if precision != "auto":
        return precision
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp32"
    return "bf16" if cpu_has_fast_bf16() else "fp32"


def autocast(dtype: str, device):
    """The context a forward pass runs in for `dtype` ("bf16" or "fp32")."""
    import torch

    if dtype == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return nullcontext()
