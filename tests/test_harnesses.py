"""Harness parsers against well-formed, garbled, truncated and adversarial model output."""

from __future__ import annotations

import pytest

from engine.rollout.harnesses import HARNESSES, get_harness
from engine.rollout.harnesses.base import Command, StepResult, Turn, truncate_middle

GARBAGE = [
    "",
    "   ",
    "I think we should list the files.",
    "{{{{",
    "}",
    "<bash>",
    '```json\n{"commands": [',
    "\x00\x01\x02",
    "null",
    "[]",
    '{"commands": 7}',
    "<tool_call>{not json}</tool_call>",
    "a" * 100_000,
    "{" * 5000,
]


@pytest.mark.parametrize("name", sorted(HARNESSES))
@pytest.mark.parametrize("text", GARBAGE)
def test_garbage_never_raises_and_explains(name: str, text: str):
    action = get_harness(name).parse(text)
    assert action.error or action.done or action.commands
    if not (action.done or action.commands):
        assert len(action.error) > 10


def test_terminus_json_in_prose_and_fences():
    h = get_harness("terminus-json")
    text = (
        'Sure! Here is my answer:\n```json\n{"analysis": "a", "plan": "p", "commands": '
        '[{"keystrokes": "ls -la\\n", "duration": 0.5}, {"keystrokes": "cat x"}], "task_complete": false}\n```'
    )
    a = h.parse(text)
    assert [c.keystrokes for c in a.commands] == ["ls -la", "cat x"]
    assert a.commands[0].duration == 0.5 and not a.done and not a.error


def test_terminus_json_done_without_commands_and_bad_shapes():
    h = get_harness("terminus-json")
    assert h.parse('{"commands": [], "task_complete": true}').done
    assert "keystrokes" in h.parse('{"commands": [{"cmd": "ls"}], "task_complete": false}').error
    assert "nothing to do" in h.parse('{"commands": [], "task_complete": false}').error
    # Adversarial durations are clamped, never trusted.
    a = h.parse('{"commands": [{"keystrokes": "sleep 1", "duration": 1e12}], "task_complete": false}')
    assert a.commands[0].duration == 120.0
    assert h.parse('{"commands": [{"keystrokes": "x", "duration": "NaN"}]}').commands[0].duration == 10.0


def test_terminus_json_truncated_reply():
    a = get_harness("terminus-json").parse('{"analysis": "a", "commands": [{"keystrokes": "ls"')
    assert a.error and not a.commands


def test_xml_bash_commands_done_and_unclosed():
    h = get_harness("xml-bash")
    a = h.parse("First <bash>cd /app</bash> then <bash>\nwc -l input.txt\n</bash>")
    assert [c.keystrokes for c in a.commands] == ["cd /app", "wc -l input.txt"] and not a.done
    assert h.parse("All finished. <done/>").done
    assert "never closed" in h.parse("<bash>ls -la").error
    # A fake "done" inside a command is still a command, not a finish.
    a = h.parse("<bash>echo '<done>'</bash>")
    assert a.commands and not a.done


def test_tool_call_native_and_textual():
    h = get_harness("tool-call")
    native = [{"type": "function", "function": {"name": "bash", "arguments": '{"command": "ls /app"}'}}]
    assert h.parse("", tool_calls=native).commands[0].keystrokes == "ls /app"
    a = h.parse(
        '<tool_call>{"name": "bash", "arguments": {"command": "pwd"}}</tool_call>'
        '<tool_call>{"name": "done", "arguments": {}}</tool_call>'
    )
    assert [c.keystrokes for c in a.commands] == ["pwd"] and a.done
    assert "unknown tool" in h.parse('{"name": "rm_rf", "arguments": {}}').error
    assert "not valid JSON" in h.parse("", tool_calls=[{"function": {"name": "bash", "arguments": "{oops"}}]).error
    assert "non-empty" in h.parse('{"name": "bash", "arguments": {"command": ""}}').error
    assert h.tools and {t["function"]["name"] for t in h.tools} == {"bash", "done"}


def test_observation_truncates_head_and_tail_and_tells_the_time():
    h = get_harness("xml-bash")
    h.observation_cap = 200
    out = "HEAD" + "x" * 10_000 + "TAIL"
    text = h.observation(Turn([StepResult(Command("cat big"), out, 0, False)], time_left_s=42))
    assert "HEAD" in text and "TAIL" in text and "bytes truncated" in text
    assert "Time left: 42 seconds." in text and len(text) < 600


