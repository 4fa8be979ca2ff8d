"""Scripted agents: the reference solution (oracle) and doing nothing (nop).

Model-driven agents arrive with the policy backends; they implement the same `Agent` protocol.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Protocol

from engine.results import AgentStep
from engine.tasks import Task
from sandboxes import Sandbox


@dataclass
class AgentRun:
    steps: list[AgentStep] = field(default_factory=list)
    timed_out: bool = False
    # done, turn_limit, token_budget, context_full, agent_timeout, stopped (model agents)
    stop_reason: str = ""
    # The episode's token buffer (model agents): ids and the mask of sampled tokens.
    token_ids: list[int] = field(default_factory=list)
    token_mask: list[int] = field(default_factory=list)
    # The opening messages (system prompt, task) and what produced the replies (model agents).
    messages: list[dict] = field(default_factory=list)
    harness: str = ""
    model: str = ""


class Agent(Protocol):
    name: str

    def act(self, task: Task, sandbox: Sandbox, deadline: float) -> AgentRun: ...


StepListener = Callable[[int, AgentStep], None]


class NopAgent:
    """Does nothing: a valid task must not be solved by its starting state."""

    name = "nop"

    def act(self, task: Task, sandbox: Sandbox, deadline: float) -> AgentRun:
        return AgentRun()


class OracleAgent:
    """Runs solution/solve.sh in the agent's shell; /solution exists only during its turn."""

    name = "oracle"

    def act(self, task: Task, sandbox: Sandbox, deadline: float) -> AgentRun:
        solve = task.solution_dir / "solve.sh"
        if not solve.is_file():
            raise FileNotFoundError(f"{task.path}: the oracle needs solution/solve.sh")
        sandbox.upload(task.solution_dir, "/solution")
        remaining = max(1.0, deadline - time.monotonic())
        result = sandbox.run("bash /solution/solve.sh", timeout=remaining)
        sandbox.exec("rm -rf /solution", timeout=30, channel="system")
        step = AgentStep(
            "bash /solution/solve.sh", result.output, result.exit_code, result.timed_out, result.duration_s
        )
        return AgentRun([step], timed_out=result.timed_out)


class CommandsAgent:
    """Runs a fixed list of shell commands, one per step: re-checks what part of a stored
    episode's commands a verified success needed (RSR's minimal verified prefix)."""

    name = "commands"

    def __init__(self, commands: list[str]) -> None:
        self.commands = list(commands)

    def act(self, task: Task, sandbox: Sandbox, deadline: float) -> AgentRun:
        run = AgentRun()
        for command in self.commands:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                run.timed_out = True
                break
            result = sandbox.run(command, timeout=remaining)
            run.steps.append(AgentStep(command, result.output, result.exit_code, result.timed_out, result.duration_s))
        return run


SCRIPTED_AGENTS: dict[str, type] = {"oracle": OracleAgent, "nop": NopAgent}


def make_agent(name: str) -> Agent:
    try:
        return SCRIPTED_AGENTS[name]()
    except KeyError:
        raise ValueError(f"unknown agent {name!r}; available: {', '.join(sorted(SCRIPTED_AGENTS))}") from None
