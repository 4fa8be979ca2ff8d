"""tool-call: native tool calling through the chat template's `tools` (a `bash` and a `done` tool).

Backends that parse tool calls pass them in `tool_calls`; otherwise the reply text is searched
for the common `<tool_call>{"name": ..., "arguments": ...}</tool_call>` form or a bare JSON call.
"""

from __future__ import annotations

import json
import re

from engine.rollout.harnesses.base import Action, Command, Harness, clamp_duration
from engine.rollout.harnesses.terminus_json import _json_objects

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command in the task's sandbox and return its output.",
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "the command line"},
                    "timeout": {"type": "number", "description": "seconds to wait"},
                },
                "required": ["command"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "done",
            "description": "Call when the task is complete.",
            "parameters": {"type": "object", "properties": {}},
        },
    },
]
_TAGGED = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


class ToolCall(Harness):
    name = "tool-call"
    tools = TOOLS

    def system_prompt(self) -> str:
        return (
            "You are an expert Linux user completing a task in a sandboxed shell. Use the `bash` tool to run "
            "commands and read their output. Call the `done` tool when the task is complete.\n"
            'If you cannot call tools natively, write <tool_call>{"name": "bash", "arguments": '
            '{"command": "ls /app"}}</tool_call>.'
        )

    def format_reminder(self) -> str:
        return (
            'Call the bash tool, e.g. <tool_call>{"name": "bash", "arguments": {"command": "..."}}</tool_call>, '
            "or done."
        )

    def action_complete(self, text: str) -> bool:
        """A closed <tool_call> tag (native tool calls come from the server, not from this text)."""
        return "</tool_call>" in text

    def parse(self, text: str, tool_calls: list[dict] | None = None) -> Action:
        calls = list(tool_calls or [])
        if not calls:
            for blob in _TAGGED.findall(text) or [text]:
                calls.extend(o for o in _json_objects(blob) if "name" in o)
        if not calls:
            return Action(error="no tool call was found")
        commands: list[Command] = []
        done = False
        for i, call in enumerate(calls):
            fn = call.get("function", call) if isinstance(call, dict) else {}
            name = fn.get("name")
            args = fn.get("arguments", {})
            if isinstance(args, str):
                try:
                    args = json.loads(args) if args.strip() else {}
                except json.JSONDecodeError:
                    return Action(error=f"tool call {i}: arguments are not valid JSON")
            if not isinstance(args, dict):
                return Action(error=f"tool call {i}: arguments must be an object")
            if name == "done":
                done = True
            elif name == "bash":
                cmd = args.get("command")
                if not isinstance(cmd, str) or not cmd.strip():
                    return Action(error=f'tool call {i}: bash needs a non-empty "command" string')
                commands.append(Command(cmd.strip(), clamp_duration(args.get("timeout"))))
            else:
                return Action(error=f"tool call {i}: unknown tool {name!r} (use bash or done)")
        return Action(tuple(commands), done)