def test_parse_errors_are_fed_back_with_the_format():
    h = get_harness("terminus-json")
    text = h.observation(Turn(parse_error="no JSON object", time_left_s=10))
    assert "could not be used: no JSON object" in text and "keystrokes" in text


def test_truncate_middle_is_utf8_safe():
    s = "é" * 1000
    t = truncate_middle(s, 100)
    assert t.encode("utf-8") and "truncated" in t


def test_fewshot_examples_teach_the_format_without_any_suite_task():
    from engine.config.paths import builtin_tasks_dir
    from engine.tasks import load_suite

    h = get_harness("xml-bash-fewshot")
    prompt = h.system_prompt()
    assert prompt.count("<bash>") >= 4 and prompt.count("<done/>") >= 3
    families = {t.metadata.get("family") for t in load_suite(builtin_tasks_dir()).tasks}
    for task in load_suite(builtin_tasks_dir()).tasks:  # no example is a suite task's instruction or answer
        solve = (task.solution_dir / "solve.sh").read_text().strip().splitlines()[-1]
        assert solve not in prompt and task.instruction.strip() not in prompt
    assert len(families) == 16
    assert h.parse("<bash>uname -s > /app/os.txt</bash>").commands[0].keystrokes == "uname -s > /app/os.txt"


@pytest.mark.parametrize(
    "reply, command, done",
    [
        ("```bash\nls -la /app\n```", "ls -la /app", False),
        (
            "Sure:\n```\n$ wc -l < /app/a.txt > /app/n.txt\n```\nThat counts lines.",
            "wc -l < /app/a.txt > /app/n.txt",
            False,
        ),
        ("```sh\nsudo cp /app/a /app/b\n```", "cp /app/a /app/b", False),  # no sudo in sandboxes
        ("```bash\ncp a b\n```\n```bash\nrm a\n```", "cp a b", False),  # one command per reply: the first
        ("DONE", None, True),
        ("The task is DONE.", None, True),
    ],
)
def test_fenced_bash_takes_the_first_code_block_or_done(reply: str, command: str | None, done: bool):
    action = get_harness("fenced-bash").parse(reply)
    assert [c.keystrokes for c in action.commands] == ([command] if command else [])
    assert action.done is done and not action.error


def test_fenced_bash_reports_what_is_missing():
    h = get_harness("fenced-bash")
    assert "no ```bash code block" in h.parse("I would copy the file.").error
    assert "not closed" in h.parse("```bash\nls /app").error


@pytest.mark.parametrize("name", ["fenced-bash", "fenced-bash-plain", "fenced-bash-primed", "fenced-bash-turns"])
def test_a_code_block_of_comments_only_is_refused_and_a_command_with_comments_runs(name: str):
    h = get_harness(name)
    for reply in ("```bash\n# count the lines first\n```", "```bash\n#!/bin/bash\n\n  # then sort\n```"):
        action = h.parse(reply)
        assert not action.commands and not action.done
        assert "only comments" in action.error
        assert "only comments" in h.observation(Turn(parse_error=action.error))
    action = h.parse("```bash\n# count them\nwc -l < /app/a.txt > /app/n.txt\n```")
    assert [c.keystrokes for c in action.commands] == ["# count them\nwc -l < /app/a.txt > /app/n.txt"]
    assert "DONE" in h.format_reminder()


def test_fenced_bash_plain_messages_read_like_its_examples_and_carry_no_budget_numbers():
    h = get_harness("fenced-bash-plain")
    assert h.first_message("Count the lines of /app/a.txt.\n", 120.0) == "Task: Count the lines of /app/a.txt."
    ok = h.observation(Turn([StepResult(Command("wc -l /app/a.txt"), "", 0, False)], time_left_s=97))
    failed = h.observation(Turn([StepResult(Command("cat /nope"), "No such file\n", 1, False)], time_left_s=97))
    assert ok == "Output: (nothing)" and failed == "Output: No such file (exit code 1)"
    assert "97" not in ok + failed and "seconds" not in ok + failed
    assert h.parse("```bash\nwc -l < /app/a.txt > /app/n.txt\n```").commands[0].keystrokes.startswith("wc -l")
    # Its worked examples sit outside the curriculum's families: no family's reference command
    # (cp, wc, head, grep, sort, ...) is shown.
    from engine.tasks.curriculum import FAMILIES, instance

    shown = h.system_prompt()
    for family in FAMILIES:
        command = instance(family, "train", 0, 0).solve.split()[0]
        assert f"```bash\n{command} " not in shown, family


