"""xml-bash-fewshot: xml-bash with three worked examples in the system prompt.

Small models follow a format they have seen far more reliably than one they are told about
(the bundled 135M model answers one-command tasks about ten times as often with examples).
The examples use tasks outside the built-in suite's families, so they teach the format and
the habit of writing results to files, not any task's answer.
"""

from __future__ import annotations

from engine.rollout.harnesses.xml_bash import XmlBash

EXAMPLES = """

Example 1
Task: Write the name of the kernel to /app/os.txt.
<bash>uname -s > /app/os.txt</bash>
(output: nothing)
<done/>

Example 2
Task: Delete every .tmp file under /app/cache.
<bash>find /app/cache -name '*.tmp' -delete</bash>
(output: nothing)
<done/>

Example 3
Task: Save the first 3 lines of /app/log.txt to /app/head.txt.
<bash>head -n 3 /app/log.txt > /app/head.txt</bash>
(output: nothing)
<done/>"""


class XmlBashFewShot(XmlBash):
    name = "xml-bash-fewshot"

    def system_prompt(self) -> str:
        return super().system_prompt() + "\nReply with exactly one <bash> command per message." + EXAMPLES
