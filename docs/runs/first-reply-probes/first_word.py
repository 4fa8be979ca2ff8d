"""Probe: explore attempts whose first reply opens with a command word from an everyday vocabulary
(attempt k of a task gets word k): does a never-solved family get a first success?"""
import sys, threading, collections
from engine.rollout import harnesses as H
from engine.rollout.harnesses.fenced_bash import FencedBashTurns
from engine.rollout import model_agent as MA

VOCAB = "echo printf cat head tail grep cut sed awk sort uniq wc tr cp mv rm mkdir touch ln chmod tar find ls".split()

class FirstWord(FencedBashTurns):
    name = "fenced-bash-turns-word"
    word = ""
    def reply_prefix(self, turn):
        return "```bash\n" + (self.word + " " if turn == 0 and self.word else "")

_lock = threading.Lock()
_count = collections.Counter()
_orig = MA.ModelAgent._act
def _act(self, task, sandbox, deadline):
    if isinstance(self.harness, FirstWord):
        with _lock:
            k = _count[task.name]; _count[task.name] += 1
        self.harness.word = VOCAB[k % len(VOCAB)]
    return _orig(self, task, sandbox, deadline)
MA.ModelAgent._act = _act

H.HARNESSES[FirstWord.name] = FirstWord
import click
from trsi_tui import cli
for p in cli.cli.commands["eval"].params:
    if p.name == "harness":
        p.type = click.Choice(sorted(H.HARNESSES))
sys.argv = ["trsi-tui"] + sys.argv[1:]
cli.main()
