"""Several phrasings of one curriculum task: the same files, words and numbers, other wording.

A family gives the core of its instruction: an optional context sentence ("/app/a.conf sets a
limit.") and one or more ways to say the action, each an imperative clause in lower case
("copy /app/a.txt to /app/b.txt", "rename ..."/"move ...") or whole sentences ("How many ...?
Write ..."). `phrase` picks one and wraps a clause in a frame: plain imperative, a request
("Please ..."), a question ("Could you ...?") or a user story ("I need you to ...", "As the ops
person here, ..."); some draws also name the command that does it. A model trained on one
wording then has to read the task, not match it.

The choice comes from a generator of its own, seeded by the instance's name, so a family's
files, words and numbers are drawn exactly as they would be without phrasings. Frames hold no
number and no word of either split's pools (tests/test_curriculum.py checks both).
"""

from __future__ import annotations

import random
import re

from engine.tasks.families.registry import Draw

# {a}: the action as given; {A}: the same with a capital first letter.
FRAMES = (
    "{A}.",
    "{A}.",
    "Please {a}.",
    "Could you {a}?",
    "Can you {a}?",
    "I need you to {a}.",
    "As the ops person here, I need you to {a}.",
    "For the next release, {a}.",
)
# How a draw names the command that does it (`{tool}`), when it does.
HINTS = (" Use `{tool}`.", " You can use `{tool}` for this.", " Hint: `{tool}` does it.")


def phrasing_rng(draw: Draw) -> random.Random:
    """The generator of an instance's wording: its own, so the task's parameters never depend on it."""
    return random.Random(f"{draw.name}/phrasing")


def phrase(draw: Draw, *actions: str, context: str = "", tool: str = "") -> str:
    """The instruction of `draw`: `context`, then one of `actions` in one of the frames, and
    (for about a third of the draws, when `tool` is given) the command to use."""
    rng = phrasing_rng(draw)
    action = rng.choice(actions)
    frame = rng.choice(FRAMES)
    if action[:1].isupper():  # whole sentences ("How many ...? Write ..."): no frame
        text = action
    else:
        text = frame.format(a=action, A=action[:1].upper() + action[1:])
    if context:
        text = f"{context} {text}"
    hint = rng.choice(HINTS)
    if tool and rng.random() < 1 / 3:
        text += hint.format(tool=tool)
    return text + "\n"


# The words the frames and hints add, whatever the task: wording, not the kind of task. A measure
# of how alike two tasks are (engine/tasks/similarity.py) leaves them out, like paths and numbers.
FRAME_WORDS = frozenset(
    word
    for text in (*(f.format(a="", A="") for f in FRAMES), *(h.format(tool="") for h in HINTS))
    for word in re.findall(r"[a-z]+", text.lower())
)
