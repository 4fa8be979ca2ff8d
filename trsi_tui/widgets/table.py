"""A DataTable whose text cells are never read as markup.

DataTable renders a `str` cell as Textual markup: a task named `[x=a:b]` or a stored command
`echo '[/]'` raised MarkupError and took the screen down, and `[link=...]` drew a link. Every
table of the TUI shows names and text that tasks, models and agents wrote, so each `str` cell
is drawn as the printable text it is.
"""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable

from trsi_tui.safe_text import plain


class Table(DataTable):
    def add_row(self, *cells: Any, **kwargs: Any):
        return super().add_row(*(plain(c) if isinstance(c, str) else c for c in cells), **kwargs)

    def update_cell(self, row_key, column_key, value: Any, **kwargs: Any) -> None:
        super().update_cell(row_key, column_key, plain(value) if isinstance(value, str) else value, **kwargs)

    def update_cell_at(self, coordinate, value: Any, **kwargs: Any) -> None:
        super().update_cell_at(coordinate, plain(value) if isinstance(value, str) else value, **kwargs)
