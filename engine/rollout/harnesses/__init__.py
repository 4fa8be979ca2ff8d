"""Agent harnesses: how a model is prompted, how its replies become shell commands, and how
command results are shown back to it. Select one by name with `get_harness`."""

from engine.rollout.harnesses.base import Action, Command, Harness, StepResult, WorkedExample, truncate_middle
from engine.rollout.harnesses.fenced_bash import (
    FencedBash,
    FencedBashBare,
    FencedBashPlain,
    FencedBashPrimed,
    FencedBashPrimedBare,
    FencedBashTurns,
)
from engine.rollout.harnesses.terminus_json import TerminusJson
from engine.rollout.harnesses.tool_call import ToolCall
from engine.rollout.harnesses.xml_bash import XmlBash
from engine.rollout.harnesses.xml_bash_fewshot import XmlBashFewShot

HARNESSES: dict[str, type[Harness]] = {
    h.name: h
    for h in (
        TerminusJson,
        XmlBash,
        XmlBashFewShot,
        FencedBash,
        FencedBashPlain,
        FencedBashPrimed,
        FencedBashPrimedBare,
        FencedBashBare,
        FencedBashTurns,
        ToolCall,
    )
}


def get_harness(name: str) -> Harness:
    try:
        return HARNESSES[name]()
    except KeyError:
        raise ValueError(f"unknown harness {name!r}; available: {', '.join(sorted(HARNESSES))}") from None


__all__ = ["Action", "Command", "HARNESSES", "Harness", "StepResult", "WorkedExample", "get_harness", "truncate_middle"]
