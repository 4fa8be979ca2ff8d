"""Command palette entries (ctrl+p): jump to a screen, start or stop a run, open help."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

SCREENS = {
    "dashboard": "Pipeline stages, recent runs, what is running",
    "sandboxes": "Live shells of running episodes",
    "tasks": "Browse suites, instructions, checks and validation",
    "trajectories": "Browse and step through stored episodes",
    "runbooks": "Runbook drafts: approve, edit, reject",
    "curves": "Reward, pass-rate and training curves",
}


class TrsiCommands(Provider):
    def _commands(self) -> list[tuple[str, object, str]]:
        app = self.app
        commands: list[tuple[str, object, str]] = [
            (f"Go to {name.title()}", partial(app.switch_mode, name), help_text) for name, help_text in SCREENS.items()
        ]
        commands += [
            ("Start a run…", app.action_new_run, "Choose suite, agent or model, harness, backend, concurrency"),
            ("Start an RSR round…", app.action_new_rsr, "Explore, distill runbooks, review, replay, SFT"),
            ("Stop the running work", app.action_stop_run, "Stops the run and shuts down its sandboxes"),
            ("Show keys and help", app.action_help, "Every binding with its id (for [tui.keymap])"),
        ]
        return commands

    async def discover(self) -> Hits:
        for name, callback, help_text in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, callback, help_text in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
