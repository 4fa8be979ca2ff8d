"""One RSR round's reads and writes, each by name: what the round's phases ask of the store.

The phases never reach into the store themselves: a `RoundRecords` answers for one round (its
explore attempts, its successes, its runbooks, its replay outcomes, its samples) and stores what
the phases produce. Job scopes and key formats are engine/keys.py's.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.keys import ExploreKey, PrefixKey, ReplayKey
from engine.results import AgentStep
from engine.store import Store
from engine.store.records import MetricPoint, RsrRoundRecord, Runbook, RunbookDraft, Sample


@dataclass(frozen=True)
class ExploreAttempt:
    """A finished explore job: its key (as stored, and parsed), its episode and its outcome."""

    job_key: str
    key: ExploreKey
    episode_id: str
    success: bool
    reward: float  # 0.0 when the episode has no reward


@dataclass(frozen=True)
class ReplayOutcome:
    """A finished replay job of an approved runbook."""

    job_key: str
    key: ReplayKey
    episode_id: str
    success: bool


class RoundRecords:
    """The store, as RSR round `round` uses it."""

    def __init__(self, store: Store, round: int) -> None:
        self.store, self.round = store, round

    # -- the round's row ----------------------------------------------------------------------
    def record(self) -> RsrRoundRecord | None:
        return self.store.rsr.round(self.round)

    def open(self, *, model: str, tasks_path: str, settings: str) -> None:
        """The row of a round that starts now, at its first phase."""
        self.store.rsr.put_round(
            self.round, model=model, tasks_path=tasks_path, settings=settings, stage="explore", checkpoint="", detail=""
        )

    def progress(self, phase: str, detail: str) -> None:
        # The column keeps its stored name, `stage`: the TUI and older stores read it.
        self.store.rsr.put_round(self.round, stage=phase, detail=detail)

    def checkpoint(self) -> str:
        """The served spec of the round's trained checkpoint, '' before SFT has written one."""
        record = self.record()
        return record.checkpoint if record is not None else ""

    def set_checkpoint(self, served: str) -> None:
        self.store.rsr.put_round(self.round, checkpoint=served)

    # -- keyed jobs ---------------------------------------------------------------------------
    def finished(self, phase: str) -> dict[str, tuple[str, bool]]:
        """The phase's finished jobs (a scope of engine/keys.py's RSR_PHASES): key -> (episode, success)."""
        return self.store.rsr.jobs(self.round, phase)

    def explore_attempts(self) -> list[ExploreAttempt]:
        """Every finished explore attempt, in the order they were stored."""
        done = self.finished("explore")
        episodes = self.store.runs.episodes_by_id([episode for episode, _ in done.values()])
        rewards = {e.id: e.reward or 0.0 for e in episodes}
        return [
            ExploreAttempt(key, ExploreKey.parse(key), episode, ok, rewards.get(episode, 0.0))
            for key, (episode, ok) in done.items()
        ]

    def successes(self) -> list[ExploreAttempt]:
        """The explore attempts that passed every check, by key: the order runbooks are numbered in."""
        return sorted((a for a in self.explore_attempts() if a.success), key=lambda a: a.job_key)

    def nop_rewards(self) -> dict[str, float]:
        """task -> the reward of its nop episode, for the tasks whose nop episode has one."""
        done = self.finished("nop")
        episodes = self.store.runs.episodes_by_id([episode for episode, _ in done.values()])
        rewards = {e.id: e.reward for e in episodes if e.reward is not None}
        return {name: rewards[episode] for name, (episode, _) in done.items() if episode in rewards}

    def replay_outcomes(self) -> list[ReplayOutcome]:
        """Every finished replay, by key."""
        return [
            ReplayOutcome(key, ReplayKey.parse(key), episode, ok)
            for key, (episode, ok) in sorted(self.finished("replay").items())
        ]

    def passing_prefixes(self) -> list[PrefixKey]:
        """The re-run command prefixes of explore successes that passed every check, as stored."""
        return [PrefixKey.parse(key) for key, (_, ok) in self.finished("prefix").items() if ok]

    # -- episodes -----------------------------------------------------------------------------
    def steps(self, episode_id: str) -> list[AgentStep]:
        return self.store.runs.steps(episode_id)

    def opening(self, episode_id: str) -> list[dict]:
        """The system and user messages the episode's model was sent first."""
        return self.store.runs.episode_model(episode_id).messages[:2]

    def verifier_output(self, episode_id: str) -> str:
        return self.store.runs.verifier_output(episode_id)

    # -- runbooks -----------------------------------------------------------------------------
    def runbooks(self, status: str | None = None) -> list[Runbook]:
        """The round's runbooks in the order they were written, optionally of one status."""
        return self.store.runbooks.list(status=status, round=self.round)

    def add_runbook(self, draft: RunbookDraft, *, status: str, decided_by: str) -> str:
        return self.store.runbooks.add(draft, status=status, decided_by=decided_by)

    def runbook_counts(self) -> dict[str, int]:
        """status -> how many of the round's runbooks have it, in the order first seen."""
        counts: dict[str, int] = {}
        for rb in self.runbooks():
            counts[rb.status] = counts.get(rb.status, 0) + 1
        return counts

    # -- samples and metrics ------------------------------------------------------------------
    def add_samples(self, samples: list[Sample]) -> int:
        """Store samples; returns how many were new (a sample is its tokens' digest)."""
        return self.store.rsr.add_samples(self.round, samples)

    def samples(self) -> list[Sample]:
        return self.store.rsr.samples(self.round)

    def log_metric(self, point: MetricPoint) -> None:
        self.store.metrics.log([point])
