"""Probe: a harness that shows what the task's paths hold before the first reply."""
import re, sys, shlex
from engine.rollout import harnesses as H
from engine.rollout.harnesses.fenced_bash import FencedBashTurns
from engine.rollout import model_agent as MA

import os
LS = os.environ.get("LOOK_LS", "ls")
PATH = re.compile(r"(?<![\w.])/[A-Za-z0-9_./-]*[A-Za-z0-9_]")

def look_command(instruction):
    paths = list(dict.fromkeys(PATH.findall(instruction)))
    parts = []
    for p in paths:
        q = shlex.quote(p)
        parts.append(f'if [ -d {q} ]; then echo "$ {LS} {p}"; {LS} {q}; elif [ -f {q} ]; then echo "$ cat {p}"; head -n 15 {q}; fi')
    return "; ".join(parts) or "true"

class Shown(FencedBashTurns):
    name = "fenced-bash-turns-shown"
    look = ""
    def first_message(self, instruction, time_left_s):
        msg = super().first_message(instruction, time_left_s)
        if self.look.strip():
            msg += "\n\nWhat the task's paths hold now:\n" + self.look.strip()
        return msg

_orig = MA.ModelAgent._act
def _act(self, task, sandbox, deadline):
    if isinstance(self.harness, Shown):
        r = sandbox.run(look_command(task.instruction), timeout=10)
        self.harness.look = r.output[:1500]
    return _orig(self, task, sandbox, deadline)
MA.ModelAgent._act = _act

H.HARNESSES[Shown.name] = Shown
import click
from trsi_tui import cli
for p in cli.cli.commands["eval"].params:
    if p.name == "harness":
        p.type = click.Choice(sorted(H.HARNESSES))
sys.argv = ["trsi-tui"] + sys.argv[1:]
cli.main()
