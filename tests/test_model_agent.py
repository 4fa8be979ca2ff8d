"""The bundled model acting for real on the CPU (llama.cpp), through each harness."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.config import Config
from engine.policy import PolicyError, parse_model_spec
from engine.rollout.agents import AgentRun
from engine.rollout.episode import run_episode
from engine.rollout.harnesses import get_harness
from engine.rollout.model_agent import ModelAgent
from engine.rollout.runner import EpisodeJob, EpisodeRunner
from engine.rollout.token_buffer import TokenBuffer, check_prefix_preserving
from engine.store import Store
from engine.tasks import load_task
from tests.conftest import EXAMPLE_TASK

if not os.environ.get("CI"):  # in CI they always run: .ci/setup installs the model backend
    pytest.importorskip("llama_cpp", reason="the model backend needs llama-cpp-python (installed by .ci/setup)")


@pytest.fixture(scope="module")
def policy():
    from engine.policy import load_policy

    return load_policy("bundled:smollm2-135m", n_ctx=2048)


class Scripted:
    """The bundled model's tokenizer and chat template, with replies given in advance: what the
    agent does with a reply, not what the model would write."""

    name = "scripted"

    def __init__(self, policy, replies: list[str]) -> None:
        self.policy, self.replies, self.stop_ids = policy, iter(replies), policy.stop_ids

    def tokenize_chat(self, *a, **kw):
        return self.policy.tokenize_chat(*a, **kw)

    def tokenize_text(self, text):
        return self.policy.tokenize_text(text)

    def generate_ids(self, ids, **kw):
        g = self.policy.generate_ids(ids, max_tokens=1, temperature=0.0)
        text = next(self.replies)
        tokens = tuple(self.policy.tokenize_text(text)) + (min(self.stop_ids),)
        return type(g)(text, tokens, tuple([-0.1] * len(tokens)), len(ids), "stop")


def test_model_specs_are_checked():
    assert str(parse_model_spec("bundled:smollm2-135m")) == "bundled:smollm2-135m"
    with pytest.raises(PolicyError, match="not KIND:TARGET"):
        parse_model_spec("smollm2")
    with pytest.raises(PolicyError, match="GGUF file not found"):
        parse_model_spec("gguf:/nope.gguf")
    assert parse_model_spec("hf:HuggingFaceTB/SmolLM2-135M-Instruct").kind == "hf"
    assert parse_model_spec("openai:http://127.0.0.1:8000/v1#smol").kind == "openai"
    with pytest.raises(PolicyError, match="openai spec must be"):
        parse_model_spec("openai:127.0.0.1:8000")


def test_generation_returns_exact_tokens_and_logprobs(policy):
    msgs = [{"role": "user", "content": "Say hi."}]
    a = policy.generate(msgs, max_tokens=12, temperature=0.0, seed=1)
    b = policy.generate(msgs, max_tokens=12, temperature=0.0, seed=1)
    assert a.token_ids == b.token_ids and len(a.token_ids) == len(a.logprobs) > 0
    assert all(lp <= 0.0 for lp in a.logprobs)
    # Greedy picks the most likely token: its probability is the largest, so at least 1/vocab.
    assert all(lp > -12 for lp in a.logprobs)
    assert a.text == policy._llm.detokenize([t for t in a.token_ids if t not in policy.stop_ids]).decode()  # noqa: SLF001


def test_template_preserves_prefixes(policy):
    check_prefix_preserving(policy)


@pytest.mark.slow
@pytest.mark.parametrize("harness", ["xml-bash", "terminus-json", "tool-call"])
def test_a_real_episode_is_recorded_token_for_token(policy, harness: str, tmp_path: Path):
    store = Store(tmp_path / "db.sqlite")
    runner = EpisodeRunner(config=Config(), backend="local", store=store, bus=None)

    def agent() -> ModelAgent:
        return ModelAgent(policy, get_harness(harness), temperature=0.7, seed=3, max_turns=3, max_reply_tokens=96)

    run_id, (result,) = runner.run(
        [EpisodeJob(load_task(EXAMPLE_TASK), agent)], kind="eval", agent_label="model", tasks_path="x", concurrency=1
    )
    assert result.scored and result.stop_reason in {"done", "turn_limit", "token_budget", "agent_timeout"}
    steps = store.runs.steps(result.episode_id)
    assert steps and len(steps) == len(result.steps)
    ids, mask = store.runs.episode_tokens(result.episode_id)
    sampled = [t for t, m in zip(ids, mask) if m]
    # The buffer's sampled tokens are exactly what the model generated, step after step.
    assert sampled == [t for s in steps for t in s.token_ids]
    assert all(len(s.token_ids) == len(s.logprobs) for s in steps)
    # And the buffer is what the model saw: each step's prompt is the buffer up to that step.
    offsets = [s.prompt_tokens for s in steps]
    assert offsets == sorted(offsets) and offsets[0] == mask.index(1)


def test_token_buffer_appends_observations_by_template_difference(policy):
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "do it"}]
    buf = TokenBuffer.start(policy, msgs)
    gen = policy.generate_ids(buf.ids, max_tokens=8, temperature=0.0)
    buf.add_sampled(gen.token_ids)
    msgs.append({"role": "assistant", "content": gen.text})
    buf.add_observation(policy, msgs, "output here", sampled_stopped=gen.finish_reason == "stop")
    rendered = policy.tokenize_chat(msgs + [{"role": "user", "content": "output here"}], add_generation_prompt=True)
    # The observation part of the buffer ends exactly as the template renders the next prompt.
    tail = rendered[-8:]
    assert buf.ids[-8:] == tail
    assert sum(buf.mask) == len(gen.token_ids)


def test_unparseable_replies_are_fed_back_and_count_as_turns(policy, tmp_path: Path):
    class Garbler:
        """A policy wrapper whose replies are garbage: the episode must still end cleanly."""

        name = "garbler"
        stop_ids = policy.stop_ids

        def tokenize_chat(self, *a, **kw):
            return policy.tokenize_chat(*a, **kw)

        def generate_ids(self, ids, **kw):
            g = policy.generate_ids(ids, max_tokens=4, temperature=0.0)
            return type(g)("}}{{ not a command", g.token_ids, g.logprobs, g.prompt_tokens, g.finish_reason)

    r = run_episode(
        load_task(EXAMPLE_TASK), ModelAgent(Garbler(), get_harness("terminus-json"), max_turns=2), config=Config()
    )
    assert r.scored and r.stop_reason == "turn_limit" and len(r.steps) == 2
    assert all(s.parse_error for s in r.steps)
    assert "could not be used" in r.steps[0].output


def test_each_turn_is_emitted_as_a_typed_event(policy):
    from engine.events import AgentStepTaken, EventBus

    bus = EventBus()
    seen: list[AgentStepTaken] = []
    bus.subscribe(lambda e: seen.append(e) if isinstance(e, AgentStepTaken) else None)
    r = run_episode(
        load_task(EXAMPLE_TASK),
        ModelAgent(policy, get_harness("xml-bash"), seed=1, max_turns=2, max_reply_tokens=32),
        config=Config(),
        bus=bus,
    )
    assert [e.index for e in seen] == list(range(len(r.steps))) and seen
    assert seen[0].step.token_ids == r.steps[0].token_ids and seen[0].episode_id == r.episode_id


def test_agent_run_defaults_are_empty():
    assert AgentRun().stop_reason == "" and AgentRun().token_ids == []


def test_recorded_logits_are_the_sampling_row(policy):
    import numpy as np

    llm = policy._llm  # noqa: SLF001 - checking the backend against its own logits
    prompt = policy.tokenize_chat([{"role": "user", "content": "Write the number 5."}], add_generation_prompt=True)
    llm.reset()
    for i, token in enumerate(
        llm.generate(prompt, temp=0.0, top_k=0, top_p=1.0, min_p=0.0, repeat_penalty=1.0, reset=True)
    ):
        row = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),))  # noqa: SLF001
        assert int(np.argmax(row)) == token  # greedy: the sampled token is that row's argmax
        if i >= 10:
            break


@pytest.mark.slow
def test_export_jsonl_and_atif_carry_tokens_and_outcome(policy, tmp_path: Path):
    import json

    from engine.store.export import export_run

    store = Store(tmp_path / "db.sqlite")
    runner = EpisodeRunner(config=Config(), backend="local", store=store, bus=None)

    def agent() -> ModelAgent:
        return ModelAgent(policy, get_harness("terminus-json"), seed=5, max_turns=2, max_reply_tokens=64)

    run_id, (result,) = runner.run(
        [EpisodeJob(load_task(EXAMPLE_TASK), agent)], kind="eval", agent_label="model", tasks_path="x", concurrency=1
    )
    export_run(store, run_id, "jsonl", tmp_path / "run.jsonl")
    (rec,) = [json.loads(x) for x in (tmp_path / "run.jsonl").read_text().splitlines()]
    assert rec["task"] == "count-lines" and rec["checks_total"] == 3 and rec["harness"] == "terminus-json"
    assert rec["messages"][0]["role"] == "system" and rec["messages"][1]["content"].startswith("Task:")
    assert [t for t, m in zip(rec["token_ids"], rec["loss_mask"]) if m] == [
        t for s in rec["steps"] for t in s["token_ids"]
    ]
    export_run(store, run_id, "atif", tmp_path / "run.atif.jsonl")
    (traj,) = [json.loads(x) for x in (tmp_path / "run.atif.jsonl").read_text().splitlines()]
    assert traj["schema_version"] == "ATIF-v1.4" and traj["session_id"] == result.episode_id
    assert [s["source"] for s in traj["steps"][:2]] == ["system", "user"]
    agent_steps = [s for s in traj["steps"] if s["source"] == "agent"]
    assert len(agent_steps) == len(rec["steps"])
    assert all(len(s["metrics"]["completion_token_ids"]) == len(s["metrics"]["logprobs"]) for s in agent_steps)
    assert [s["step_id"] for s in traj["steps"]] == list(range(1, len(traj["steps"]) + 1))


@pytest.fixture(scope="module")
def llama_server():
    """The bundled model served over the OpenAI API on loopback by llama_cpp.server."""
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    from engine.policy.bundled import bundled_model_path

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(bundled_model_path()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--logits_all",
            "true",
            "--model_alias",
            "smollm2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"{url}/models", timeout=2)
            break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError("llama_cpp.server exited")
            time.sleep(0.5)
    yield url
    proc.terminate()
    proc.wait(timeout=30)


@pytest.mark.slow
def test_an_openai_compatible_server_acts_through_a_harness(llama_server: str, tmp_path: Path):
    from engine.policy import load_policy

    remote = load_policy(f"openai:{llama_server}#smollm2")
    store = Store(tmp_path / "db.sqlite")
    runner = EpisodeRunner(config=Config(), backend="local", store=store, bus=None)

    def agent() -> ModelAgent:
        return ModelAgent(remote, get_harness("xml-bash"), temperature=0.7, seed=2, max_turns=2, max_reply_tokens=64)

    _, (result,) = runner.run(
        [EpisodeJob(load_task(EXAMPLE_TASK), agent)], kind="eval", agent_label="model", tasks_path="x", concurrency=1
    )
    assert result.scored and len(result.steps) == 2 and result.model.startswith("openai:")
    steps = store.runs.steps(result.episode_id)
    assert all(s.action_text for s in steps) and all(s.prompt_tokens > 0 for s in steps)
    assert all(s.logprobs and all(lp <= 0 for lp in s.logprobs) for s in steps)
    assert store.runs.episode_tokens(result.episode_id) == ([], [])  # no buffer without the server's tokenizer


def test_an_unreachable_server_is_an_infrastructure_error():
    from engine.policy import load_policy

    remote = load_policy("openai:http://127.0.0.1:9/v1#nothing")
    r = run_episode(load_task(EXAMPLE_TASK), ModelAgent(remote, get_harness("xml-bash"), max_turns=1), config=Config())
    assert r.status == "infra_error" and r.failure_mode == "policy_error" and "openai:" in r.error
    assert r.reward is None


def test_concurrent_conversations_keep_their_own_llama_context():
    import threading

    from engine.policy import load_policy

    pool = load_policy("bundled:smollm2-135m", n_ctx=1024, instances=2, llama_backend="instances")
    a = pool.tokenize_chat(
        [{"role": "system", "content": "alpha " * 20}, {"role": "user", "content": "hi"}], add_generation_prompt=True
    )
    b = pool.tokenize_chat(
        [{"role": "system", "content": "omega " * 20}, {"role": "user", "content": "yo"}], add_generation_prompt=True
    )
    barrier = threading.Barrier(2)

    def run(prompt):
        barrier.wait()
        pool.generate_ids(prompt, max_tokens=4, temperature=0.0)

    threads = [threading.Thread(target=run, args=(p,)) for p in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert pool._count == 2  # noqa: SLF001 - two conversations at once, two contexts
    holders = {tuple(llm._input_ids[: len(a)]) == tuple(a): llm for llm in pool._free}  # noqa: SLF001
    assert set(holders) == {True, False}
    # A continuation of conversation a goes back to the context that already holds it.
    chosen = pool._acquire(a + [1, 2])  # noqa: SLF001
    assert chosen is holders[True]
    pool._release(chosen)  # noqa: SLF001


def test_loading_instances_from_many_threads_leaves_stdout_where_it_was():
    """llama.cpp silences loading by redirecting fds 1 and 2; concurrent loads must not lose stdout."""
    import threading

    from engine.policy import load_policy

    before = os.fstat(1)
    policy = load_policy("bundled:smollm2-135m", n_ctx=256, instances=4, llama_backend="instances")
    prompt = policy.tokenize_chat([{"role": "user", "content": "hi"}], add_generation_prompt=True)
    threads = [
        threading.Thread(target=policy.generate_ids, args=(prompt,), kwargs={"max_tokens": 2, "temperature": 0.0})
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    after = os.fstat(1)
    assert (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino)


def test_a_task_too_long_for_the_context_is_an_infrastructure_error_beside_a_normal_episode(policy, tmp_path: Path):
    from tests.conftest import write_task

    huge = load_task(write_task(tmp_path, "huge", instruction="Write hello to /app/out.txt. " * 800))
    runner = EpisodeRunner(config=Config(), backend="local", store=None, bus=None)
    jobs = [
        EpisodeJob(task, lambda: ModelAgent(policy, get_harness("fenced-bash-plain"), max_turns=1, seed=1))
        for task in (huge, load_task(EXAMPLE_TASK))
    ]
    _, results = runner.run(jobs, kind="eval", agent_label="model", tasks_path="", concurrency=2)
    by_task = {r.task: r for r in results}
    assert by_task["huge"].status == "infra_error" and by_task["huge"].failure_mode == "policy_error"
    assert "does not fit the model's context (2048 tokens)" in by_task["huge"].error
    assert by_task["count-lines"].scored


def test_a_primed_reply_continues_the_harness_prefix_which_is_prompt_not_sample(policy, tmp_path: Path):
    store = Store(tmp_path / "db.sqlite")
    runner = EpisodeRunner(config=Config(), backend="local", store=store, bus=None)
    harness = get_harness("fenced-bash-primed")

    def agent() -> ModelAgent:
        return ModelAgent(policy, harness, temperature=0.7, seed=5, max_turns=2, max_reply_tokens=48)

    _, (result,) = runner.run(
        [EpisodeJob(load_task(EXAMPLE_TASK), agent)], kind="eval", agent_label="model", tasks_path="x", concurrency=1
    )
    steps = store.runs.steps(result.episode_id)
    ids, mask = store.runs.episode_tokens(result.episode_id)
    prefix = policy.tokenize_text("```bash\n")
    first = mask.index(1)
    # The prefix sits between the prompt and the first sampled token, with mask 0 ...
    assert ids[first - len(prefix) : first] == prefix and not any(mask[first - len(prefix) : first])
    # ... the reply is the prefix plus what the model wrote, and only the written tokens are sampled.
    assert steps[0].action_text.startswith("```bash\n")
    assert [t for t, m in zip(ids, mask) if m] == [t for s in steps for t in s.token_ids]
    assert policy.tokenize_text("```bash\n") == prefix and steps[0].prompt_tokens == first


def test_a_stop_before_any_command_is_refused_fed_back_and_never_trained_on(policy):
    """DONE as the very first reply ends nothing: the model is told nothing has run and acts on;
    in an SFT sample built from the episode, that refused reply carries no loss."""
    from engine.rollout.model_agent import PREMATURE_STOP
    from engine.rsr.dataset import build_sample
    from engine.store.records import Provenance

    harness = get_harness("fenced-bash-turns")
    scripted = Scripted(policy, ["DONE\n```", "wc -l < /app/input.txt > /app/count.txt\n```", "DONE\n```"])
    r = run_episode(load_task(EXAMPLE_TASK), ModelAgent(scripted, harness, max_turns=3), config=Config())
    assert r.stop_reason == "done" and len(r.steps) == 3
    assert r.steps[0].parse_error == PREMATURE_STOP and "no command has run yet" in r.steps[0].output
    assert r.steps[1].command and not r.steps[1].parse_error
    assert r.success  # the work got done after the refused stop
    sample = build_sample(
        policy,
        list(r.messages[:2]),
        r.steps,
        runbook=None,
        provenance=Provenance("count-lines", harness.name, "src", r.episode_id),
        reply_prefix=harness.reply_prefix,
    )
    trained = [t for t, m in zip(sample.ids, sample.mask) if m]
    assert trained == [*r.steps[1].token_ids, *r.steps[2].token_ids]


def test_a_stop_request_ends_the_reply_being_sampled_and_the_episode(policy):
    """`jobs stop` stops an episode's sandbox; the reply being sampled then ends at its next
    token (on a loaded CPU a reply takes tens of seconds) and no further turn starts."""
    import time

    class StoppedBox:  # what the agent touches of a sandbox
        stopped = False

        def run(self, command, timeout):
            raise AssertionError("no command runs once the sandbox is stopped")

    box, calls = StoppedBox(), []

    class Sampling:
        name = "sampling"
        stop_ids = policy.stop_ids
        supports_stop_at = True

        def tokenize_chat(self, *a, **kw):
            return policy.tokenize_chat(*a, **kw)

        def tokenize_text(self, text):
            return policy.tokenize_text(text)

        def generate_ids(self, ids, *, max_tokens, temperature, seed=None, stop_at=None):
            calls.append(len(ids))
            g = policy.generate_ids(ids, max_tokens=1, temperature=0.0)
            assert stop_at is not None and not stop_at("wc -l")  # the action is not complete yet
            box.stopped = True  # the run is stopped while this reply is being sampled
            assert stop_at("wc -l"), "the sampler is told to end the reply at once"
            tokens = tuple(policy.tokenize_text("wc -l"))
            return type(g)("wc -l", tokens, tuple([-0.1] * len(tokens)), len(ids), "action")

    agent = ModelAgent(Sampling(), get_harness("fenced-bash-turns"), max_turns=3)
    run = agent.act(load_task(EXAMPLE_TASK), box, time.monotonic() + 60)
    assert run.stop_reason == "stopped" and run.steps == [] and len(calls) == 1


def test_a_command_past_its_time_limit_is_stopped_and_the_model_goes_on(policy):
    """[policy] command_timeout_sec: a command that hangs (`tail -f`, a loop) is stopped after it,
    the model is told it timed out and has its next turn, instead of the hang spending the
    episode's whole agent timeout."""
    harness = get_harness("fenced-bash-turns")
    scripted = Scripted(policy, ["sleep 60\n```", "wc -l < /app/input.txt > /app/count.txt\n```", "DONE\n```"])
    agent = ModelAgent(scripted, harness, max_turns=3, command_timeout_sec=2)
    r = run_episode(load_task(EXAMPLE_TASK), agent, config=Config())
    # The step's time is mostly the real model reading the prompt; `sleep 60` would add a minute.
    assert r.steps[0].duration_s < 50
    assert r.steps[0].timed_out and "timed out" in r.steps[0].output
    assert r.stop_reason == "done" and r.success  # the next turn did the work


