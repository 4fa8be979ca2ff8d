"""xml-bash: <bash>command</bash> runs a command, <done/> finishes."""

from __future__ import annotations

import re

from engine.rollout.harnesses.base import Action, Command, Harness, WorkedExample, short_output

_BASH = re.compile(r"<bash>(.*?)</bash>", re.DOTALL)
_DONE = re.compile(r"<done\s*/>|<done>\s*</done>")


class XmlBash(Harness):
    name = "xml-bash"

    def system_prompt(self) -> str:
        return (
            "You are an expert Linux user working in a bash shell to complete a task.\n"
            "To run a command, write it inside <bash></bash> tags, for example:\n"
            "<bash>ls -la /app</bash>\n"
            "You see its output in the next message. When the task is complete, write <done/>."
        )

    def format_reminder(self) -> str:
        return "Write one command as <bash>...</bash>, or <done/> when the task is complete."

    def stop_reply(self) -> str:
        return "<done/>"

    def render_example(self, example: WorkedExample) -> str:
        lines = [f"Task: {example.instruction.strip()}"]
        for command, observation in example.steps:
            lines += [f"<bash>{command}</bash>", f"(output: {short_output(observation)})"]
        return "\n".join([*lines, "<done/>"])

    def action_complete(self, text: str) -> bool:
        """A closed <bash> block (one command per turn, as the prompt asks), or <done/>."""
        return bool(_BASH.search(text) or _DONE.search(text))

    def parse(self, text: str, tool_calls: list[dict] | None = None) -> Action:
        commands = tuple(Command(m.strip()) for m in _BASH.findall(text) if m.strip())
        done = bool(_DONE.search(text))
        if commands or done:
            return Action(commands, done)
        if "<bash>" in text:
            return Action(error="a <bash> tag was opened but never closed with </bash>")
        return Action(error="no <bash>...</bash> command and no <done/> was found")
