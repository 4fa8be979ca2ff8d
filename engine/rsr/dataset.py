"""SFT samples from verified replays: the task prompt, the observations and the model's own actions.

The runbook (and any review dialogue, which never enters an episode) is removed: the opening
user message is rebuilt without the runbook block and the whole conversation is re-tokenized
through the same chat template, keeping every action as the exact token ids the model sampled.
The loss mask is 1 on exactly those sampled ids and 0 on everything else.
"""

from __future__ import annotations

from typing import Callable

from engine.results import AgentStep
from engine.rollout.model_agent import without_guidance
from engine.rollout.token_buffer import ChatTokenizer, TokenBuffer, end_of_turn
from engine.store.records import Provenance, Sample


def build_sample(
    tok: ChatTokenizer,
    opening: list[dict],
    steps: list[AgentStep] | tuple[AgentStep, ...],
    *,
    runbook: str | None,
    provenance: Provenance,
    tools: list[dict] | None = None,
    reply_prefix: Callable[[int], str] | None = None,
    stop_reply: str | None = None,
) -> Sample:
    """`opening` is the episode's system and user messages as sent; for a replay the user one ends
    with `runbook`, which is removed (an explore episode saw none: `runbook` None).
    `reply_prefix` is the episode's harness's (Harness.reply_prefix): the text it opened replies
    with goes back in front of each action, as the model saw it, with mask 0.

    `stop_reply` (the harness's Harness.stop_reply, e.g. DONE), when given, is one more reply
    after the last step's observation, ending its turn, with mask 1: the steps passed every check,
    so what the model should do next is stop. It is the one reply of a sample that the model did
    not sample itself, in the exact words the harness defines; the caller leaves it out when the
    steps already end with a stop."""
    if not steps or any(not s.token_ids for s in steps):
        raise ValueError("a sample needs steps with their sampled token ids (a local policy's episode)")
    messages = [dict(m) for m in opening]
    if runbook is not None:
        messages[-1]["content"] = without_guidance(messages[-1]["content"], runbook)
    buf = TokenBuffer.start(tok, messages, tools)
    for i, step in enumerate(steps):
        prefix = reply_prefix(i) if reply_prefix is not None else ""
        if prefix:
            buf.add_prefix(tok.tokenize_text(prefix))
        if step.parse_error:
            # A reply the harness refused (unparseable, or a stop before any command) stays in the
            # context the later replies saw, but is not an action to imitate: mask 0.
            buf.add_prefix(list(step.token_ids))
        else:
            buf.add_sampled(step.token_ids)
        if i == len(steps) - 1 and not stop_reply:
            break
        messages.append({"role": "assistant", "content": step.action_text})
        buf.add_observation(tok, messages, step.output, sampled_stopped=step.token_ids[-1] in tok.stop_ids, tools=tools)
        messages.append({"role": "user", "content": step.output})
    if stop_reply:
        prefix = reply_prefix(len(steps)) if reply_prefix is not None else ""
        if prefix:
            buf.add_prefix(tok.tokenize_text(prefix))
        eot = end_of_turn(tok)
        buf.add_sampled([*tok.tokenize_text(stop_reply), *([eot] if eot is not None else [])])
    return Sample(tuple(buf.ids), tuple(buf.mask), provenance)


def sample_opening(opening: list[dict], harness: str, prompt: str) -> list[dict]:
    """The system and user messages a sample starts with. The system prompt is the harness's own
    (`prompt` "as-run"), without any worked examples the episode was shown (RSR explore shows the
    round's successes on similar tasks: the trained model must act without them); or the
    harness's prompt without its built-in examples too ("bare")."""
    from engine.rollout.harnesses import get_harness

    messages = [dict(m) for m in opening]
    if messages and messages[0].get("role") == "system":
        h = get_harness(harness)
        messages[0]["content"] = h.bare_system_prompt() if prompt == "bare" else h.system_prompt()
    return messages


def deduplicate(samples: list[Sample]) -> list[Sample]:
    seen: set[str] = set()
    unique = []
    for sample in samples:
        if sample.digest not in seen:
            seen.add(sample.digest)
            unique.append(sample)
    return unique


def family_of(task) -> str:
    """A task's family: the curriculum's `family`, else its `category`, else the name without its last part."""
    meta = getattr(task, "metadata", None) or {}
    return str(meta.get("family") or meta.get("category") or task.name.rsplit("-", 1)[0])


def balance(samples: list[Sample], family: dict[str, str], *, per_task: int, per_family: int) -> list[Sample]:
    """At most `per_task` samples of a task and `per_family` of a family (0: no cap), in stored order.

    A family's places go round-robin over its tasks, so one easy task cannot fill them: the model
    should learn the family, not one instance of it. The choice depends only on the stored order,
    so a resumed round trains on the same set."""
    by_task: dict[str, list[Sample]] = {}
    for sample in samples:
        by_task.setdefault(sample.provenance.task, []).append(sample)
    if per_task:
        by_task = {task: found[:per_task] for task, found in by_task.items()}
    by_family: dict[str, list[list[Sample]]] = {}
    for task, found in by_task.items():
        by_family.setdefault(family.get(task, task), []).append(found)
    chosen: set[str] = set()
    for groups in by_family.values():
        taken = 0
        for depth in range(max(len(g) for g in groups)):
            for group in groups:
                if depth < len(group) and (not per_family or taken < per_family):
                    chosen.add(group[depth].digest)
                    taken += 1
    return [s for s in samples if s.digest in chosen]