def test_a_runaway_reply_ends_an_explore_attempt_and_is_fed_back_elsewhere(policy):
    """A reply that runs to the reply limit without closing its code block: an RSR explore
    attempt ([rsr] end_on_runaway_reply, on by default) ends there, since only a full success
    counts and the turns after one rarely recover; a replay or an evaluation feeds the parse
    error back and goes on, so its score is the whole episode's."""
    from engine.config import AgentSettings
    from engine.rollout.agent_spec import AgentSpec

    class Rambling(Scripted):
        def generate_ids(self, ids, **kw):
            g = super().generate_ids(ids, **kw)
            closed = "```" in g.text
            tokens = g.token_ids if closed else g.token_ids[:-1]  # no end-of-turn: the limit cut it
            return type(g)(g.text, tokens, g.logprobs[: len(tokens)], g.prompt_tokens, "stop" if closed else "length")

    rambling = "# first we look at the file\n# and then we count"
    replies = [rambling, "wc -l < /app/input.txt > /app/count.txt\n```", "DONE\n```"]
    config = Config()
    replay = AgentSettings.for_rsr(config.rsr, config.policy, "fenced-bash-turns").with_turns(3)
    explore = replay.ending_on_runaway()
    evaluation = AgentSettings.for_stage_eval(config).with_harness("fenced-bash-turns").with_turns(3)
    assert explore.end_on_runaway and not replay.end_on_runaway and not evaluation.end_on_runaway

    attempt = AgentSpec("model", settings=explore).build(Rambling(policy, list(replies)))
    r = run_episode(load_task(EXAMPLE_TASK), attempt, config=config)
    assert r.stop_reason == "runaway_reply" and len(r.steps) == 1 and not r.success
    assert "not closed" in r.steps[0].output

    for settings in (replay, evaluation):
        agent = AgentSpec("model", settings=settings).build(Rambling(policy, list(replies)))
        r = run_episode(load_task(EXAMPLE_TASK), agent, config=config)
        assert r.stop_reason == "done" and len(r.steps) == 3 and r.success

    # A reply that closes its block is never a runaway, however long.
    closed = AgentSpec("model", settings=explore).build(Scripted(policy, replies[1:]))
    assert run_episode(load_task(EXAMPLE_TASK), closed, config=config).success
