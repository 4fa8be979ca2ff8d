"""The key bar at the bottom of every screen, rebuilt only when what it shows changes.

Textual's Footer rebuilds all its key widgets on every change of focus, even when the new focus
offers the same keys (tab from one shell pane to the next). With 8 panes streaming, that rebuild
(a dozen widgets mounted and styled) was a large part of a tab's latency.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class SteadyFooter(Footer):
    _shown: tuple | None = None

    def bindings_changed(self, screen: Screen) -> None:
        shown = tuple(
            (key, b.action, b.description, b.key_display, b.group, enabled, tooltip)
            for key, (_node, b, enabled, tooltip) in screen.active_bindings.items()
            if b.show
        )
        if shown == self._shown and self._bindings_ready:
            return
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self._shown = shown  # what the rebuild that Footer now schedules will show
        super().bindings_changed(screen)
