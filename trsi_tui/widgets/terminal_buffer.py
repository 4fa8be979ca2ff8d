"""The text model behind a shell pane: a scrollback of styled lines fed by raw terminal output.

What a pane must get right for agent shells: ANSI colours (SGR) are kept as styles, a carriage
return moves to column 0 so progress bars overwrite their own line, `ESC[K` clears to the end of
the line, and an escape sequence split across two reads is held back until it is complete. Other
control sequences (cursor movement, screen clears) are dropped: an agent's shell is a log, not a
full-screen terminal.

The buffer records which lines changed since the last `take_dirty()`, so the widget redraws only
those. It has no Textual dependency and is unit-tested on its own.
"""

from __future__ import annotations

import re

from rich.ansi import AnsiDecoder
from rich.style import Style
from rich.text import Text

from trsi_tui.safe_text import COMPLETE_ESCAPE, CONTROL_CHARACTER, UNFINISHED_ESCAPE, printable_lines

# Line breaks, carriage returns and every escape sequence (trsi_tui.safe_text); SGR (`ESC[...m`)
# goes to the decoder, which keeps the current style across calls, the rest is dropped.
_CONTROL = re.compile(r"(\r\n|\n|\r|" + COMPLETE_ESCAPE.pattern + ")")
_SGR = re.compile(r"\x1b\[[0-9;:]*m")
# An unfinished sequence at the end of a read (UNFINISHED_ESCAPE) is held for the next read; a
# string sequence (OSC, DCS) is held at most this many characters, then dropped.
_MAX_HELD = 4096


class TerminalBuffer:
    def __init__(self, max_lines: int = 5000) -> None:
        self.max_lines = max_lines
        self.lines: list[Text] = [Text()]
        self.col = 0
        self.dropped = 0  # lines trimmed off the top
        self.width = 0  # the widest line seen, for horizontal scrolling
        self._decoder = AnsiDecoder()
        self._held = ""
        self._dirty: set[int] = {0}
        self._all_dirty = False

    # -- writing ------------------------------------------------------------------------------
    def feed(self, data: str) -> None:
        data = self._held + data
        self._held = ""
        m = UNFINISHED_ESCAPE.search(data)
        if m:
            held, data = data[m.start() :], data[: m.start()]
            self._held = held if len(held) <= _MAX_HELD else ""
        for part in _CONTROL.split(data):
            if not part:
                continue
            if part in ("\n", "\r\n"):
                self._newline()
            elif part == "\r":
                self.col = 0
            elif _SGR.fullmatch(part):
                self._decoder.decode_line(part)  # only updates the current style
            elif part.startswith("\x1b"):  # any other escape sequence: only erase-line is honoured
                if part.startswith("\x1b[") and part.endswith("K"):
                    self._clear_to_end()
            else:
                self._write(part)
        self._trim()

    def write_line(self, text: str, style: str | Style = "") -> None:
        """Whole styled lines from the app itself (a command echo, a verdict), not from the shell.

        The text may be untrusted (a command the model wrote): it is made printable, and each of
        its lines becomes a line of the pane; continuation lines are indented under the first."""
        if self.lines[-1].plain:
            self._newline()
        for i, part in enumerate(printable_lines(text)):
            line = Text(part if i == 0 else "  " + part)
            line.stylize(style)  # as a span: Text.render drops a Text-level base style
            self.lines[-1] = line
            self.width = max(self.width, line.cell_len)
            self._mark(len(self.lines) - 1)
            self._newline()
        self._trim()

    def _write(self, raw: str) -> None:
        raw = CONTROL_CHARACTER.sub("", raw.expandtabs(8) if "\t" in raw else raw)
        segment = Text(raw, style=self._decoder.style)
        if not segment.plain:
            return
        line = self.lines[-1]
        if self.col >= len(line):
            if self.col > len(line):
                line.append(" " * (self.col - len(line)))
            line.append_text(segment)
        else:
            tail = line[self.col + len(segment) :]
            line = line[: self.col]
            line.append_text(segment)
            line.append_text(tail)
            self.lines[-1] = line
        self.col += len(segment)
        self.width = max(self.width, self.lines[-1].cell_len)
        self._mark(len(self.lines) - 1)

    def _clear_to_end(self) -> None:
        line = self.lines[-1]
        if self.col < len(line):
            self.lines[-1] = line[: self.col]
            self._mark(len(self.lines) - 1)

    def _newline(self) -> None:
        self.lines.append(Text())
        self.col = 0
        self._mark(len(self.lines) - 1)

    def _trim(self) -> None:
        excess = len(self.lines) - self.max_lines
        if excess > 0:
            del self.lines[:excess]
            self.dropped += excess
            self._all_dirty = True

    def _mark(self, index: int) -> None:
        self._dirty.add(index)

    # -- reading ------------------------------------------------------------------------------
    @property
    def line_count(self) -> int:
        # A trailing empty line is where the cursor waits, not content.
        return len(self.lines) - (1 if not self.lines[-1].plain else 0)

    def take_dirty(self) -> set[int] | None:
        """Indices of lines changed since the last call; None when everything moved (trimmed)."""
        dirty, all_dirty = self._dirty, self._all_dirty
        self._dirty, self._all_dirty = set(), False
        return None if all_dirty else dirty

    def plain_lines(self) -> list[str]:
        return [line.plain for line in self.lines[: self.line_count]]
