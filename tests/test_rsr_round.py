"""An RSR round end to end in real sandboxes: explore, runbooks, reviews, approval, replay, dataset, SFT.

The model's *choices* come from a scripted policy on the bundled model's real tokenizer and chat
template (the 135M model succeeds too rarely to test a round deterministically); everything else
is the real thing: sandboxes, verifier, store, leak scan, dataset building, QLoRA and GGUF export.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from engine.config import Config, RsrConfig, SftSection
from engine.events import EventBus, RsrProgress
from engine.policy.base import Generation, LocalPolicy
from engine.resumable import WorkContext
from engine.rsr.planner import PLANNER_SYSTEM
from engine.rsr.reviewer import REVIEWER_SYSTEM
from engine.rsr.round import RsrRound
from engine.store import Store
from engine.tasks.canary import CANARY
from tests.conftest import write_task

if not os.environ.get("CI"):
    pytest.importorskip("llama_cpp", reason="needs the model extra (installed by .ci/setup)")
    pytest.importorskip("peft", reason="needs the hf extra (installed by .ci/setup)")

APPROVE = '{"format_ok": true, "artifacts_named": true, "leakage_suspected": false, "approve": true, "reasons": ["ok"]}'


class ScriptedModel(LocalPolicy):
    """Real tokenizer and template (the bundled model's); replies chosen by the test."""

    def __init__(self, real, runbook_for) -> None:
        self.real, self.runbook_for = real, runbook_for
        self.name, self.n_ctx = "scripted", real.n_ctx

    @property
    def stop_ids(self):
        return self.real.stop_ids

    def tokenize_chat(self, messages, *, add_generation_prompt, tools=None):
        return self.real.tokenize_chat(messages, add_generation_prompt=add_generation_prompt, tools=tools)

    def tokenize_text(self, text):
        return self.real.tokenize_text(text)

    def generate(self, messages, *, max_tokens, temperature, seed=None, tools=None):
        system, user = messages[0]["content"], messages[1]["content"]
        if system == PLANNER_SYSTEM:
            return Generation(self.runbook_for(user))
        if system == REVIEWER_SYSTEM:
            return Generation(APPROVE)
        return super().generate(messages, max_tokens=max_tokens, temperature=temperature, seed=seed, tools=tools)

    def generate_ids(self, prompt, *, max_tokens, temperature, seed=None):
        text = "<bash>echo hello > /app/out.txt</bash><done/>"
        ids = self.real._llm.tokenize(text.encode(), add_bos=False, special=False) + [min(self.stop_ids)]  # noqa: SLF001
        return Generation(text, tuple(ids), tuple([-0.1] * len(ids)), len(prompt), "stop")


def runbook(user: str) -> str:
    leak = f"\nMarker: {CANARY}\n" if "leaky-task" in user or "leaky" in user else ""
    return (
        "# Goal\nWrite hello to /app/out.txt.\n\n## Preconditions\n- /app exists.\n\n## Steps\n"
        "1. `echo hello > /app/out.txt` (expect: no output)\n\n## Check\n/app/out.txt says hello.\n" + leak
    )


@pytest.fixture(scope="module")
def real_policy():
    from engine.policy import load_policy

    return load_policy("bundled:smollm2-135m", n_ctx=2048)


def make_round(tmp_path: Path, real_policy, *, approval="auto", stop=None, store=None, bus=None, concurrency=2):
    suite = tmp_path / "suite"
    if not suite.exists():
        write_task(suite, "hello-a")
        write_task(suite, "hello-b", instruction="Write hello to /app/out.txt (leaky variant).")
    settings = RsrConfig(
        approval=approval,
        attempts=1,
        harnesses=["xml-bash"],
        split="",
        max_turns=2,
        sft=SftSection(epochs=1, rank=4, alpha=8),
    )
    ctx = WorkContext(
        config=Config(),
        store=store or Store(tmp_path / "db.sqlite"),
        bus=bus or EventBus(),
        backend="local",
        checkpoints_dir=tmp_path / "ckpt",
        tasks=suite,
        concurrency=concurrency,
        should_stop=stop or (lambda: False),
    )
    return RsrRound(
        ctx, round=1, model="bundled:smollm2-135m", settings=settings, policy=ScriptedModel(real_policy, runbook)
    )


def test_a_full_round_keeps_clean_runbooks_trains_and_exports(tmp_path: Path, real_policy):
    rnd = make_round(tmp_path, real_policy)
    report = rnd.run()
    store = rnd.store
    assert (report.explored, report.successes) == (2, 2)
    # What doing nothing earns was measured once per task, apart from the explore attempts.
    assert sorted(k for k in store.rsr.jobs(1, "nop")) == ["hello-a", "hello-b"]
    assert all(not ok for _, ok in store.rsr.jobs(1, "nop").values())
    # The leaky runbook (it quotes the canary) is rejected by the leak scan; the clean one approved.
    by_task = {rb.task: rb for rb in store.runbooks.list(round=1)}
    assert by_task["hello-b"].status == "rejected" and by_task["hello-b"].leak.leaked
    assert by_task["hello-a"].status == "approved" and by_task["hello-a"].decided_by == "auto"
    # hello-a: its replay passed, so its sample is the replay's. hello-b: no runbook survived, so
    # its explore success itself is the sample (explore_fallback), cut to the commands it needed.
    assert (report.replays, report.replay_successes, report.samples) == (1, 1, 2)
    sample, fallback = sorted(store.rsr.samples(1), key=lambda s: s.provenance.task)
    text = real_policy._llm.detokenize(list(sample.ids)).decode()  # noqa: SLF001
    assert "runbook" not in text.lower() and "Write hello to /app/out.txt." in text
    assert sample.provenance.task == "hello-a" and sample.provenance.runbook_id == by_task["hello-a"].id
    assert fallback.provenance.task == "hello-b" and fallback.provenance.runbook_id == ""
    assert fallback.provenance.replay_episode_id == fallback.provenance.source_episode_id
    assert any("explore_fallback" in n for n in report.notes)
    assert report.checkpoint.startswith("bundled:smollm2-135m+lora=") and report.checkpoint.endswith("adapter.gguf")
    assert [p.name for p in store.metrics.points("rsr-1-sft")] == ["sft/loss"]
    assert store.rsr.round(1).stage == "done"


def test_a_killed_round_resumes_without_losing_or_duplicating_work(tmp_path: Path, real_policy):
    store = Store(tmp_path / "db.sqlite")
    first = make_round(
        tmp_path, real_policy, store=store, concurrency=1, stop=lambda: len(store.rsr.jobs(1, "explore")) >= 1
    )
    with pytest.raises(InterruptedError):
        first.run()  # stops after the first explore episode is stored, before runbooks
    assert len(store.rsr.jobs(1, "explore")) == 1
    report = make_round(tmp_path, real_policy, store=store).run()
    explore_eps = [e for r in store.runs.list(50) if r.kind == "rsr-explore" for e in store.runs.episodes(r.id)]
    assert len(explore_eps) == 2 and report.explored == 2  # the stored attempt was not run again
    nop_eps = [e for r in store.runs.list(50) if r.kind == "rsr-nop" for e in store.runs.episodes(r.id)]
    assert len(nop_eps) == 2  # measured once per task, not again on resume
    assert len(store.runbooks.list(round=1)) == 2 and report.samples == 2
    again = make_round(tmp_path, real_policy, store=store).run()  # a finished round is a no-op
    assert again.samples == 2 and len(store.runbooks.list(round=1)) == 2 and again.checkpoint == report.checkpoint


def test_manual_approval_blocks_until_a_person_decides(tmp_path: Path, real_policy):
    store, bus = Store(tmp_path / "db.sqlite"), EventBus()
    stages = []
    bus.subscribe(lambda e: stages.append(e.stage) if isinstance(e, RsrProgress) else None)
    rnd = make_round(tmp_path, real_policy, approval="manual", store=store, bus=bus)
    result = {}
    worker = threading.Thread(target=lambda: result.setdefault("report", rnd.run()))
    worker.start()
    deadline = time.monotonic() + 120
    while "approval" not in stages and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.5)
    assert worker.is_alive() and store.rsr.jobs(1, "replay") == {}  # waiting, nothing replayed yet
    pending = store.runbooks.list(status="pending", round=1)
    assert len(pending) == 2  # manual mode holds every draft, whatever the reviews said
    for rb in pending:
        store.runbooks.decide(rb.id, "approved" if rb.task == "hello-a" else "rejected", by="human")
    worker.join(timeout=300)
    assert not worker.is_alive() and result["report"].replays == 1


