"""The planner: the model distills one verified success into a runbook (markdown).

A runbook has a goal, preconditions, numbered steps (each with its command in backticks and
what to expect) and how to check the result. `format_problems` says what a draft lacks; a
draft that still fails after the retries is replaced by a template built from the successful
commands when `template_fallback` is on, and the runbook records which author wrote it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.results import AgentStep

PLANNER_SYSTEM = """You write runbooks for a Linux terminal. A runbook tells someone how to do a task \
again, step by step. Use exactly this markdown layout:

# Goal
<one sentence>

## Preconditions
- <what must already be true>

## Steps
1. `<command>` (expect: <what it prints or changes>)
2. `<command>` (expect: ...)

## Check
<how to see that the task is done>

Example.
Task: Write the word hi to /app/a.txt.
Commands that worked:
$ echo hi > /app/a.txt
$ cat /app/a.txt
hi

# Goal
Write the word hi to /app/a.txt.

## Preconditions
- /app exists.

## Steps
1. `echo hi > /app/a.txt` (expect: no output)
2. `cat /app/a.txt` (expect: hi)

## Check
/app/a.txt contains hi."""

SECTIONS = ("# Goal", "## Preconditions", "## Steps", "## Check")
_STEP = re.compile(r"^\s*\d+\.\s.*`[^`]+`", re.MULTILINE)
MAX_OUTPUT_CHARS = 600


@dataclass(frozen=True)
class Draft:
    text: str
    author: str  # "planner" or "template"
    attempts: int
    problems: tuple[str, ...] = ()  # what the last planner draft lacked, when the template was used


def trajectory_text(steps: list[AgentStep] | tuple[AgentStep, ...]) -> str:
    """The commands that ran and what they printed (no model prose, no verifier output)."""
    lines = []
    for step in steps:
        if not step.command:
            continue
        for command in step.command.splitlines():
            lines.append(f"$ {command}")
        output = step.output.strip()
        if output:
            lines.append(output[:MAX_OUTPUT_CHARS])
    return "\n".join(lines)


def planner_messages(instruction: str, steps) -> list[dict]:
    user = f"Task: {instruction.strip()}\nCommands that worked:\n{trajectory_text(steps)}\n\nWrite the runbook."
    return [{"role": "system", "content": PLANNER_SYSTEM}, {"role": "user", "content": user}]


def format_problems(text: str) -> list[str]:
    problems = [f"missing section '{s}'" for s in SECTIONS if s not in text]
    if not _STEP.search(text):
        problems.append("no numbered step with a command in backticks")
    if len(text) > 6000:
        problems.append("longer than 6000 characters")
    return problems


def template_runbook(instruction: str, steps) -> str:
    goal = " ".join(instruction.strip().split())
    numbered = []
    for step in steps:
        for command in step.command.splitlines() if step.command else []:
            numbered.append(f"{len(numbered) + 1}. `{command}`")
    return (
        f"# Goal\n{goal}\n\n## Preconditions\n- The files the task names are in place.\n\n## Steps\n"
        + "\n".join(numbered)
        + "\n\n## Check\nRe-read the files the task names and compare them with the goal.\n"
    )


def draft_runbook(
    policy,
    instruction: str,
    steps,
    *,
    temperature: float = 0.3,
    seed: int | None = None,
    retries: int = 2,
    template_fallback: bool = True,
    max_tokens: int = 400,
) -> Draft:
    problems: list[str] = []
    for attempt in range(1, retries + 2):
        gen = policy.generate(
            planner_messages(instruction, steps),
            max_tokens=max_tokens,
            temperature=temperature,
            seed=None if seed is None else seed * 100 + attempt,
        )
        text = gen.text.strip()
        problems = format_problems(text)
        if not problems:
            return Draft(text, "planner", attempt)
    if template_fallback:
        return Draft(template_runbook(instruction, steps), "template", retries + 1, tuple(problems))
    return Draft(text, "planner", retries + 1, tuple(problems))
