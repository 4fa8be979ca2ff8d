"""Untrusted text made safe to draw: model replies, commands, shell output, verifier messages.

Everything an agent or a task writes can reach the screen. A raw escape sequence or control
character in a rendered line goes straight to the user's terminal: `ESC[2J` clears it, cursor
moves leave stale text inside other widgets, OSC sequences set the window title or the
clipboard, a lone `\\r` or a newline inside a one-line widget breaks its borders. These helpers
keep printable characters, newlines and tabs, and nothing else. The pure functions live in the
engine (`engine.api` re-exports them) so that its own output uses the same rules; this module adds
Rich markup.
"""

from __future__ import annotations

from rich.markup import escape
from rich.text import Text

from engine.api import (
    COMPLETE_ESCAPE,
    CONTROL_CHARACTER,
    ESCAPE_SEQUENCE,
    UNFINISHED_ESCAPE,
    one_line,
    printable,
    printable_lines,
)

__all__ = [
    "COMPLETE_ESCAPE",
    "CONTROL_CHARACTER",
    "ESCAPE_SEQUENCE",
    "UNFINISHED_ESCAPE",
    "markup",
    "one_line",
    "plain",
    "printable",
    "printable_lines",
]


def markup(text: str) -> str:
    """`printable(text)` escaped for Rich console markup, for Static widgets that use markup."""
    return escape(printable(text))


def plain(text: object) -> Text:
    """`printable(str(text))` as a Rich Text, which is never read as markup: for table cells."""
    return Text(printable(str(text)))