class TwoStepModel(ScriptedModel):
    """Right on the first turn, then one more harmless command, never <done/>."""

    def generate_ids(self, prompt, *, max_tokens, temperature, seed=None):
        seen = self.real._llm.detokenize(list(prompt)).decode(errors="ignore")  # noqa: SLF001
        text = (
            "<bash>ls /app</bash>"
            if "echo hello > /app/out.txt</bash>" in seen
            else "<bash>echo hello > /app/out.txt</bash>"
        )
        ids = self.real._llm.tokenize(text.encode(), add_bos=False, special=False) + [min(self.stop_ids)]  # noqa: SLF001
        return Generation(text, tuple(ids), tuple([-0.1] * len(ids)), len(prompt), "stop")


def test_an_explore_success_no_replay_reproduced_is_trained_on_up_to_the_commands_it_needed(tmp_path, real_policy):
    rnd = make_round(tmp_path, real_policy)
    rnd._policy = TwoStepModel(real_policy, lambda user: runbook(user + " leaky"))  # noqa: SLF001 - every runbook leaks
    report = rnd.run()
    store = rnd.store
    assert report.successes == 2 and report.replays == 0  # both runbooks rejected: nothing to replay
    # Re-run in fresh sandboxes, the first command alone passes every check for both tasks.
    assert {k: ok for k, (_, ok) in store.rsr.jobs(1, "prefix").items()} == {
        "hello-a|xml-bash|0|1": True,
        "hello-b|xml-bash|0|1": True,
    }
    samples = store.rsr.samples(1)
    assert len(samples) == 2 and report.checkpoint
    for sample in samples:
        trained = real_policy._llm.detokenize([t for t, m in zip(sample.ids, sample.mask) if m]).decode()  # noqa: SLF001
        assert "echo hello > /app/out.txt" in trained and "ls /app" not in trained  # the idle second turn is cut


