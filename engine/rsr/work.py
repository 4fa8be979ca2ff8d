"""What every phase of an RSR round works with, handed down by the round (engine/rsr/round.py).

A `RoundWork` holds the round's number, seed, model and settings, its store operations
(engine/rsr/records.py), the policy, and the two ways a phase acts on the world: running keyed
episode jobs, and saying what it does (the round's row in the store and an RsrProgress event).
The phases take it as an argument, so none of them knows the round that sequences them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from engine.config import AgentSettings, Config, RsrConfig
from engine.events import EventBus, RsrProgress
from engine.keys import rsr_scope
from engine.rollout.agent_spec import SpecAgentFactory, model_agents
from engine.rollout.harnesses import WorkedExample
from engine.rollout.runner import EpisodeJob
from engine.rsr.records import RoundRecords

Jobs = list[tuple[str, EpisodeJob]]  # (job key, job), run in this order
# Resumable.run_keyed: runs keyed jobs under a scope, recording each finished episode under its key.
RunKeyed = Callable[..., str]


@dataclass(frozen=True)
class RoundWork:
    round: int
    seed: int  # the training seed every job's sampling seed derives from (engine/keys.py)
    model: str
    settings: RsrConfig
    config: Config
    records: RoundRecords
    bus: EventBus
    run_keyed: RunKeyed
    load_policy: Callable[[], object]  # the round's policy, loaded once, on first use
    should_stop: Callable[[], bool]
    concurrency: int
    checkpoint_dir: Path

    @property
    def policy(self):
        return self.load_policy()

    def helper(self, spec: str):
        """The planner's or reviewer's policy: `spec`, or the round's own model when it is ''."""
        if not spec:
            return self.policy
        from engine.policy import load_policy

        return load_policy(spec)

    def progress(self, phase: str, detail: str) -> None:
        self.records.progress(phase, detail)
        self.bus.emit(RsrProgress(self.round, phase, detail))

    def run_jobs(self, phase: str, jobs: Jobs) -> None:
        """Run keyed jobs of one of engine/keys.py's RSR_PHASES; each finished episode is linked
        to its key the moment it is stored."""
        self.run_keyed(
            rsr_scope(self.round, phase), jobs, kind=f"rsr-{phase}", what=f"RSR round {self.round} during {phase}"
        )

    def agents(
        self,
        harness: str,
        seed: int,
        guidance: str | None = None,
        examples: tuple[WorkedExample, ...] = (),
        max_turns: int = 0,
        end_on_runaway: bool = False,
    ) -> SpecAgentFactory:
        """Model agents of the round's policy under `harness`, as explore attempts and replays act
        (with `max_turns` turns instead of the round's when it is not 0, ending at a runaway reply
        with `end_on_runaway`)."""
        settings = AgentSettings.for_rsr(self.settings, self.config.policy, harness)
        if max_turns:
            settings = settings.with_turns(max_turns)
        settings = settings.ending_on_runaway(end_on_runaway)
        return model_agents(self.model, self.policy, settings, seed=seed, guidance=guidance, examples=examples)
