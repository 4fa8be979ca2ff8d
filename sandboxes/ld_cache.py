"""The dynamic loader's cache (/etc/ld.so.cache), compared before and after the agent's turn.

The loader finds a library by its soname in the cache, and `ldconfig` builds the cache from
whatever it is told: a directory on its command line (`ldconfig /opt/evil`), a link in a
library folder, a library whose ELF header names another soname than its file does. Four ways
(a red-team pass) sent bash's `libtinfo.so.6` to a library of the agent's that wrote the
verdict. So the check is made on the cache itself: every soname the image's cache had must lead
to the same paths afterwards. New sonames (a library apt installed) are the agent's own.

Read from the host, a folder at a time inside the container and never through a link, at most
MAX_BYTES; every count and offset in the file is bounded before it is used. Only glibc's
current format ("glibc-ld.so.cache1.1", alone or after the old one) is read.
"""

from __future__ import annotations

import struct

from sandboxes import links

MAGIC = b"glibc-ld.so.cache1.1"
HEADER = 48  # magic and version, nlibs, len_strings, flags, padding, extension offset, unused
ENTRY = struct.Struct("<iIIIQ")  # flags, key, value, osversion, hwcap
MAX_BYTES = 16 * 1024 * 1024
PATH = "/etc/ld.so.cache"

Cache = dict[str, frozenset[str]]  # soname -> the paths the cache gives for it


class Unreadable(ValueError):
    """A cache the loader might read that this parser cannot: it fails closed."""


def read(root: str) -> Cache | None:
    """The cache of the container whose root the host sees at `root`; None where there is none
    (the loader then searches its default folders)."""
    there, data = links.head_inside(root, PATH, MAX_BYTES + 1)
    if not there:
        return None
    if data is None or len(data) > MAX_BYTES:
        raise Unreadable("not a regular file of a sane size")
    return parse(data)


def parse(data: bytes) -> Cache:
    start = data.find(MAGIC)
    if start < 0:
        raise Unreadable("no glibc-ld.so.cache1.1 header")
    try:
        nlibs, _ = struct.unpack_from("<II", data, start + len(MAGIC))
    except struct.error:
        raise Unreadable("a cut header") from None
    if start + HEADER + nlibs * ENTRY.size > len(data):
        raise Unreadable("more entries than the file holds")
    found: dict[str, set[str]] = {}
    for i in range(nlibs):
        _, key, value, _, _ = ENTRY.unpack_from(data, start + HEADER + i * ENTRY.size)
        found.setdefault(_string(data, start + key), set()).add(_string(data, start + value))
    return {name: frozenset(paths) for name, paths in found.items()}


def redirected(before: Cache | None, after: Cache | None) -> list[str]:
    """'soname -> path' for each path the cache now gives a soname it had before, but did not."""
    if before is None or after is None:
        return []  # no cache before: the loader searched its folders; none after: it does again
    return [f"{name} -> {path}" for name, paths in before.items() for path in sorted(after.get(name, paths) - paths)]


def _string(data: bytes, at: int) -> str:
    end = data.find(b"\0", at, at + 4096)
    if at >= len(data) or end < 0:
        raise Unreadable("a name outside the file")
    return data[at:end].decode("utf-8", errors="replace")
