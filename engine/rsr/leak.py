"""The deterministic leak scan: does a runbook carry text only the verifier or the solution knows?

Protected text is the task's tests and solution files, the verifier's output on the source
episode, and canary strings. Text the model legitimately saw or typed (the instruction, its own
commands and the observations it got) is allowed even where it coincides with protected text:
a model that found the reference command by itself may write it down.

Two detectors, both reported:
- fragments: protected lines and quoted strings of at least `MIN_FRAGMENT` characters found
  verbatim (whitespace-normalised) in the runbook;
- n-grams: word `N`-grams of the runbook that occur in protected text and nowhere in the allowed
  text. The score is the share of the runbook's n-grams that leaked (0 to 1); a canary scores 1.
Any fragment, canary or leaked n-gram makes the report `leaked`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from engine.store.records import LeakReport
from engine.tasks.canary import CANARY

N = 5
MIN_FRAGMENT = 12
_QUOTED = re.compile(r"'([^'\n]{%d,})'|\"([^\"\n]{%d,})\"" % (MIN_FRAGMENT, MIN_FRAGMENT))
_CANARY_LINE = re.compile(r"canary", re.IGNORECASE)
_TOKEN_ID = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}|[A-Za-z0-9-]{6,}-[0-9a-f]{4,}")
MAX_FILE_BYTES = 200_000


@dataclass(frozen=True)
class Protected:
    """What must not reach a runbook, and what the model was entitled to see."""

    texts: tuple[str, ...]
    canaries: tuple[str, ...]
    allowed: str


def _norm(text: str) -> str:
    return " ".join(text.split())


def _ngrams(text: str) -> list[tuple[str, ...]]:
    words = text.split()
    return [tuple(words[i : i + N]) for i in range(len(words) - N + 1)]


def read_protected_files(*directories: Path) -> list[str]:
    texts = []
    for directory in directories:
        if not directory.is_dir():
            continue
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                try:
                    texts.append(path.read_bytes()[:MAX_FILE_BYTES].decode("utf-8", errors="replace"))
                except OSError:
                    continue
    return texts


def canaries_in(texts: list[str]) -> list[str]:
    """The suite-wide canary plus any identifier on a line of protected text that says 'canary'."""
    found = {CANARY, CANARY.split()[1]}
    for text in texts:
        for line in text.splitlines():
            if _CANARY_LINE.search(line):
                found.update(m.group(0) for m in _TOKEN_ID.finditer(line))
    return sorted(found)


def protected_for(task_path: Path, *, verifier_output: str = "", allowed: str = "") -> Protected:
    texts = read_protected_files(task_path / "tests", task_path / "solution")
    if verifier_output:
        texts.append(verifier_output)
    return Protected(tuple(texts), tuple(canaries_in(texts)), allowed)


def scan(runbook: str, protected: Protected) -> LeakReport:
    matches: list[str] = [c for c in protected.canaries if c in runbook]
    if matches:
        return LeakReport(1.0, tuple(matches))
    body = _norm(runbook)
    allowed = _norm(protected.allowed)
    for text in protected.texts:
        candidates = [line for line in text.splitlines()]
        candidates += [a or b for a, b in _QUOTED.findall(text)]
        for fragment in candidates:
            fragment = _norm(fragment)
            if (
                len(fragment) >= MIN_FRAGMENT
                and fragment in body
                and fragment not in allowed
                and fragment not in matches
            ):
                matches.append(fragment)
    grams = _ngrams(body)
    if not grams:
        return LeakReport(0.0, tuple(matches))
    protected_grams = {g for text in protected.texts for g in _ngrams(_norm(text))}
    allowed_grams = set(_ngrams(allowed))
    leaked = [i for i, g in enumerate(grams) if g in protected_grams and g not in allowed_grams]
    for span in _spans(leaked):
        words = body.split()
        matches.append(" ".join(words[span[0] : span[1] + N]))
    score = len(leaked) / len(grams)
    return LeakReport(round(score, 4), tuple(dict.fromkeys(matches)))


def _spans(indices: list[int]) -> list[tuple[int, int]]:
    """Runs of consecutive n-gram starts, as (first, last) pairs."""
    spans: list[tuple[int, int]] = []
    for i in indices:
        if spans and i == spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], i)
        else:
            spans.append((i, i))
    return spans
