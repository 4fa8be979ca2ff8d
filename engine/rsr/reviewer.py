"""The reviewer: an agent that sees only the task text and the runbook, and returns a verdict.

The model's verdict is combined with deterministic checks (the runbook's format, and that it
names the files the task names). A reviewer reply that is not the requested JSON is retried;
if it stays unparseable the review either rejects (`reviewer_unparseable = "reject"`, the
default) or abstains and lets the deterministic checks decide (`"abstain"`), and says so.
"""

from __future__ import annotations

import json
import re

from engine.rsr.planner import format_problems
from engine.store.records import ReviewVerdict

REVIEWER_SYSTEM = """You review runbooks for terminal tasks. You get a task and a runbook. Answer with one \
JSON object and nothing else:
{"format_ok": true, "artifacts_named": true, "leakage_suspected": false, "approve": true, "reasons": ["..."]}
- format_ok: the runbook has a goal, numbered steps with commands, and a check.
- artifacts_named: it names the files or programs the task is about.
- leakage_suspected: it mentions hidden tests, graders, expected answers it could not know, or secret strings.
- approve: true only if format_ok and artifacts_named and not leakage_suspected."""

_PATH = re.compile(r"(?<![\w.])/(?:[\w.-]+/)*[\w.-]+")
_KEYS = ("format_ok", "artifacts_named", "leakage_suspected", "approve")


def reviewer_messages(instruction: str, runbook: str) -> list[dict]:
    return [
        {"role": "system", "content": REVIEWER_SYSTEM},
        {"role": "user", "content": f"Task:\n{instruction.strip()}\n\nRunbook:\n{runbook.strip()}\n\nJSON verdict:"},
    ]


def parse_verdict(text: str) -> ReviewVerdict | None:
    """The first JSON object in the reply with the four flags; None if there is none."""
    for match in re.finditer(r"\{", text):
        try:
            obj, _ = json.JSONDecoder().raw_decode(text[match.start() :])
        except json.JSONDecodeError:
            continue
        if not isinstance(obj, dict) or not all(k in obj for k in _KEYS):
            continue
        flags = {k: _truthy(obj[k]) for k in _KEYS}
        if None in flags.values():
            continue
        reasons = obj.get("reasons", [])
        reasons = [str(r) for r in reasons] if isinstance(reasons, list) else [str(reasons)]
        return ReviewVerdict(**flags, reasons=tuple(reasons))
    return None


def _truthy(value) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("false", "no"):
        return False
    return None


def artifacts_missing(instruction: str, runbook: str) -> list[str]:
    """Paths the task names that the runbook never mentions."""
    return [p for p in dict.fromkeys(_PATH.findall(instruction)) if p not in runbook]


def review_runbook(
    policy,
    instruction: str,
    runbook: str,
    *,
    seed: int | None = None,
    retries: int = 2,
    unparseable: str = "reject",
    max_tokens: int = 200,
) -> tuple[ReviewVerdict, str]:
    """The combined verdict, and the reviewer model's last raw reply (stored for inspection)."""
    model_verdict, raw = None, ""
    for attempt in range(1, retries + 2):
        gen = policy.generate(
            reviewer_messages(instruction, runbook),
            max_tokens=max_tokens,
            temperature=0.0 if attempt == 1 else 0.7,
            seed=None if seed is None else seed * 100 + attempt,
        )
        raw = gen.text
        model_verdict = parse_verdict(raw)
        if model_verdict is not None:
            break
    problems = format_problems(runbook)
    missing = artifacts_missing(instruction, runbook)
    reasons = [f"format: {p}" for p in problems] + [f"does not name {p}" for p in missing]
    format_ok, artifacts_named = not problems, not missing
    if model_verdict is None:
        reasons.append(
            f"reviewer reply was not a JSON verdict after {retries + 1} tries"
            + (" (abstained: deterministic checks decide)" if unparseable == "abstain" else "")
        )
        leakage, model_approves = False, unparseable == "abstain"
    else:
        reasons += [f"reviewer: {r}" for r in model_verdict.reasons]
        format_ok = format_ok and model_verdict.format_ok
        artifacts_named = artifacts_named and model_verdict.artifacts_named
        leakage, model_approves = model_verdict.leakage_suspected, model_verdict.approve
    approve = format_ok and artifacts_named and not leakage and model_approves
    return ReviewVerdict(format_ok, artifacts_named, leakage, approve, tuple(reasons)), raw
