"""The round's own verified successes as worked examples for similar tasks (RSR explore).

A small model solves a task far more often when its prompt holds a worked example of a similar
one: the bundled 135M model went from 5 to 22 of 68 attempts on held-out train instances with
one example of the same kind of task (docs/results.md). So after the unaided attempts that
estimate each task's pass rate, explore attempts show the model up to `[rsr] examples` of the
round's verified successes on the most similar *other* tasks. The only source of these examples
is the model itself (its own commands, each re-checked by the verifier), never a reference
solution; and an SFT sample is rebuilt with the harness's own prompt, so the trained model has to
act without them, as a runbook is removed.

Similarity is the cosine of TF-IDF vectors of the instructions' prose over the split's tasks.
Paths, `code spans` and numbers are a task's parameters, not its kind, so they are left out;
the words that name a kind of task ("Rename", "alphabetically", "executable") then weigh more
than the words every task has. That works for any suite, not only the curriculum's families.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from engine.rollout.harnesses import WorkedExample

_PARAMETERS = re.compile(r"`[^`]*`|\S*/\S*|\b\d+\b")
_TERM = re.compile(r"[a-z]+")


def terms(text: str) -> list[str]:
    """The prose words of an instruction, without its paths, code spans and numbers."""
    return _TERM.findall(_PARAMETERS.sub(" ", text.lower()))


class ExampleIndex:
    """Nearest tasks by instruction, over a fixed set of tasks (the split the round explores)."""

    def __init__(self, instructions: dict[str, str]) -> None:
        counts = {name: Counter(terms(text)) for name, text in instructions.items()}
        df = Counter(t for c in counts.values() for t in c)
        n = len(counts)
        idf = {t: math.log((n + 1) / (d + 1)) + 1.0 for t, d in df.items()}
        self._vectors: dict[str, dict[str, float]] = {}
        for name, c in counts.items():
            vec = {t: k * idf[t] for t, k in c.items()}
            norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
            self._vectors[name] = {t: v / norm for t, v in vec.items()}

    def similarity(self, a: str, b: str) -> float:
        va, vb = self._vectors.get(a, {}), self._vectors.get(b, {})
        if len(vb) < len(va):
            va, vb = vb, va
        return sum(v * vb.get(t, 0.0) for t, v in va.items())

    def nearest(self, task: str, pool: dict[str, WorkedExample], k: int) -> tuple[WorkedExample, ...]:
        """Up to `k` examples of the pool (task name -> example) from the tasks most similar to
        `task`, never its own; the most similar last, nearest the task message. Ties go by name,
        so a resumed round shows the same examples."""
        ranked = sorted(
            ((self.similarity(task, other), other) for other in pool if other != task),
            key=lambda pair: (-pair[0], pair[1]),
        )
        return tuple(pool[other] for _, other in reversed(ranked[:k]))
