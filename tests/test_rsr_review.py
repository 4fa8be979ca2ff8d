"""Planner format checks and the reviewer's verdict: parsing, deterministic checks, and how they combine."""

from __future__ import annotations

from engine.policy.base import Generation
from engine.results import AgentStep
from engine.rsr.planner import draft_runbook, format_problems, template_runbook
from engine.rsr.reviewer import artifacts_missing, parse_verdict, review_runbook
from tests.tui_data import CLEAN_RUNBOOK_TEXT

INSTRUCTION = "Count the lines of /app/input.txt and write the number alone to /app/count.txt."
STEPS = (
    AgentStep("wc -l < /app/input.txt > /app/count.txt", "", 0, False, 0.0),
    AgentStep("cat /app/count.txt", "5", 0, False, 0.0),
)


class ScriptedPolicy:
    """Replies from a list, in order: a test double for the model's text, nothing else."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.prompts: list[list[dict]] = []

    def generate(self, messages, *, max_tokens, temperature, seed=None, tools=None) -> Generation:
        self.prompts.append(messages)
        return Generation(self.replies.pop(0) if self.replies else "")


def test_format_problems_name_what_is_missing():
    assert format_problems(CLEAN_RUNBOOK_TEXT) == []
    problems = format_problems("# Goal\nDo it.\n## Steps\n1. just do it\n")
    assert "missing section '## Check'" in problems and "no numbered step with a command in backticks" in problems


def test_a_garbled_planner_falls_back_to_the_template_and_says_so():
    policy = ScriptedPolicy("sure! here is a runbook", "I cannot", "```bash\nls\n```")
    draft = draft_runbook(policy, INSTRUCTION, STEPS, retries=2)
    assert draft.author == "template" and draft.attempts == 3 and format_problems(draft.text) == []
    assert "`wc -l < /app/input.txt > /app/count.txt`" in draft.text
    assert draft.problems  # what the last planner draft lacked is kept
    assert policy.prompts[0][1]["content"].count("$ ") == 2  # the planner saw the commands, not the verifier


def test_a_well_formed_planner_draft_is_kept_as_written():
    draft = draft_runbook(ScriptedPolicy(CLEAN_RUNBOOK_TEXT), INSTRUCTION, STEPS)
    assert (draft.author, draft.attempts, draft.text) == ("planner", 1, CLEAN_RUNBOOK_TEXT.strip())


def test_parse_verdict_reads_the_first_complete_json_object():
    text = (
        'Verdict: {"format_ok": "yes", "artifacts_named": true, "leakage_suspected": false, "approve": true, '
        '"reasons": "clear"} trailing'
    )
    v = parse_verdict(text)
    assert v is not None and v.approve and v.format_ok and v.reasons == ("clear",)
    assert parse_verdict('{"approve": true}') is None
    assert parse_verdict("no json here {") is None
    assert parse_verdict('{"format_ok": 3, "artifacts_named": 1, "leakage_suspected": 0, "approve": 1}') is None


def test_reviewer_sees_only_the_task_and_the_runbook():
    policy = ScriptedPolicy('{"format_ok": true, "artifacts_named": true, "leakage_suspected": false, "approve": true}')
    verdict, _ = review_runbook(policy, INSTRUCTION, CLEAN_RUNBOOK_TEXT)
    assert verdict.approve
    ((system, user),) = policy.prompts
    assert user["content"] == f"Task:\n{INSTRUCTION}\n\nRunbook:\n{CLEAN_RUNBOOK_TEXT.strip()}\n\nJSON verdict:"


def test_reviewer_leak_suspicion_or_missing_artifacts_reject():
    suspicious = '{"format_ok": true, "artifacts_named": true, "leakage_suspected": true, "approve": true}'
    verdict, _ = review_runbook(ScriptedPolicy(suspicious), INSTRUCTION, CLEAN_RUNBOOK_TEXT)
    assert not verdict.approve and verdict.leakage_suspected
    ok = '{"format_ok": true, "artifacts_named": true, "leakage_suspected": false, "approve": true}'
    partial = template_runbook("Write hi to /app/a.txt", STEPS)
    verdict, _ = review_runbook(ScriptedPolicy(ok), "Count /app/input.txt into /app/other.txt", partial)
    assert not verdict.approve and "does not name /app/other.txt" in verdict.reasons
    assert artifacts_missing(INSTRUCTION, CLEAN_RUNBOOK_TEXT) == []


def test_an_unparseable_reviewer_rejects_by_default_or_abstains_when_configured():
    garbled = ("I think it is good", "yes", "approve")
    verdict, raw = review_runbook(ScriptedPolicy(*garbled), INSTRUCTION, CLEAN_RUNBOOK_TEXT)
    assert not verdict.approve and raw == "approve"
    assert any("not a JSON verdict after 3 tries" in r for r in verdict.reasons)
    verdict, _ = review_runbook(ScriptedPolicy(*garbled), INSTRUCTION, CLEAN_RUNBOOK_TEXT, unparseable="abstain")
    assert verdict.approve and any("abstained" in r for r in verdict.reasons)
