"""The batched llama.cpp backend: many episodes as sequences of one context, sampled exactly."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from engine.policy import PolicyError, load_policy

SYSTEM = "You are a shell agent. Reply with one bash command in a ```bash code block."
TASKS = ["Count the lines of /app/a.txt", "Sort /app/names.txt", "Make the directory /app/out", "Print the date"]


@pytest.fixture(scope="module")
def policy():
    p = load_policy("bundled:smollm2-135m", n_ctx=1024, instances=4, sequences=4)
    yield p
    p.close()


def prompt_for(policy, task: str) -> list[int]:
    return policy.tokenize_chat(
        [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}], add_generation_prompt=True
    )


def run_concurrently(policy, prompts, kwargs):
    """Each prompt generated on its own thread, all released at once; kwargs: one dict for all, or one each."""
    results, errors = [None] * len(prompts), [None] * len(prompts)
    barrier = threading.Barrier(len(prompts))

    def run(i):
        barrier.wait()
        try:
            results[i] = policy.generate_ids(prompts[i], seed=i, **(kwargs[i] if isinstance(kwargs, list) else kwargs))
        except PolicyError as exc:
            errors[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, errors


def recompute_logprobs(
    policy, prompt: list[int], ids: tuple[int, ...], temperature: float, reads: list[list[int]] | None = None
) -> np.ndarray:
    """The log-probabilities of `ids` after `prompt` from a fresh single-sequence llama.cpp
    context: the prompt in one batch (or in the batches `reads`, which must add up to it: a
    token's KV values depend, in the last float bits, on the batch it was read in), then one
    token at a time, as a sampler reads them."""
    import llama_cpp as L

    from engine.policy.llamacpp_context import put_token

    llm = policy._llm  # noqa: SLF001 - the same loaded weights
    params = L.llama_context_default_params()
    params.n_ctx, params.n_batch, params.n_ubatch, params.n_seq_max = policy.n_ctx, 512, 512, 1
    # llama.cpp's default is 4 threads, which spin at their barriers on a machine with fewer cores.
    params.n_threads = params.n_threads_batch = os.cpu_count() or 1
    params.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_DISABLED
    ctx = L.llama_init_from_model(llm._model.model, params)  # noqa: SLF001
    batch = L.llama_batch_init(512, 0, 1)
    out = []
    try:
        reads = reads or [list(prompt)]
        assert sum(reads, []) == list(prompt)
        chunks = reads + [[t] for t in ids[:-1]]
        pos = 0
        for k, chunk in enumerate(chunks):
            for j, t in enumerate(chunk):
                put_token(batch, j, t, pos + j, 0, j == len(chunk) - 1)
            batch.n_tokens = len(chunk)
            assert L.llama_decode(ctx, batch) == 0
            pos += len(chunk)
            if k < len(reads) - 1:
                continue
            logits = np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, len(chunk) - 1), shape=(llm.n_vocab(),))
            scaled = logits.astype(np.float64) / temperature
            top = scaled.max()
            out.append(scaled[ids[len(out)]] - top - np.log(np.exp(scaled - top).sum()))
    finally:
        L.llama_batch_free(batch)
        L.llama_free(ctx)
    return np.array(out)


@pytest.mark.parametrize("weights", ["as-is", "q8_0"])
def test_concurrent_episodes_record_the_tokens_and_logprobs_a_recomputation_gives(weights):
    policy = load_policy("bundled:smollm2-135m", n_ctx=1024, instances=4, sequences=4, weights=weights)
    prompts = [prompt_for(policy, t) for t in TASKS]
    results, errors = run_concurrently(policy, prompts, dict(max_tokens=24, temperature=0.7))
    assert errors == [None] * 4
    for prompt, gen in zip(prompts, results):
        assert gen.token_ids and len(gen.logprobs) == len(gen.token_ids)
        expected = recompute_logprobs(policy, prompt, gen.token_ids, 0.7)
        np.testing.assert_allclose(gen.logprobs, expected, atol=1e-6)
    policy.close()


@pytest.mark.parametrize("weights", ["as-is", "q8_0"])
def test_the_same_seeds_give_the_same_episodes_whatever_runs_beside_them(weights):
    """Decoding in a batch is bit-identical to decoding alone; prompts are read one sequence at a time."""
    together_policy = load_policy("bundled:smollm2-135m", n_ctx=1024, instances=4, sequences=4, weights=weights)
    prompts = [prompt_for(together_policy, t) for t in TASKS]
    together, _ = run_concurrently(together_policy, prompts, dict(max_tokens=16, temperature=0.9))
    together_policy.close()
    alone_policy = load_policy("bundled:smollm2-135m", n_ctx=1024, instances=1, weights=weights)
    alone = [alone_policy.generate_ids(p, seed=i, max_tokens=16, temperature=0.9) for i, p in enumerate(prompts)]
    alone_policy.close()
    assert [g.token_ids for g in together] == [g.token_ids for g in alone]
    assert [g.logprobs for g in together] == [g.logprobs for g in alone]


def test_a_bad_prompt_fails_its_episode_and_not_the_batch(policy):
    good = prompt_for(policy, TASKS[0])
    bad = [*good[:-1], 10**7]  # a token id outside the vocabulary
    results, errors = run_concurrently(policy, [good, bad], dict(max_tokens=8, temperature=0.0))
    assert errors[0] is None and results[0].token_ids
    assert isinstance(errors[1], PolicyError) and "outside the vocabulary" in str(errors[1])
    with pytest.raises(PolicyError, match="empty prompt"):
        policy.generate_ids([], max_tokens=4, temperature=0.0)
    # A prompt longer than the context returns at once, as the single-sequence backend does.
    assert policy.generate_ids(good * 40, max_tokens=4, temperature=0.0).finish_reason == "context_full"


def test_a_stop_check_that_raises_fails_only_its_own_episode(policy):
    prompts = [prompt_for(policy, t) for t in TASKS[:2]]

    def broken(text: str) -> bool:
        raise ValueError("bad check")

    results, errors = run_concurrently(
        policy, prompts, [dict(max_tokens=8, temperature=0.0, stop_at=broken), dict(max_tokens=8, temperature=0.0)]
    )
    assert isinstance(errors[0], PolicyError) and "bad check" in str(errors[0])
    assert errors[1] is None and len(results[1].token_ids) == 8


def test_sampling_stops_where_the_action_ends(policy):
    gen = policy.generate_ids(
        prompt_for(policy, TASKS[2]), max_tokens=64, temperature=0.0, stop_at=lambda text: "bash" in text
    )
    assert gen.finish_reason == "action" and gen.text.endswith("bash") and len(gen.token_ids) < 64


def test_hundreds_of_generations_keep_the_kv_cache_bounded(policy):
    """Finished and abandoned sequences give their cells back: what llama.cpp holds per slot is
    what the scheduler believes it holds, never more than one context."""
    base = prompt_for(policy, TASKS[3])
    for wave in range(40):
        prompts = [
            base + policy.tokenize_chat([{"role": "user", "content": f"{wave} {i}"}], add_generation_prompt=True)
            for i in range(6)
        ]
        _, errors = run_concurrently(policy, prompts, dict(max_tokens=3, temperature=1.0))
        assert errors == [None] * 6
    sched = policy.scheduler
    assert not sched.active and not sched.queue
    assert sched.cells_in_use() == [len(s.tokens) for s in sched.slots]
    assert max(sched.cells_in_use()) <= policy.n_ctx


def test_a_prompt_that_starts_like_a_running_episode_reuses_its_cells():
    policy = load_policy("bundled:smollm2-135m", n_ctx=1024, instances=2, sequences=2)
    first, second = prompt_for(policy, TASKS[0]), prompt_for(policy, TASKS[1])
    shared = next(i for i, (a, b) in enumerate(zip(first, second)) if a != b)
    started = threading.Event()
    out = {}

    def long_episode():
        out["first"] = policy.generate_ids(
            first, max_tokens=200, temperature=1.0, seed=1, stop_at=lambda t: started.set()
        )

    thread = threading.Thread(target=long_episode)
    thread.start()
    assert started.wait(60)  # the first episode has read its prompt and is decoding
    out["second"] = policy.generate_ids(second, max_tokens=16, temperature=0.7, seed=2)
    thread.join()
    assert policy.scheduler.shared_prefix_tokens == shared  # the system prompt's cells were copied, not read again
    expected = recompute_logprobs(policy, second, out["second"].token_ids, 0.7)
    np.testing.assert_allclose(out["second"].logprobs, expected, atol=1e-6)
    policy.close()


def _two_turns(policy, task: str, seed: int, order_log: list):
    """Yields twice: after turn 1 and after turn 2 of one episode (its buffer only grows)."""
    prompt = prompt_for(policy, task)
    first = policy.generate_ids(prompt, max_tokens=12, temperature=0.9, seed=seed)
    order_log.append(first.token_ids)
    yield
    follow = policy.tokenize_chat([{"role": "user", "content": "Output: (nothing)"}], add_generation_prompt=True)
    second = policy.generate_ids(prompt + list(first.token_ids) + follow, max_tokens=12, temperature=0.9, seed=seed + 1)
    order_log.append(second.token_ids)
    policy.release(prompt + list(first.token_ids) + follow + list(second.token_ids))  # the episode ends
    yield


def test_an_episode_gives_the_same_tokens_whatever_order_the_others_run_in():
    """Episodes interleaved differently reuse and copy cells differently; their tokens must not
    change. (Two slots, three episodes, at most two running at once, as when slots = concurrency.)"""

    def run(order: str) -> dict:
        policy = load_policy("bundled:smollm2-135m", n_ctx=1024, instances=2, sequences=2)
        logs = {"a": [], "b": [], "c": []}
        episodes = {k: _two_turns(policy, TASKS[i], 10 * i, logs[k]) for i, k in enumerate("abc")}
        for key in order:
            next(episodes[key])
        policy.close()
        return logs

    reference = run("aabbcc")  # one after another
    assert run("ababcc") == reference  # c takes the slot a released; b's system prompt is copied to it
    assert run("abbacc") == reference


def test_turns_that_come_back_in_any_order_decode_in_one_pass_and_as_alone():
    """llama.cpp computes a batch over per-sequence streams in runs of consecutive sequence ids;
    second turns arriving in reverse slot order still make one pass per step (the first to come
    back trades slots with a waiting episode below it), and each gives the tokens and
    log-probabilities it gives alone and a fresh single-sequence context gives."""
    follow = None

    def second_turns(policy, arrival: str) -> dict:
        nonlocal follow
        follow = follow or policy.tokenize_chat(
            [{"role": "user", "content": "Output: (nothing)"}], add_generation_prompt=True
        )
        buffers = {}
        for i, key in enumerate("abc"):  # first turns one after another: slots 0, 1, 2
            prompt = prompt_for(policy, TASKS[i])
            first = list(policy.generate_ids(prompt, max_tokens=6, temperature=0.9, seed=i).token_ids)
            # as the scheduler read them: the prompt, the sampled tokens one by one, and the
            # last sampled token (never decoded in turn one) with the next message
            buffers[key] = [prompt] + [[t] for t in first[:-1]] + [first[-1:] + follow]
        sched = policy.scheduler
        before = (sched.decode_steps, sched.decode_passes, sched.decode_tokens)
        requests = {}
        for key in arrival:  # queued from one thread, without waiting: admitted in this order
            requests[key] = policy._request(sum(buffers[key], []), 24, 0.9, 100 + "abc".index(key), lambda text: False)  # noqa: SLF001
            policy.scheduler.submit(requests[key])
        for req in requests.values():
            assert req.done.wait(120) and not req.error
        counts = (sched.decode_steps - before[0], sched.decode_passes - before[1], sched.decode_tokens - before[2])
        return {key: (tuple(r.ids), tuple(r.logprobs)) for key, r in requests.items()}, counts, buffers

    together_policy = load_policy("bundled:smollm2-135m", n_ctx=1024, instances=3, sequences=3)
    together, (steps, passes, tokens), buffers = second_turns(together_policy, "cba")
    moved = together_policy.scheduler.moved_sequences
    together_policy.close()
    assert moved >= 1  # c, back first, traded slot 2 for a's slot 0
    assert tokens > steps  # sequences decoded together
    assert passes == steps  # each step in one pass
    alone_policy = load_policy("bundled:smollm2-135m", n_ctx=1024, instances=3, sequences=1)
    alone, _, _ = second_turns(alone_policy, "abc")
    for key, (ids, logprobs) in together.items():
        expected = recompute_logprobs(alone_policy, sum(buffers[key], []), ids, 0.9, reads=buffers[key])
        np.testing.assert_allclose(logprobs, expected, atol=1e-6)
    alone_policy.close()
    assert together == alone


def test_a_sequence_left_above_empty_slots_moves_down_and_gives_the_same_tokens():
    """When the episodes below a decoding one end, it moves into the lowest empty slot (one pass
    per step again); the copy of its cells changes none of its numbers."""
    policy = load_policy("bundled:smollm2-135m", n_ctx=1024, instances=3, sequences=3)
    prompts = [prompt_for(policy, t) for t in TASKS[:3]]
    budgets = [dict(max_tokens=3, temperature=0.9, stop_at=lambda text: False)] * 2
    budgets.append(dict(max_tokens=200, temperature=0.9, stop_at=lambda text: False))
    out, errors = {}, {}

    def run(i):
        try:
            out[i] = policy.generate_ids(prompts[i], seed=i, **budgets[i])
            if i < 2:  # these episodes end: their cells are freed while the third still decodes
                policy.release(prompts[i] + list(out[i].token_ids))
        except PolicyError as exc:
            errors[i] = exc

    threads = []
    for i in range(3):  # one after another into slots 0, 1, 2
        threads.append(threading.Thread(target=run, args=(i,)))
        threads[-1].start()
        while policy.scheduler.slots[i].request is None and i not in out:
            threading.Event().wait(0.01)
    for t in threads:
        t.join()
    assert not errors
    sched = policy.scheduler
    assert sched.moved_sequences >= 1
    assert [s.seq for s in sched.slots if s.tokens[: len(prompts[2])] == prompts[2]] == [0]
    alone = load_policy("bundled:smollm2-135m", n_ctx=1024, instances=1)
    expected = alone.generate_ids(prompts[2], seed=2, **budgets[2])
    alone.close()
    assert out[2].token_ids == expected.token_ids and out[2].logprobs == expected.logprobs
    policy.close()


def test_a_new_episode_does_not_take_the_slot_of_one_between_turns():
    policy = load_policy("bundled:smollm2-135m", n_ctx=1024, instances=2, sequences=2)
    a, b = prompt_for(policy, TASKS[0]), prompt_for(policy, TASKS[1])
    first = policy.generate_ids(a, max_tokens=4, temperature=0.0)
    second = policy.generate_ids(b, max_tokens=4, temperature=0.0)  # shares a's system prompt; a slot is empty
    holders = [s.tokens[: len(a)] == a for s in policy.scheduler.slots]
    assert sorted(holders) == [False, True]
    # When a's episode ends, its cells are freed at once (not left for eviction).
    policy.release(a + list(first.token_ids))
    policy.generate_ids(b + list(second.token_ids), max_tokens=1, temperature=0.0)  # b's next turn: a round trip
    assert sorted(len(s.tokens) == 0 for s in policy.scheduler.slots) == [False, True]
    policy.close()


def test_a_one_off_reply_gives_its_slot_back():
    """A planner's or reviewer's reply (generate from messages) is never continued: its cells go."""
    policy = load_policy("bundled:smollm2-135m", n_ctx=1024, instances=2)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASKS[0]}]
    policy.generate(messages, max_tokens=4, temperature=0.0)
    policy.generate_ids(prompt_for(policy, TASKS[1]), max_tokens=4, temperature=0.0)  # an episode's turn
    assert sorted(len(s.tokens) == 0 for s in policy.scheduler.slots) == [False, True]
    policy.close()


def test_the_scheduler_accounts_its_time_to_prompts_and_next_token_batches():
    """bench/rollout.py splits a run's generation time with these counters: every token fed
    is counted once, as prompt or as decode, and each kind's time is its own."""
    policy = load_policy("bundled:smollm2-135m", n_ctx=1024, instances=1, sequences=1)
    prompt = prompt_for(policy, TASKS[0])
    gen = policy.generate_ids(prompt, max_tokens=6, temperature=1.0, seed=3, stop_at=lambda text: False)
    sched = policy.scheduler
    assert len(gen.token_ids) > 1  # a reply, not an immediate end of turn
    assert sched.prompt_tokens == len(prompt)  # the first token is sampled from the prompt's last logits
    assert sched.decode_tokens == sched.decode_steps == len(gen.token_ids) - 1
    assert sched.prompt_tokens + sched.decode_tokens == sched.batch_tokens
    assert sched.prompt_seconds > 0 and sched.decode_seconds > 0
    policy.close()


def test_llama_cpp_is_built_on_its_own_threads_not_openmp():
    """.ci/setup builds llama.cpp without OpenMP. An OpenMP build shares libgomp with torch, and
    once torch has trained in one thread of the process (RSR and RPR do, before their next
    rollouts), decoding in another thread waits on futexes at each barrier: up to 3x slower
    (docs/benchmarks.md, "Rollouts after training")."""
    from engine.policy.llamacpp_chat import openmp_build

    assert not openmp_build(), "llama-cpp-python is an OpenMP build; run bash .ci/setup to rebuild it"


def test_an_openmp_build_is_named_in_the_log_once(monkeypatch, caplog):
    from engine.policy import llamacpp_chat

    monkeypatch.setattr(llamacpp_chat, "openmp_build", lambda: True)
    llamacpp_chat.warn_if_openmp.cache_clear()
    try:
        with caplog.at_level("WARNING", logger="engine.policy.llamacpp_chat"):
            llamacpp_chat.warn_if_openmp()
            llamacpp_chat.warn_if_openmp()
    finally:
        llamacpp_chat.warn_if_openmp.cache_clear()
    warnings = [r.getMessage() for r in caplog.records if "OpenMP build" in r.getMessage()]
    assert len(warnings) == 1 and "GGML_OPENMP=OFF" in warnings[0]


def test_min_p_never_draws_a_token_below_its_threshold_and_records_the_whole_softmax():
    """[policy] min_p: with min_p 0.2, a token less than a fifth as likely as the likeliest (at
    T = 1) is never drawn, however hot the temperature; the log-prob recorded is still that of
    the whole softmax(logits / T), the distribution the trainers compute."""
    from engine.policy.llamacpp_chat import log_softmax
    from engine.policy.llamacpp_scheduler import sample_token

    logits = np.log(np.array([0.5, 0.3, 0.12, 0.05, 0.03]))  # kept at 0.2: those >= 0.1, the first three
    rng = np.random.default_rng(0)
    drawn = {sample_token(logits, 2.0, rng, 0.2)[0] for _ in range(2000)}
    assert drawn == {0, 1, 2}
    everything = {sample_token(logits, 2.0, rng, 0.0)[0] for _ in range(2000)}
    assert everything == {0, 1, 2, 3, 4}  # without min-p the tail is drawn too
    token, logprob = sample_token(logits, 2.0, rng, 0.2)
    assert logprob == pytest.approx(log_softmax(logits, 2.0)[token])
    assert sample_token(logits, 0.0, rng, 0.2)[0] == 0  # greedy is greedy


def test_a_policy_loaded_with_min_p_samples_only_tokens_above_it(policy):
    hot = load_policy("bundled:smollm2-135m", n_ctx=1024, instances=1, sequences=1, min_p=0.3)
    try:
        prompt = prompt_for(hot, TASKS[0])
        gen = hot.generate_ids(prompt, max_tokens=12, temperature=1.5, seed=4)
        cold = policy.generate_ids(prompt, max_tokens=12, temperature=1.5, seed=4)
        for i, token in enumerate(gen.token_ids):
            row = hot.next_token_logprobs(prompt + list(gen.token_ids[:i]))  # T = 1
            assert row[token] >= row.max() + np.log(0.3) - 1e-6, f"token {i} is below min-p"
        assert gen.token_ids != cold.token_ids  # the same seed without min-p draws otherwise
    finally:
        hot.close()
