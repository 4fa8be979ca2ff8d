"""fenced-bash: one command in a ```bash code block per reply, DONE when finished; worked examples.

Small chat models write shell commands in markdown code fences on their own; asking for the
format they already use, and showing it three times, gets parseable replies where XML tags or
JSON do not. The examples use tasks outside the built-in suite's families.
"""

from __future__ import annotations

import re

from engine.rollout.harnesses.base import Action, Command, Harness, Turn, WorkedExample, short_output, truncate_middle

_FENCE = re.compile(r"```[ \t]*(?:bash|sh|shell|console)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_DONE = re.compile(r"(?<![A-Za-z])DONE(?![A-Za-z])")

SYSTEM = """You are an expert Linux user. You complete a task by running bash commands.
Reply with exactly one command inside a ```bash code block and nothing else.
You then see the command's output. When the task is complete, reply with DONE.

Example
Task: Write the name of the kernel to /app/os.txt.
Reply:
```bash
uname -s > /app/os.txt
```
Output: (nothing)
Reply: DONE

Example
Task: Delete every .tmp file under /app/cache.
Reply:
```bash
find /app/cache -name '*.tmp' -delete
```
Output: (nothing)
Reply: DONE

Example
Task: Save the first 3 lines of /app/log.txt to /app/head.txt.
Reply:
```bash
head -n 3 /app/log.txt > /app/head.txt
```
Output: (nothing)
Reply: DONE"""


_SUDO = re.compile(r"^(\s*)sudo\s+(?:-\S+\s+)*")


COMMENTS_ONLY = "the code block holds only comments (lines starting with #): write the command itself"


def _clean(block: str) -> str:
    """Shell-prompt markers go; so does a leading sudo: sandboxes have no sudo, and the agent
    already has the rights the task needs, so `sudo cp a b` means `cp a b`."""
    lines = [line[2:] if line.startswith("$ ") else line for line in block.strip().splitlines()]
    return "\n".join(_SUDO.sub(r"\1", line) for line in lines).strip()


class FencedBash(Harness):
    name = "fenced-bash"

    def system_prompt(self) -> str:
        return SYSTEM

    def bare_system_prompt(self) -> str:
        return SYSTEM.split("\n\nExample")[0]

    def format_reminder(self) -> str:
        return "Reply with one command in a ```bash code block, or DONE when the task is complete."

    def stop_reply(self) -> str:
        return "DONE"

    def render_example(self, example: WorkedExample) -> str:
        lines = ["Example", f"Task: {example.instruction.strip()}"]
        for command, observation in example.steps:
            lines += ["Reply:", f"```bash\n{command}\n```", f"Output: {short_output(observation)}"]
        return "\n".join([*lines, "Reply: DONE"])

    def action_complete(self, text: str) -> bool:
        """A closed code block, or DONE: what follows would never be read."""
        return bool(_FENCE.search(text) or _DONE.search(text))

    def parse(self, text: str, tool_calls: list[dict] | None = None) -> Action:
        match = _FENCE.search(text)
        if match and _clean(match.group(1)):
            command = _clean(match.group(1))
            if all(line.lstrip().startswith("#") for line in command.splitlines() if line.strip()):
                # Run, it prints nothing and reads as a step that worked; and in an SFT sample a
                # refused reply carries no loss, so a success is not taught to open with notes.
                return Action(error=COMMENTS_ONLY)
            return Action((Command(command),), False)
        if _DONE.search(text):
            return Action((), True)
        if "```" in text:
            return Action(error="a code block was opened but not closed, or it was empty")
        return Action(error="no ```bash code block and no DONE was found")


BARE_SYSTEM = """You complete a task by running bash commands.
Reply with one command inside a ```bash code block.
You then see its output. When the task is complete, reply with DONE."""

PLAIN_SYSTEM = (
    BARE_SYSTEM
    + """

Task: Write the name of the kernel to /app/os.txt.
```bash
uname -s > /app/os.txt
```
Output: (nothing)
DONE

Task: Delete every .tmp file under /app/cache.
```bash
find /app/cache -name '*.tmp' -delete
```
Output: (nothing)
DONE

Task: Save the disk usage of /app/data to /app/usage.txt.
```bash
du -sh /app/data > /app/usage.txt
```
Output: (nothing)
DONE"""
)


class FencedBashPlain(FencedBash):
    """fenced-bash whose messages read exactly like its worked examples.

    The task message is `Task: ...` and nothing else, and a command's result is `Output: ...`:
    no time budget and no exit code unless it failed. The bundled 135M model copied the numbers
    it saw into its commands (`echo 120 > /app/lines.txt` after "You have 120 seconds"), so the
    messages carry no number the task did not. The examples are outside the curriculum's
    families."""

    name = "fenced-bash-plain"
    # A small model's context is short (2048 tokens for the bundled one): a `cat` of a big file
    # must not push the task out of it. Head and tail are kept, with how much was cut between.
    default_observation_cap = 2048

    def system_prompt(self) -> str:
        return PLAIN_SYSTEM

    def bare_system_prompt(self) -> str:
        return BARE_SYSTEM

    def first_message(self, instruction: str, time_left_s: float) -> str:
        return f"Task: {instruction.strip()}"

    def render_example(self, example: WorkedExample) -> str:
        """Like the built-in examples; the observation is the one this harness showed ("Output: ...")."""
        lines = [f"Task: {example.instruction.strip()}"]
        for command, observation in example.steps:
            lines += [f"```bash\n{command}\n```", short_output(observation)]
        return "\n".join([*lines, "DONE"])

    def observation(self, turn: Turn) -> str:
        if turn.parse_error:
            return f"Your reply could not be used: {turn.parse_error}\n{self.format_reminder()}"
        parts = []
        for r in turn.results:
            output = truncate_middle(r.output, self.observation_cap).strip() or "(nothing)"
            failed = " (timed out)" if r.timed_out else (f" (exit code {r.exit_code})" if r.exit_code else "")
            parts.append(f"Output: {output}{failed}")
        return "\n".join(parts) or "Output: (nothing)"


class FencedBashBare(FencedBashPlain):
    """fenced-bash-plain without its worked examples: for a model trained to act without them
    (`[rsr] sample_prompt = "bare"`), with a prompt a third as long."""

    name = "fenced-bash-bare"

    def system_prompt(self) -> str:
        return BARE_SYSTEM


class FencedBashPrimed(FencedBashPlain):
    """fenced-bash-plain whose first reply starts already inside a ```bash block.

    The bundled 135M model, asked for a command, mostly answers with prose, Python or C# (measured
    on train-split instances: docs/results.md). Priming its first reply with the opening fence
    leaves it only the command to write. Later turns are not primed, so that it can reply DONE; a
    block holding only DONE also counts as DONE."""

    name = "fenced-bash-primed"

    def reply_prefix(self, turn: int) -> str:
        return "```bash\n" if turn == 0 else ""

    def parse(self, text: str, tool_calls: list[dict] | None = None) -> Action:
        match = _FENCE.search(text)
        if match and _clean(match.group(1)) == "DONE":
            return Action((), True)
        return super().parse(text, tool_calls)


class FencedBashPrimedBare(FencedBashPrimed):
    """fenced-bash-primed without its worked examples: for a model trained on samples that carry
    the bare prompt (`[rsr] sample_prompt = "bare"`) under fenced-bash-primed."""

    name = "fenced-bash-primed-bare"

    def system_prompt(self) -> str:
        return BARE_SYSTEM


TURNS_SYSTEM = """You complete a task by running bash commands, one per reply, inside a ```bash code block.
You then see the command's output. Look at what a task refers to before you change it.
When the task is complete, reply with DONE inside the code block.

Task: Write the name of the kernel to /app/os.txt.
```bash
uname -s > /app/os.txt
```
Output: (nothing)
```bash
DONE
```

Task: Delete every .tmp file under /app/cache.
```bash
find /app/cache -name '*.tmp' -delete
```
Output: (nothing)
```bash
DONE
```

Task: Save the disk usage of /app/data to /app/usage.txt.
```bash
du -sh /app/data > /app/usage.txt
```
Output: (nothing)
```bash
DONE
```

Task: Create the directory /app/home_<user>, where <user> is the user you run as.
```bash
whoami
```
Output: root
```bash
mkdir /app/home_root
```
Output: (nothing)
```bash
DONE
```"""


class FencedBashTurns(FencedBashPrimed):
    """fenced-bash-primed for several turns: every reply opens inside a ```bash block, and the model
    stops by writing DONE in it.

    fenced-bash-primed primes only the first reply, so that the model can reply DONE later; but
    unprimed, the bundled 135M model answers a command's output with prose, so a task that needs
    a second command (read a value, then act on it) never gets one. Here every reply is primed and
    DONE is a command-like reply of its own; the worked examples show a task done in one command
    and a task that needs a look first, and how each ends."""

    name = "fenced-bash-turns"

    def system_prompt(self) -> str:
        return TURNS_SYSTEM

    def bare_system_prompt(self) -> str:
        return TURNS_SYSTEM.split("\n\nTask:")[0]

    def reply_prefix(self, turn: int) -> str:
        return "```bash\n"

    def stop_reply(self) -> str:
        # Continues the reply prefix, as the model would write it.
        return "DONE\n```"

    def render_example(self, example: WorkedExample) -> str:
        lines = [f"Task: {example.instruction.strip()}"]
        for command, observation in example.steps:
            lines += [f"```bash\n{command}\n```", short_output(observation)]
        return "\n".join([*lines, "```bash\nDONE\n```"])
