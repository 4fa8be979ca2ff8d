"""What the TUI knows about work in progress: one pane state per episode, and the output batcher.

Engine threads never touch UI state. The app's bus listener hands sandbox output to the
`OutputBatcher` (a lock and a dict) and posts one wake-up message when the batcher goes from
empty to non-empty; the app's handler drains it at most about 60 times a second and feeds the
pane buffers. Every other engine event is posted as a message and applied here by handlers.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from engine.api import EpisodeResult
from engine.events import (
    EpisodeFinished,
    EpisodePhase,
    EpisodeStarted,
    Event,
    PipelineProgress,
    RprProgress,
    RsrProgress,
    RunFinished,
    RunStarted,
    TrainingStep,
)
from trsi_tui.widgets.terminal_buffer import TerminalBuffer

Chunk = tuple[str, str, str]  # channel, kind, text


@dataclass
class PaneState:
    episode_id: str
    run_id: str
    task: str
    agent: str
    node: str = ""  # the cluster node running it; "" on this machine
    phase: str = "starting"
    buffer: TerminalBuffer = field(default_factory=TerminalBuffer)
    result: EpisodeResult | None = None
    ended: str = ""  # why it ended without a result (the job running it ended first)

    @property
    def finished(self) -> bool:
        return self.result is not None or bool(self.ended)

    @property
    def outcome(self) -> str:
        """running, passed, failed or infra: the pane's colour."""
        r = self.result
        if r is None:
            return "infra" if self.ended else "running"
        if not r.scored:
            return "infra"
        return "passed" if r.success else "failed"

    @property
    def verdict(self) -> str:
        r = self.result
        if r is None:
            return self.phase
        reward = "-" if r.reward is None else f"{r.reward:.2f}"
        text = f"{'PASS' if r.success else 'FAIL'} {r.checks_passed}/{r.checks_total} checks, reward {reward}"
        if r.failure_mode:
            text += f", {r.failure_mode}"
        return text

    def write(self, channel: str, kind: str, text: str) -> None:
        if kind == "command":
            prefix = "$ " if channel == "agent" else f"[{channel}] $ "
            self.buffer.write_line(prefix + text.rstrip("\n"), "bold" if channel == "agent" else "dim")
        elif kind == "exit":
            if text and text != "exit 0":
                self.buffer.write_line(f"[{text}]", "dim italic")
        else:
            self.buffer.feed(text)


@dataclass
class RunProgress:
    run_id: str
    kind: str
    total: int
    done: int = 0
    successes: int = 0
    finished: bool = False


class LiveState:
    """Panes of the current and recent episodes, and the progress of each run seen this session."""

    def __init__(self, keep_finished: int = 24) -> None:
        self.panes: OrderedDict[str, PaneState] = OrderedDict()
        self.runs: dict[str, RunProgress] = {}
        self.rsr: dict[int, tuple[str, str]] = {}  # round -> (stage, what happened last)
        self.training: dict[str, tuple[int, float]] = {}  # training run -> (step, last loss)
        self.rpr: dict[int, str] = {}  # RPR stage -> what happened last
        self.pipeline: tuple[str, str, str] | None = None  # (stage, status, detail) last reported
        self.keep_finished = keep_finished

    @property
    def running(self) -> list[PaneState]:
        return [p for p in self.panes.values() if not p.finished]

    def apply(self, event: Event) -> str | None:
        """Update from one engine event; returns the episode it concerns, if any."""
        if isinstance(event, RsrProgress):
            self.rsr[event.round] = (event.stage, event.detail)
        elif isinstance(event, TrainingStep):
            if event.name in ("sft/loss", "ppo/value_loss"):
                self.training[event.run_id] = (event.step, event.value)
        elif isinstance(event, RprProgress):
            self.rpr[event.round] = event.detail
        elif isinstance(event, PipelineProgress):
            self.pipeline = (event.stage, event.status, event.detail)
        elif isinstance(event, RunStarted):
            self.runs[event.run_id] = RunProgress(event.run_id, event.kind, event.total_episodes)
        elif isinstance(event, RunFinished):
            if event.run_id in self.runs:
                self.runs[event.run_id].finished = True
        elif isinstance(event, EpisodeStarted):
            self.panes[event.episode_id] = PaneState(
                event.episode_id, event.run_id, event.task, event.agent, node=event.node
            )
            self._forget_old()
            return event.episode_id
        elif isinstance(event, EpisodePhase):
            pane = self.panes.get(event.episode_id)
            if pane is not None:
                pane.phase = event.phase
                return event.episode_id
        elif isinstance(event, EpisodeFinished):
            pane = self.panes.get(event.result.episode_id)
            progress = self.runs.get(event.run_id)
            if progress is not None:
                progress.done += 1
                progress.successes += int(event.result.success)
            if pane is not None:
                pane.result = event.result
                pane.phase = "done"
                pane.buffer.write_line(pane.verdict, "bold green" if pane.outcome == "passed" else "bold red")
                return pane.episode_id
        return None

    def work_ended(self, why: str) -> set[str]:
        """The work ended (a detached job: done, stopped or killed): its episodes still running say so
        in their panes, its runs are over, its progress lines are gone. Returns those episodes."""
        ended = set()
        for pane in self.running:
            pane.ended = pane.phase = why
            pane.buffer.write_line(f"[{why}]", "bold yellow")
            ended.add(pane.episode_id)
        for progress in self.runs.values():
            progress.finished = True
        # What the work said last about its stages and rounds is no longer what is running now.
        self.rsr.clear()
        self.rpr.clear()
        self.training.clear()
        self.pipeline = None
        return ended

    def _forget_old(self) -> None:
        finished = [k for k, p in self.panes.items() if p.finished]
        for key in finished[: max(0, len(finished) - self.keep_finished)]:
            del self.panes[key]


class OutputBatcher:
    """Collects sandbox output from engine threads until the UI drains it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, list[Chunk]] = {}

    def add(self, episode_id: str, channel: str, kind: str, text: str) -> bool:
        """Queue one chunk; True when the batcher was empty, i.e. the UI needs a wake-up."""
        with self._lock:
            wake = not self._pending
            self._pending.setdefault(episode_id, []).append((channel, kind, text))
        return wake

    def drain(self) -> dict[str, list[Chunk]]:
        with self._lock:
            pending, self._pending = self._pending, {}
        return pending