@pytest.mark.parametrize(
    ("name", "reply"),
    [
        ("fenced-bash", "```bash\nls /app\n```"),
        ("xml-bash", "I will look. <bash>ls /app</bash>"),
        ("xml-bash", "<done/>"),
        (
            "terminus-json",
            '{"analysis": "a {brace}", "plan": "p", "commands": [{"keystrokes": "ls"}], "task_complete": false}',
        ),
        ("tool-call", '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>'),
    ],
)
def test_sampling_stops_once_the_action_is_complete_and_not_before(name: str, reply: str):
    """Every prefix short of the whole action is incomplete, the whole action is complete, and
    parsing the reply cut there gives the same action as the reply followed by more text."""
    harness = get_harness(name)
    cut = next(i for i in range(1, len(reply) + 1) if harness.action_complete(reply[:i]))
    assert cut == len(reply)
    assert harness.parse(reply) == harness.parse(reply + "\nand then some more words about it")


def test_fenced_bash_primed_opens_only_the_first_reply_and_reads_done_in_a_block():
    h = get_harness("fenced-bash-primed")
    assert (
        h.reply_prefix(0) == "```bash\n"
        and h.reply_prefix(1) == ""
        and get_harness("fenced-bash-plain").reply_prefix(0) == ""
    )
    # The model continues the prefix; the reply it is parsed as is the prefix plus what it wrote.
    assert h.parse(h.reply_prefix(0) + "cp /app/a /app/b\n```").commands[0].keystrokes == "cp /app/a /app/b"
    assert not h.action_complete(h.reply_prefix(0) + "cp /app/a") and h.action_complete(h.reply_prefix(0) + "ls\n```")
    assert h.parse("```bash\nDONE\n```").done and h.parse("DONE").done
    assert "not closed" in h.parse(h.reply_prefix(0) + "ls /app").error


def test_worked_examples_join_the_system_prompt_in_each_harness_format():
    from engine.rollout.harnesses import WorkedExample

    example = WorkedExample("Copy /app/a.txt to /app/b.txt.", (("cp /app/a.txt /app/b.txt", "Output: (nothing)"),))
    plain = get_harness("fenced-bash-primed")
    shown = plain.system_prompt_with((example,))
    assert shown.startswith(plain.system_prompt()) and plain.system_prompt_with(()) == plain.system_prompt()
    # The same layout as the built-in examples, the shown one last, nearest the task message.
    assert shown.endswith(
        "Task: Copy /app/a.txt to /app/b.txt.\n```bash\ncp /app/a.txt /app/b.txt\n```\nOutput: (nothing)\nDONE"
    )
    assert (
        get_harness("xml-bash")
        .system_prompt_with((example,))
        .endswith("<bash>cp /app/a.txt /app/b.txt</bash>\n(output: Output: (nothing))\n<done/>")
    )
    long = WorkedExample("x", (("cat /app/big", "y" * 5000),))
    assert (
        len(get_harness("terminus-json").system_prompt_with((long,)))
        < len(get_harness("terminus-json").system_prompt()) + 500
    )


def test_fenced_bash_turns_opens_every_reply_and_ends_with_done_in_the_block():
    """A task that needs a look first gets a command on every turn, and the model stops in the same
    format it acts in; the observation it reads is short enough for a small model's context."""
    from engine.rollout.harnesses import StepResult
    from engine.rollout.harnesses.base import Command, Turn

    h = get_harness("fenced-bash-turns")
    assert all(h.reply_prefix(turn) == "```bash\n" for turn in range(4))
    assert h.parse(h.reply_prefix(2) + "cat /app/settings.conf\n```").commands[0].keystrokes == "cat /app/settings.conf"
    assert h.parse(h.reply_prefix(1) + h.stop_reply()).done and h.parse(h.reply_prefix(1) + "DONE").done
    assert h.action_complete(h.reply_prefix(1) + "DONE")  # sampling stops at the stop word
    # Its examples show the stop in a block, and one task that needs a look before acting.
    prompt = h.system_prompt()
    assert prompt.count("```bash\nDONE\n```") == 4 and "whoami" in prompt
    assert "Task:" not in h.bare_system_prompt() and "DONE" in h.bare_system_prompt()
    # A long output keeps its head and tail within the plain harnesses' 2 KiB.
    big = "\n".join(f"line {i}" for i in range(2000))
    seen = h.observation(Turn([StepResult(Command("cat /app/big"), big, 0, False)]))
    assert len(seen.encode()) < 2200 and "line 0" in seen and "line 1999" in seen and "truncated" in seen
