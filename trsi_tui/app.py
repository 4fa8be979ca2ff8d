"""The Textual app, built by a factory so tests can inject their own engine and store."""

from __future__ import annotations

from textual.app import App
from textual.binding import Binding

from engine.api import Engine
from trsi_tui.screens.dashboard import DashboardScreen


class TrsiApp(App):
    TITLE = "trsi-tui"
    SUB_TITLE = "terminal agents, recursive self-improvement"
    BINDINGS = [Binding("q", "quit", "Quit", id="quit")]

    def __init__(self, engine: Engine) -> None:
        super().__init__()
        self.engine = engine

    def on_mount(self) -> None:
        self.push_screen(DashboardScreen(self.engine.store))


def create_app(engine: Engine) -> TrsiApp:
    return TrsiApp(engine)
