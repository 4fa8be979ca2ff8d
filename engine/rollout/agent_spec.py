"""What an episode's agent is, as plain data.

A job's agent factory is a closure over objects of this process (a loaded policy above all),
which cannot travel to another machine. An `AgentSpec` can: a cluster worker builds the same
agent from it against its own policy replica, so an episode run remotely samples exactly what
it would have sampled here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal

from engine.config import AgentSettings
from engine.rollout.agents import Agent, CommandsAgent, NopAgent, OracleAgent
from engine.rollout.harnesses.base import WorkedExample

AgentKind = Literal["oracle", "nop", "commands", "model"]


@dataclass(frozen=True)
class AgentSpec:
    kind: AgentKind
    model: str = ""  # the policy's model spec (kind "model")
    settings: AgentSettings | None = None  # how a model agent acts (kind "model")
    seed: int = 0
    guidance: str | None = None  # an RSR runbook shown to the model
    examples: tuple[WorkedExample, ...] = ()  # worked examples added to the system prompt (RSR explore)
    commands: tuple[str, ...] = ()  # kind "commands"

    def build(self, policy=None) -> Agent:
        """The agent; `policy` serves kind "model" and is ignored otherwise."""
        if self.kind == "oracle":
            return OracleAgent()
        if self.kind == "nop":
            return NopAgent()
        if self.kind == "commands":
            return CommandsAgent(list(self.commands))
        if policy is None or self.settings is None:
            raise ValueError(f"a model agent needs the policy of {self.model!r} and its settings")
        from engine.rollout.harnesses import get_harness
        from engine.rollout.model_agent import ModelAgent

        return ModelAgent(
            policy,
            get_harness(self.settings.harness),
            temperature=self.settings.temperature,
            seed=self.seed,
            max_turns=self.settings.max_turns,
            max_reply_tokens=self.settings.max_reply_tokens,
            command_timeout_sec=self.settings.command_timeout_sec,
            end_on_runaway=self.settings.end_on_runaway,
            guidance=self.guidance,
            examples=self.examples,
        )


@dataclass(frozen=True)
class SpecAgentFactory:
    """An agent factory (what `EpisodeJob.make_agent` is) that also says what it builds: here it
    builds from `policy`; a cluster worker builds `spec` against its own replica instead."""

    spec: AgentSpec
    policy: object = field(default=None, compare=False, repr=False)

    def __call__(self) -> Agent:
        return self.spec.build(self.policy)


def model_agents(
    model: str,
    policy,
    settings: AgentSettings,
    *,
    seed: int,
    guidance: str | None = None,
    examples: tuple[WorkedExample, ...] = (),
) -> SpecAgentFactory:
    """Model agents of `policy` (loaded from the spec `model`) acting as `settings` say; the
    factory carries the spec, so a cluster worker can build the same agent on its own replica."""
    from engine.rollout.harnesses import get_harness

    get_harness(settings.harness)  # fail fast on an unknown harness
    spec = AgentSpec("model", model=model, settings=settings, seed=seed, guidance=guidance, examples=tuple(examples))
    return SpecAgentFactory(spec, policy)


SCRIPTED_SPECS: dict[type, AgentSpec] = {OracleAgent: AgentSpec("oracle"), NopAgent: AgentSpec("nop")}


def spec_of(make_agent: Callable[[], Agent]) -> AgentSpec | None:
    """The spec behind an agent factory, or None for a closure that cannot say."""
    if isinstance(make_agent, SpecAgentFactory):
        return make_agent.spec
    if isinstance(make_agent, type):
        return SCRIPTED_SPECS.get(make_agent)
    return None