class FencedModel(ScriptedModel):
    """Replies as fenced-bash-plain expects, whose observations do not repeat the command."""

    def generate_ids(self, prompt, *, max_tokens, temperature, seed=None):
        text = "```bash\necho hello > /app/out.txt\n```"
        ids = self.real._llm.tokenize(text.encode(), add_bos=False, special=False) + [min(self.stop_ids)]  # noqa: SLF001
        return Generation(text, tuple(ids), tuple([-0.1] * len(ids)), len(prompt), "stop")


def test_an_explore_command_that_equals_the_reference_solution_is_not_a_leak(tmp_path, real_policy):
    """The model typed the solution's exact line without seeing it: the right answer, not a leak."""
    rnd = make_round(tmp_path, real_policy)
    rnd._policy = FencedModel(real_policy, lambda user: runbook(user + " leaky"))  # noqa: SLF001 - runbooks rejected
    rnd.settings = rnd.settings.model_copy(update={"harnesses": ["fenced-bash-plain"], "max_turns": 1})
    solve = (rnd.tasks_path / "hello-a" / "solution" / "solve.sh").read_text()
    assert "echo hello > /app/out.txt" in solve  # the reference solution is exactly the model's command
    report = rnd.run()
    assert (report.successes, report.replays, report.samples) == (2, 0, 2)


