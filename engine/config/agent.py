"""What a model agent is told to do, as one typed object built once from the configuration.

Every piece of work that runs model agents (an RSR round, an RPR stage, a pipeline stage's
evaluation, `trsi-tui eval`) builds its `AgentSettings` here from its own config section and
passes it down to the agents it makes, so a value such as the reply limit is read from the
config in one place and is the same object all the way to the episode.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.config.sections import Config, PolicyConfig, RprConfig, RsrConfig


@dataclass(frozen=True)
class AgentSettings:
    harness: str  # what the model sees and how its replies are read (engine/rollout/harnesses/)
    max_turns: int  # replies the model may give in one episode
    max_reply_tokens: int  # the most tokens one reply may have ([policy] max_reply_tokens)
    temperature: float  # sampling temperature
    command_timeout_sec: float  # the most seconds one command may run ([policy] command_timeout_sec)
    # End the episode at a reply that runs to max_reply_tokens without a usable action (RSR's
    # explore attempts only: [rsr] end_on_runaway_reply); elsewhere the parse error goes back.
    end_on_runaway: bool = False

    def with_harness(self, harness: str) -> AgentSettings:
        return replace(self, harness=harness)

    def with_turns(self, max_turns: int) -> AgentSettings:
        return replace(self, max_turns=max_turns)

    def ending_on_runaway(self, on: bool = True) -> AgentSettings:
        return replace(self, end_on_runaway=on)

    @classmethod
    def for_eval(cls, config: Config) -> AgentSettings:
        """`trsi-tui eval --agent model` and the TUI's start-run form (its options replace these)."""
        policy = config.policy
        return cls(
            config.pipeline.eval_harness,
            config.eval.max_turns,
            policy.max_reply_tokens,
            config.eval.temperature,
            policy.command_timeout_sec,
        )

    @classmethod
    def for_stage_eval(cls, config: Config) -> AgentSettings:
        """The held-out evaluation after every pipeline stage."""
        p = config.pipeline
        policy = config.policy
        return cls(
            p.eval_harness, p.eval_max_turns, policy.max_reply_tokens, p.eval_temperature, policy.command_timeout_sec
        )

    @classmethod
    def for_rsr(cls, rsr: RsrConfig, policy: PolicyConfig, harness: str) -> AgentSettings:
        """An RSR round's explore attempts and replays under `harness` (one of its `harnesses`);
        `rsr` is the round's own settings (the config's, with a request's options applied)."""
        return cls(harness, rsr.max_turns, policy.max_reply_tokens, rsr.temperature, policy.command_timeout_sec)

    @classmethod
    def for_rpr(cls, rpr: RprConfig, policy: PolicyConfig) -> AgentSettings:
        """An RPR stage's rollouts and probes; `rpr` is the stage's own settings."""
        return cls(rpr.harness, rpr.max_turns, policy.max_reply_tokens, rpr.temperature, policy.command_timeout_sec)


# An agent built without settings of its own (tests, benches): what `trsi-tui eval` would use.
DEFAULT_AGENT = AgentSettings.for_eval(Config())
