"""The one thing the tamper check needs from an ELF shared library: its soname (DT_SONAME).

The loader cache maps a soname to a file, whatever the file is called: after `ldconfig -X` a
library saved as `glibc-hwcaps/x86-64-v2/libzz.so.1` whose soname is `libtinfo.so.6` is what
bash loads (a red-team pass forged the verdict that way). Read from the host, from a file the
agent wrote: opened without following a link or blocking, regular files only, and every offset
and size the file states is bounded before it is used.
"""

from __future__ import annotations

import os
import stat
import struct

PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_STRTAB, DT_SONAME = 0, 5, 14
MAX_PHNUM = 512
MAX_DYNAMIC = 64 * 1024
MAX_NAME = 256


def soname(path: str) -> str | None:
    """The DT_SONAME of the ELF shared library at `path`, or None (not a regular file, not ELF,
    no soname, or anything out of bounds)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return _soname(fd)
    except (OSError, OverflowError, struct.error, ValueError):
        return None
    finally:
        os.close(fd)


def _soname(fd: int) -> str | None:
    ident = os.pread(fd, 16, 0)
    if len(ident) < 16 or ident[:4] != b"\x7fELF" or ident[4] not in (1, 2) or ident[5] not in (1, 2):
        return None
    wide, order = ident[4] == 2, "<" if ident[5] == 1 else ">"
    # e_phoff, e_phentsize, e_phnum; program header: p_type, p_offset, p_vaddr, p_filesz.
    if wide:
        phoff, phentsize, phnum = _unpack(fd, order + "Q", 32)[0], *_unpack(fd, order + "HH", 54)
        header, fields = order + "IIQQQQ", (0, 2, 3, 5)
        entry = order + "qQ"
    else:
        phoff, phentsize, phnum = _unpack(fd, order + "I", 28)[0], *_unpack(fd, order + "HH", 42)
        header, fields = order + "IIIIII", (0, 1, 2, 4)
        entry = order + "iI"
    if phnum > MAX_PHNUM or phentsize < struct.calcsize(header):
        return None
    loads, dynamic = [], None
    for i in range(phnum):
        values = _unpack(fd, header, phoff + i * phentsize)
        kind, offset, vaddr, size = (values[f] for f in fields)
        if kind == PT_LOAD:
            loads.append((vaddr, offset, size))
        elif kind == PT_DYNAMIC:
            dynamic = (offset, min(size, MAX_DYNAMIC))
    if dynamic is None:
        return None
    table = os.pread(fd, dynamic[1], dynamic[0])
    step = struct.calcsize(entry)
    strtab = name = None
    for at in range(0, len(table) - step + 1, step):
        tag, value = struct.unpack_from(entry, table, at)
        if tag == DT_NULL:
            break
        if tag == DT_STRTAB:
            strtab = value
        elif tag == DT_SONAME:
            name = value
    if strtab is None or name is None:
        return None
    for vaddr, offset, size in loads:
        if vaddr <= strtab < vaddr + size:
            raw = os.pread(fd, MAX_NAME, offset + strtab - vaddr + name)
            text = raw.split(b"\0", 1)[0]
            return text.decode("utf-8", errors="replace") if text and b"/" not in text else None
    return None


def _unpack(fd: int, fmt: str, offset: int) -> tuple:
    size = struct.calcsize(fmt)
    data = os.pread(fd, size, offset)
    if len(data) < size:
        raise ValueError("truncated ELF file")
    return struct.unpack(fmt, data)
