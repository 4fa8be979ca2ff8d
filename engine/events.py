"""Typed events the engine emits; the TUI (or a CLI printer) subscribes to an EventBus."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable, Union

from engine.results import AgentStep, EpisodeResult

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunStarted:
    run_id: str
    kind: str
    total_episodes: int


@dataclass(frozen=True)
class EpisodeStarted:
    run_id: str
    episode_id: str
    task: str
    agent: str
    node: str = ""  # the cluster node running it ("" on this machine)


@dataclass(frozen=True)
class EpisodePhase:
    episode_id: str
    phase: str  # "sandbox", "setup", "agent", "verifier", "done"


@dataclass(frozen=True)
class SandboxOutput:
    episode_id: str
    channel: str
    kind: str  # "command", "output", "exit"
    text: str


@dataclass(frozen=True)
class AgentStepTaken:
    """A model agent finished a turn: its reply, what ran, and what it was shown."""

    episode_id: str
    index: int
    step: "AgentStep"


@dataclass(frozen=True)
class EpisodeFinished:
    run_id: str
    result: "EpisodeResult"


@dataclass(frozen=True)
class RunFinished:
    run_id: str
    success_rate: float
    episodes: int


@dataclass(frozen=True)
class RsrProgress:
    """An RSR round moved: its stage, and a line saying what happened."""

    round: int
    stage: str  # explore, runbooks, approval, replay, dataset, sft, done
    detail: str


@dataclass(frozen=True)
class RunbookDrafted:
    round: int
    runbook_id: str
    task: str
    status: str  # pending, approved, rejected


@dataclass(frozen=True)
class RprProgress:
    """An RPR stage moved: iteration (0-based) of total, warm-up or joint, and what happened."""

    round: int
    iteration: int
    total: int
    phase: str  # warmup, joint, done
    detail: str


@dataclass(frozen=True)
class PipelineProgress:
    """The pipeline's stage table changed: a stage started, was evaluated, finished or failed."""

    stage: str
    status: str
    detail: str


@dataclass(frozen=True)
class TrainingStep:
    run_id: str
    stage: str
    name: str
    step: int
    value: float


Event = Union[
    RunStarted,
    EpisodeStarted,
    EpisodePhase,
    SandboxOutput,
    AgentStepTaken,
    EpisodeFinished,
    RunFinished,
    RsrProgress,
    RunbookDrafted,
    RprProgress,
    PipelineProgress,
    TrainingStep,
]
Listener = Callable[[Event], None]


class EventBus:
    """Thread-safe fan-out. Listeners run on the emitting thread and must be quick."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def emit(self, event: Event) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(event)
            except Exception:  # a faulty subscriber must not break a run
                log.exception("an event listener failed on %s", type(event).__name__)
