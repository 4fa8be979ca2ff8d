"""Memory hygiene for training on the CPU."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


def release_freed_memory() -> None:
    """Have glibc hand freed memory back to the OS at once (trim threshold 0).

    Training allocates activation buffers whose sizes change with every batch; glibc keeps freed
    blocks by default, and on the CPU the resident peak then grows with fragmentation rather
    than with what is in use (measured: 3.7 GB against 2.1 GB for the same steps).
    """
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if not name:
        return
    try:
        libc = ctypes.CDLL(name)
        # By the time training starts, loading has raised glibc's dynamic mmap threshold to its
        # 32 MB ceiling, so activation buffers come from the heap and fragment it. Pin the
        # threshold low (big buffers are mmap-ed and unmapped when freed) and trim at once.
        libc.mallopt(-3, 1024 * 1024)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 0)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        log.debug("not glibc: no allocator tuning")
