"""What an episode's agent is, as plain data.

A job's agent factory is a closure over objects of this process (a loaded policy above all),
which cannot travel to another machine. An `AgentSpec` can: a cluster worker builds the same
agent from it against its own policy replica, so an episode run remotely samples exactly what
it would have sampled here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal

from engine.rollout.agents import Agent, CommandsAgent, NopAgent, OracleAgent
from engine.rollout.harnesses.base import WorkedExample

AgentKind = Literal["oracle", "nop", "commands", "model"]


@dataclass(frozen=True)
class AgentSpec:
    kind: AgentKind
    model: str = ""  # the policy's model spec (kind "model")
    harness: str = ""
    temperature: float = 0.7
    seed: int = 0
    max_turns: int = 20
    max_reply_tokens: int = 512
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
        if policy is None:
            raise ValueError(f"a model agent needs the policy of {self.model!r}")
        from engine.rollout.harnesses import get_harness
        from engine.rollout.model_agent import ModelAgent

        return ModelAgent(
            policy,
            get_harness(self.harness),
            temperature=self.temperature,
            seed=self.seed,
            max_turns=self.max_turns,
            max_tokens_per_turn=self.max_reply_tokens,
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


SCRIPTED_SPECS: dict[type, AgentSpec] = {OracleAgent: AgentSpec("oracle"), NopAgent: AgentSpec("nop")}


def spec_of(make_agent: Callable[[], Agent]) -> AgentSpec | None:
    """The spec behind an agent factory, or None for a closure that cannot say."""
    if isinstance(make_agent, SpecAgentFactory):
        return make_agent.spec
    if isinstance(make_agent, type):
        return SCRIPTED_SPECS.get(make_agent)
    return None
