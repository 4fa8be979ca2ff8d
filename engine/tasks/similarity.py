"""How alike two tasks are, from their instructions: what RSR's worked examples and RPR's task
choice both need (a task solved, or settled, says something about the tasks most like it).

The measure is the cosine of TF-IDF vectors of the instructions' prose over a fixed set of tasks
(the split a stage works on). Paths, `code spans` and numbers are a task's parameters, not its
kind, so they are left out; the words that name a kind of task ("Rename", "alphabetically",
"executable") then weigh more than the words every task has. The words the curriculum's
phrasings frame a task with ("Could you ...?", "I need you to ...": `FRAME_WORDS`) are wording,
not kind, and are left out too. That works for any suite, not only the curriculum's families.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from engine.tasks.families.phrasing import FRAME_WORDS

_PARAMETERS = re.compile(r"`[^`]*`|\S*/\S*|\b\d+\b")
_TERM = re.compile(r"[a-z]+")


def terms(text: str) -> list[str]:
    """The prose words of an instruction, without its paths, code spans, numbers and frame words."""
    return [t for t in _TERM.findall(_PARAMETERS.sub(" ", text.lower())) if t not in FRAME_WORDS]


class TaskSimilarity:
    def __init__(self, instructions: dict[str, str]) -> None:
        """`instructions`: task name -> instruction, for every task of the set."""
        counts = {name: Counter(terms(text)) for name, text in instructions.items()}
        df = Counter(t for c in counts.values() for t in c)
        n = len(counts)
        idf = {t: math.log((n + 1) / (d + 1)) + 1.0 for t, d in df.items()}
        self._vectors: dict[str, dict[str, float]] = {}
        for name, c in counts.items():
            vec = {t: k * idf[t] for t, k in c.items()}
            norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
            self._vectors[name] = {t: v / norm for t, v in vec.items()}

    def __call__(self, a: str, b: str) -> float:
        """Cosine similarity in [0, 1] of tasks `a` and `b` (0 for a task outside the set)."""
        va, vb = self._vectors.get(a, {}), self._vectors.get(b, {})
        if len(vb) < len(va):
            va, vb = vb, va
        return sum(v * vb.get(t, 0.0) for t, v in va.items())

    def nearest(self, task: str, others, k: int) -> list[str]:
        """Up to `k` names of `others` most similar to `task`, never `task` itself, most similar
        first; ties go by name, so the choice is the same every time."""
        ranked = sorted(((self(task, o), o) for o in others if o != task), key=lambda pair: (-pair[0], pair[1]))
        return [o for _, o in ranked[:k]]