class LearnsFromExamples(ScriptedModel):
    """Primed replies (fenced-bash-primed opens them with the fence): solves hello-a on its own, and
    hello-b only when its prompt shows a worked example of another task."""

    seeds: list[tuple[str, int]] = []

    def generate_ids(self, prompt, *, max_tokens, temperature, seed=None):
        seen = self.real._llm.detokenize(list(prompt)).decode(errors="ignore")  # noqa: SLF001
        self.seeds.append(("hello-b" if "(leaky variant)" in seen.split("Task:")[-1] else "hello-a", seed))
        example = "Task: Write hello to /app/out.txt.\n```bash\necho hello > /app/out.txt\n```"
        solves = "(leaky variant)" not in seen or example in seen
        text = ("echo hello > /app/out.txt" if solves else "echo nope > /app/out.txt") + "\n```"
        ids = self.real._llm.tokenize(text.encode(), add_bos=False, special=False) + [min(self.stop_ids)]  # noqa: SLF001
        return Generation(text, tuple(ids), tuple([-0.1] * len(ids)), len(prompt), "stop")


def test_explore_shows_its_own_successes_as_worked_examples_and_trains_without_them(tmp_path, real_policy):
    from engine.rollout.harnesses import get_harness

    rnd = make_round(tmp_path, real_policy)
    rnd._policy = LearnsFromExamples(real_policy, lambda user: runbook(user + " leaky"))  # noqa: SLF001 - no replays
    rnd.settings = rnd.settings.model_copy(
        update={
            "harnesses": ["fenced-bash-primed"],
            "max_turns": 1,
            "attempts": 3,
            "min_attempts": 1,
            "target_successes": 1,
            "examples": 1,
        }
    )
    report = rnd.run()
    store = rnd.store
    outcomes = {k: ok for k, (_, ok) in store.rsr.jobs(1, "explore").items()}
    # hello-b failed unaided; its next attempt was shown hello-a's success and passed.
    assert outcomes == {
        "hello-a|fenced-bash-primed|0": True,
        "hello-b|fenced-bash-primed|0": False,
        "hello-b|fenced-bash-primed|1|aided": True,
    }
    # Each task's attempts sample with seeds of their own: with one seed for every task, a small
    # model writes the same reply to similar tasks, and attempts across a kind of task are wasted.
    first = dict(reversed(rnd._policy.seeds))  # noqa: SLF001 - the first seed each task was sampled with
    assert first["hello-a"] != first["hello-b"]
    episode = store.rsr.jobs(1, "explore")["hello-b|fenced-bash-primed|1|aided"][0]
    shown = store.runs.episode_model(episode).messages[0]["content"]
    harness = get_harness("fenced-bash-primed")
    assert shown != harness.system_prompt() and "echo hello > /app/out.txt" in shown
    # The pass estimate counts only unaided attempts: hello-b is still 0 of 1 for this model.
    estimates = rnd.pass_estimates(rnd._tasks())  # noqa: SLF001
    assert (estimates["hello-b"].attempts, estimates["hello-b"].successes) == (1, 0)
    assert any("1 of 2 explore successes came from the 1 attempt(s) shown worked examples" in n for n in report.notes)
    round_, attempts = store.rsr.latest_explore_outcomes()["hello-b"]
    assert round_ == 1 and [ok for ok, _ in attempts] == [False]
    # Both successes are samples; hello-b's carries the harness's own prompt, not the example,
    # and the fence the harness opened its reply with is prompt (mask 0), not a trained token.
    assert report.samples == 2
    b = next(x for x in store.rsr.samples(1) if x.provenance.task == "hello-b")
    text = real_policy._llm.detokenize(list(b.ids)).decode()  # noqa: SLF001
    assert text.count("echo hello > /app/out.txt") == 1 and harness.system_prompt() in text
    trained = real_policy._llm.detokenize([t for t, m in zip(b.ids, b.mask) if m]).decode()  # noqa: SLF001
    assert trained.startswith("echo hello") and "```bash" not in trained
