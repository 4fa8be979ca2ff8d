"""terminus-json: the model answers with one JSON object (Terminus style)."""

from __future__ import annotations

import json

from engine.rollout.harnesses.base import Action, Command, Harness, clamp_duration

EXAMPLE = """{
  "analysis": "The file /app/input.txt exists; I need its line count in /app/count.txt.",
  "plan": "Use wc -l and redirect the number.",
  "commands": [{"keystrokes": "wc -l < /app/input.txt > /app/count.txt", "duration": 1}],
  "task_complete": true
}"""


def _json_objects(text: str):
    """Every JSON object that starts at a '{' in `text`, in order (models wrap them in prose)."""
    decoder = json.JSONDecoder()
    i = text.find("{")
    while i != -1:
        try:
            obj, end = decoder.raw_decode(text, i)
            if isinstance(obj, dict):
                yield obj
            i = text.find("{", end)
        except json.JSONDecodeError:
            i = text.find("{", i + 1)


class TerminusJson(Harness):
    name = "terminus-json"

    def system_prompt(self) -> str:
        return (
            "You are an expert Linux user working in a bash shell to complete a task.\n"
            "Reply with exactly one JSON object and nothing else:\n"
            '{"analysis": "...", "plan": "...", "commands": [{"keystrokes": "<shell command>", '
            '"duration": <seconds to wait>}], "task_complete": <true|false>}\n'
            "Commands run in order in one shell; you see their output next turn. Set task_complete to true "
            "only when the task is done.\nExample:\n" + EXAMPLE
        )

    def format_reminder(self) -> str:
        return (
            'Reply with one JSON object: {"analysis", "plan", "commands": [{"keystrokes", "duration"}], '
            '"task_complete"}.'
        )

    def action_complete(self, text: str) -> bool:
        """The first JSON object with "commands" or "task_complete" is closed: parse() reads only it."""
        return "}" in text and any("commands" in o or "task_complete" in o for o in _json_objects(text))

    def parse(self, text: str, tool_calls: list[dict] | None = None) -> Action:
        candidates = [o for o in _json_objects(text) if "commands" in o or "task_complete" in o]
        if not candidates:
            return Action(error='no JSON object with "commands" or "task_complete" was found')
        obj = candidates[0]
        raw = obj.get("commands", [])
        if raw is None:
            raw = []
        if not isinstance(raw, list):
            return Action(error='"commands" must be a list of {"keystrokes", "duration"} objects')
        commands: list[Command] = []
        for i, c in enumerate(raw):
            if isinstance(c, str):
                c = {"keystrokes": c}
            if not isinstance(c, dict) or not isinstance(c.get("keystrokes"), str):
                return Action(error=f'command {i} has no "keystrokes" string')
            keys = c["keystrokes"].rstrip("\n")
            if keys.strip():
                commands.append(Command(keys, clamp_duration(c.get("duration"))))
        done = obj.get("task_complete") is True
        if not commands and not done:
            return Action(error="no commands and task_complete is not true: nothing to do")
        return Action(tuple(commands), done)
