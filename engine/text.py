"""Untrusted text made safe to print or log: task names, instructions, agent and verifier output.

Task folders and agents are hostile: a raw escape sequence or control character in a task name,
an instruction or a command's output goes straight to whoever reads it. `ESC[2J` clears the
terminal, OSC sequences set the window title or the clipboard, cursor moves overwrite earlier
lines, a lone `\\r` hides what came before it. `printable` keeps printable characters, newlines
and tabs, and nothing else (for screens and tables); `escaped` shows every control character as
a visible `\\xNN` instead (for the log file, where what was sent matters). Pure functions: the
TUI's `trsi_tui.safe_text` builds on them, and the engine uses them without importing the TUI.
"""

from __future__ import annotations

import re

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
# Controls, lone surrogates, and the bidirectional overrides and isolates (U+202A-U+202E,
# U+2066-U+2069, U+200E/U+200F) and line/paragraph separators: a terminal that honours them
# reverses the rest of the line, so a name could be shown as another.
CONTROL_CHARACTER = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u200e\u200f\u2028-\u202e\u2066-\u2069]")


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


def escaped(text: str) -> str:
    """`text` with every control character but newline and tab written as a visible `\\xNN`
    (`\\uNNNN` for lone surrogates): nothing a terminal would act on survives, nothing is lost."""
    return CONTROL_CHARACTER.sub(_visible, text)


def _visible(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
