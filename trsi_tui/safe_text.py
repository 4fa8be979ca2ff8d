"""Untrusted text made safe to draw: model replies, commands, shell output, verifier messages.

Everything an agent or a task writes can reach the screen. A raw escape sequence or control
character in a rendered line goes straight to the user's terminal: `ESC[2J` clears it, cursor
moves leave stale text inside other widgets, OSC sequences set the window title or the
clipboard, a lone `\\r` or a newline inside a one-line widget breaks its borders. These helpers
keep printable characters, newlines and tabs, and nothing else.
"""

from __future__ import annotations

import re

from rich.markup import escape

# Every escape sequence form (ECMA-48): CSI with parameters and intermediates, OSC up to BEL or
# ST, DCS/SOS/PM/APC strings up to ST, and two-character escapes.
_COMPLETE = (
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
    r"|\x1b[PX^_][^\x1b]*\x1b\\"
    r"|\x1b[ -/]*[0-~]"
)
COMPLETE_ESCAPE = re.compile(_COMPLETE)
# The start of a sequence cut off by the end of the text.
UNFINISHED_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*|[PX^_][^\x1b]*|[ -/]*)?$")
ESCAPE_SEQUENCE = re.compile(UNFINISHED_ESCAPE.pattern + "|" + _COMPLETE)
# C0 controls but tab and newline, DEL, C1 controls (0x9b is a one-byte CSI on some terminals),
# and lone surrogates (undecodable bytes smuggled through `surrogateescape`).
CONTROL_CHARACTER = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def printable(text: str, tab_size: int = 8) -> str:
    """`text` with escape sequences and control characters removed; `\\r\\n` and lone `\\r`
    become newlines, tabs are expanded."""
    text = ESCAPE_SEQUENCE.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = CONTROL_CHARACTER.sub("", text)
    return text.expandtabs(tab_size) if "\t" in text else text


def printable_lines(text: str) -> list[str]:
    """`printable(text)` split into lines (a trailing newline adds no empty line)."""
    return printable(text).rstrip("\n").split("\n")


def one_line(text: str, limit: int | None = None) -> str:
    """The first line of `printable(text)`, for table cells and titles; `…` marks a cut."""
    lines = printable(text).strip("\n").split("\n")
    first = lines[0]
    cut = len(lines) > 1
    if limit is not None and len(first) > limit:
        first, cut = first[: max(0, limit - 1)], True
    return first + ("…" if cut else "")


def markup(text: str) -> str:
    """`printable(text)` escaped for Rich console markup, for Static widgets that use markup."""
    return escape(printable(text))
