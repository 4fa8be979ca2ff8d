"""What the front ends show, read from the store in one go: typed, frozen read models.

Each is built by one `Engine` read (see `engine.api.reads`) and carries what a screen or a
command draws, already worked out (which stages, which metrics, which episodes count), so the
front ends only lay it out. Frozen, and compared by value, so a screen can tell "nothing new"
by comparing the new read with the last one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from engine.pipeline.summary import StageOverSeeds
from engine.results import AgentStep
from engine.rsr.frontier import PassEstimate
from engine.store.records import (
    CheckRecord,
    EpisodeOutcome,
    EpisodeRecord,
    MetricPoint,
    ModelRecord,
    RunRecord,
    StageRecord,
)
from engine.tasks import Suite

# Of what training logs, the curves a person watches: the rest (timings, counts) is in the store.
PLOTTED_METRICS = (
    "sft/loss",
    "rpr/reward",
    "rpr/success",
    "rpr/expected_success",
    "rpr/probe_success",
    "ppo/kl",
    "ppo/value_loss",
    "ppo/explained_variance",
    "ppo/entropy",
)


@dataclass(frozen=True)
class RolloutCurve:
    """RPR rollouts on one x axis, stage after stage (each stage's rounds follow the previous
    stage's last): mean reward and success per round, and the success on each stage's fixed probe
    tasks (the same tasks and seeds every time, so it shows the actor improving)."""

    rounds: tuple[int, ...] = ()
    reward: tuple[float, ...] = ()
    success: tuple[float, ...] = ()
    probe_rounds: tuple[int, ...] = ()
    probe_success: tuple[float, ...] = ()


@dataclass(frozen=True)
class DashboardView:
    stages: Mapping[str, StageRecord]  # as stored: the plain stage names are training seed 0's lineage
    runs: tuple[RunRecord, ...]  # newest first
    rollouts: RolloutCurve
    over_seeds: tuple[StageOverSeeds, ...]  # empty until a second training seed has a stage


@dataclass(frozen=True)
class CurveRun:
    """A run the curves screen can plot: a stored run, or a training run that only logs metrics."""

    id: str
    kind: str  # "training" for a run that logs metrics but holds no episodes
    agent: str


@dataclass(frozen=True)
class RunCurvesUpdate:
    """What was stored for a run since an earlier read: episode outcomes in store order and the
    plotted metrics' points, with where the next read starts."""

    run_id: str
    outcomes: tuple[EpisodeOutcome, ...]
    points: tuple[MetricPoint, ...]  # only PLOTTED_METRICS
    next_episode: int
    next_point: int


@dataclass(frozen=True)
class StagePass:
    stage: str
    pass_at_1: float
    low: float | None
    high: float | None


@dataclass(frozen=True)
class StagePasses:
    """pass@1 per pipeline stage with its 95% interval, on the held-out eval tasks: the mean over
    training seeds when there are several (`over_seeds` of them), else the stored stage table's
    (`over_seeds` 0). Stages without a value yet are left out."""

    stages: tuple[StagePass, ...]
    over_seeds: int


@dataclass(frozen=True)
class TaskStatus:
    """What the store says of one task of a suite."""

    valid: bool | None  # the newest `tasks check`: the oracle succeeded and nop did not; None: not checked
    estimate: PassEstimate | None  # the current model's, from the newest RSR round that explored it
    round: int | None  # that round


@dataclass(frozen=True)
class SuiteOverview:
    suite: Suite
    tasks: Mapping[str, TaskStatus]  # every task of the suite, by name


@dataclass(frozen=True)
class TaskDetail:
    task: str
    oracle: EpisodeRecord | None  # the newest oracle episode of the task, in any run
    checks: tuple[CheckRecord, ...]  # as the verifier last reported them, for that episode
    checked_oracle: EpisodeRecord | None  # the newest `tasks check` episodes: the oracle must pass,
    checked_nop: EpisodeRecord | None  # and doing nothing must not


@dataclass(frozen=True)
class EpisodeDetail:
    """One stored episode, step by step, for the trajectory screen."""

    episode: EpisodeRecord
    model: ModelRecord
    steps: tuple[AgentStep, ...]
    checks: tuple[CheckRecord, ...]
