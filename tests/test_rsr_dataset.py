"""SFT samples from a real replay with the bundled model: runbook removed, loss only on sampled actions."""

from __future__ import annotations

import os

import pytest

from engine.config import Config
from engine.rollout.episode import run_episode
from engine.rollout.harnesses import get_harness
from engine.rollout.model_agent import ModelAgent, without_guidance
from engine.rollout.token_buffer import TokenBuffer
from engine.rsr.dataset import build_sample, deduplicate
from engine.store.records import Provenance
from engine.tasks import load_task
from tests.conftest import EXAMPLE_TASK
from tests.tui_data import CLEAN_RUNBOOK_TEXT

if not os.environ.get("CI"):
    pytest.importorskip("llama_cpp", reason="the model backend needs llama-cpp-python (installed by .ci/setup)")


@pytest.fixture(scope="module")
def replay():
    from engine.policy import load_policy

    policy = load_policy("bundled:smollm2-135m", n_ctx=4096)
    harness = get_harness("xml-bash")
    agent = ModelAgent(policy, harness, temperature=0.8, seed=7, max_turns=3, guidance=CLEAN_RUNBOOK_TEXT)
    result = run_episode(load_task(EXAMPLE_TASK), agent, config=Config(), backend="local", run_id="r")
    return policy, result


def test_the_replay_saw_the_runbook_but_the_sample_does_not(replay):
    policy, result = replay
    assert "A runbook that worked for this task before" in result.messages[1]["content"]
    sample = build_sample(
        policy,
        list(result.messages[:2]),
        result.steps,
        runbook=CLEAN_RUNBOOK_TEXT,
        provenance=Provenance("count-lines", "xml-bash", "src", result.episode_id),
    )
    text = policy._llm.detokenize(list(sample.ids)).decode("utf-8", errors="replace")  # noqa: SLF001
    assert "runbook" not in text.lower() and "## Preconditions" not in text
    assert "Count the lines of /app/input.txt" in text  # the task itself stays


def test_the_loss_mask_covers_exactly_the_sampled_action_tokens(replay):
    policy, result = replay
    sample = build_sample(
        policy,
        list(result.messages[:2]),
        result.steps,
        runbook=CLEAN_RUNBOOK_TEXT,
        provenance=Provenance("count-lines", "xml-bash", "src", result.episode_id),
    )
    # Replies the harness refused (parse errors) stay in the context but are not trained on.
    sampled = [t for step in result.steps if not step.parse_error for t in step.token_ids]
    assert [t for t, m in zip(sample.ids, sample.mask) if m] == sampled
    assert sample.action_tokens == len(sampled) and len(sample.ids) == len(sample.mask)
    # Everything after the prompt is the replay's own buffer, token for token.
    with_runbook = len(TokenBuffer.start(policy, list(result.messages[:2])).ids)
    stripped = [dict(m) for m in result.messages[:2]]
    stripped[1]["content"] = without_guidance(stripped[1]["content"], CLEAN_RUNBOOK_TEXT)
    without = len(TokenBuffer.start(policy, stripped).ids)
    assert without < with_runbook
    rest = list(sample.ids[without:])
    assert rest == list(result.token_ids[with_runbook : with_runbook + len(rest)])
    assert deduplicate([sample, sample]) == [sample]


def test_sft_trains_on_a_balanced_set_so_one_easy_family_cannot_fill_it():
    from engine.rsr.dataset import balance, family_of
    from engine.store.records import Sample
    from engine.tasks.task import EnvironmentSettings, Task

    def sample(task: str, k: int) -> Sample:
        return Sample(
            (sum(map(ord, task)), k, 7), (0, 1, 1), Provenance(task, "fenced-bash-plain", f"src-{k}", f"rep-{k}")
        )

    # make-executable: 3 easy tasks with 4 samples each; copy-file: one task with one sample.
    samples = [sample(f"make-executable-{t}", k) for t in range(3) for k in range(4)] + [sample("copy-file-0", 0)]
    family = {s.provenance.task: s.provenance.task.rsplit("-", 1)[0] for s in samples}
    chosen = balance(samples, family, per_task=2, per_family=4)
    per_task = {t: sum(s.provenance.task == t for s in chosen) for t in family}
    # At most 2 per task, 4 per family, spread over the family's tasks first, and the rare family kept.
    assert per_task == {"make-executable-0": 2, "make-executable-1": 1, "make-executable-2": 1, "copy-file-0": 1}
    assert [s.digest for s in chosen] == [s.digest for s in samples if s in chosen]  # stored order kept
    assert balance(samples, family, per_task=0, per_family=0) == samples
    task = Task("x-1", EXAMPLE_TASK, "", 1.0, 1.0, EnvironmentSettings(), metadata={"family": "count-lines"})
    assert family_of(task) == "count-lines"


def test_a_bare_sample_keeps_the_harness_instructions_and_drops_its_worked_examples():
    from engine.rsr.dataset import sample_opening

    plain = get_harness("fenced-bash-plain")
    opening = [{"role": "system", "content": plain.system_prompt()}, {"role": "user", "content": "Task: x"}]
    as_run = sample_opening(opening, "fenced-bash-plain", "as-run")
    bare = sample_opening(opening, "fenced-bash-plain", "bare")
    assert as_run == opening and "uname -s" in as_run[0]["content"]
    assert "uname -s" not in bare[0]["content"] and plain.system_prompt().startswith(bare[0]["content"])
    assert bare[1] == opening[1] and opening[0]["content"] == plain.system_prompt()  # the stored episode is untouched
    # The harness that evaluates such a model shows it exactly the prompt it was trained on.
    assert get_harness("fenced-bash-bare").system_prompt() == bare[0]["content"]
    assert "Example" not in get_harness("fenced-bash").bare_system_prompt()


def test_a_sample_taught_to_stop_ends_with_the_harness_stop_after_the_last_observation(replay):
    """With several turns the trained model must know when it is done: the sample's last reply is
    the harness's DONE, after what the last command printed, and it is trained on (mask 1)."""
    policy, result = replay
    steps = result.steps[:1]
    provenance = Provenance("count-lines", "xml-bash", "src", result.episode_id)
    opening = list(result.messages[:2])
    plain = build_sample(policy, opening, steps, runbook=CLEAN_RUNBOOK_TEXT, provenance=provenance)
    taught = build_sample(
        policy, opening, steps, runbook=CLEAN_RUNBOOK_TEXT, provenance=provenance, stop_reply="<done/>"
    )
    assert taught.ids[: len(plain.ids)] == plain.ids  # the verified steps as they were
    detok = policy._llm.detokenize  # noqa: SLF001
    tail = detok(list(taught.ids[len(plain.ids) :])).decode("utf-8", errors="replace")
    assert steps[0].output.strip()[:20] in tail  # the last command's observation comes first
    assert tail.endswith("assistant\n<done/>")
    trained = [t for t, m in zip(taught.ids[len(plain.ids) :], taught.mask[len(plain.ids) :]) if m]
    # The stop reply and the token that ends the turn: the model learns to end its reply there.
    assert detok(trained[:-1]).decode() == "<done/>" and trained[-1] in policy.stop_ids
    assert get_harness("xml-bash").parse("<done/>").done and get_harness("fenced-bash-primed").stop_reply() == "DONE"
