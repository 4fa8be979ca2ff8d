"""An RPR stage end to end in real sandboxes: rollouts, critic warm-up, joint PPO, checkpoints, resume.

Replies come from a scripted policy on the bundled model's real tokenizer (it writes the right
answer for even seeds and a wrong one for odd seeds, so rewards differ); the rest is real:
sandboxes, verifier, store, transformers actor and critic, GGUF export.
"""

from __future__ import annotations

import math
import os
import random
from pathlib import Path

import pytest

from engine.config import Config, RprConfig
from engine.events import EventBus, RprProgress
from engine.policy.base import Generation, LocalPolicy
from engine.store import Store
from tests.conftest import tiny_actor_critic, write_task

if not os.environ.get("CI"):
    pytest.importorskip("llama_cpp", reason="needs the model extra (installed by .ci/setup)")
    pytest.importorskip("peft", reason="needs the hf extra (installed by .ci/setup)")

import torch

from engine.resumable import WorkContext
from engine.rpr.stage import RprStage


class SeededScript(LocalPolicy):
    """Right for even seeds, wrong (partial credit) for odd ones; real tokenizer and template."""

    def __init__(self, real) -> None:
        self.real, self.name, self.n_ctx = real, "scripted", real.n_ctx

    @property
    def stop_ids(self):
        return self.real.stop_ids

    def tokenize_chat(self, messages, *, add_generation_prompt, tools=None):
        return self.real.tokenize_chat(messages, add_generation_prompt=add_generation_prompt, tools=tools)

    def generate_ids(self, prompt, *, max_tokens, temperature, seed=None):
        word = "hello" if ((seed or 0) // 1000) % 2 == 0 else "nope"  # ModelAgent asks with seed*1000+turn
        text = f"<bash>echo {word} > /app/out.txt</bash><done/>"
        ids = self.real._llm.tokenize(text.encode(), add_bos=False, special=False) + [min(self.stop_ids)]  # noqa: SLF001
        return Generation(text, tuple(ids), tuple([-0.5] * len(ids)), len(prompt), "stop")


@pytest.fixture(scope="module")
def real_policy():
    from engine.policy import load_policy

    return load_policy("bundled:smollm2-135m", n_ctx=2048)


def settings(**overrides) -> RprConfig:
    base = dict(
        harness="xml-bash",  # what SeededScript replies in
        rounds=1,
        critic_warmup_rounds=2,
        tasks_per_round=1,
        episodes_per_task=2,
        split="",
        max_turns=1,
        ppo_epochs=1,
        load_4bit=False,
        rank=4,
        alpha=8,
        critic_lr=1e-3,
        actor_lr=1e-4,
    )
    return RprConfig(**{**base, **overrides})


class Recording(RprStage):
    """Keeps each round's actor and critic weights as they were saved."""

    snapshots: list[dict]

    def _save(self, ac, *args, **kwargs):
        self.snapshots.append(
            {n: p.detach().clone() for n, p in ac.model.named_parameters() if "lora_" in n}
            | {"value_head": ac.value_head.weight.detach().clone()}
        )
        return super()._save(ac, *args, **kwargs)


def make_stage(
    tmp_path: Path, real_policy, *, store: Store, stop=None, bus=None, script=None, loader=None, **overrides
) -> Recording:
    suite = tmp_path / "suite"
    if not suite.exists():
        write_task(suite, "hello-a")
    ctx = WorkContext(
        config=Config(),
        store=store,
        bus=bus or EventBus(),
        backend="local",
        checkpoints_dir=tmp_path / "ckpt",
        tasks=suite,
        concurrency=1,
        should_stop=stop or (lambda: False),
        policy_loader=loader or (lambda spec: (script or SeededScript)(real_policy)),
    )
    stage = Recording(ctx, number=1, model="bundled:smollm2-135m", settings=settings(**overrides))
    stage.snapshots = []
    return stage


def actor(snapshot: dict, part: str) -> list[torch.Tensor]:
    return [v for n, v in sorted(snapshot.items()) if ".actor." in n and part in n]


def critic(snapshot: dict) -> list[torch.Tensor]:
    return [v for n, v in sorted(snapshot.items()) if ".critic." in n] + [snapshot["value_head"]]


def same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_warmup_freezes_the_actor_then_both_train_and_the_value_head_is_checkpointed(tmp_path: Path, real_policy):
    store, bus = Store(tmp_path / "db.sqlite"), EventBus()
    phases = []
    bus.subscribe(lambda e: phases.append(e.phase) if isinstance(e, RprProgress) else None)
    stage = make_stage(tmp_path, real_policy, store=store, bus=bus)
    report = stage.run()
    warm1, warm2, joint = stage.snapshots
    # A fresh adapter starts with B = 0; through both warm-up rounds the actor does not move at all.
    assert all(float(b.abs().max()) == 0.0 for b in actor(warm2, "lora_B"))
    assert same(actor(warm1, "lora_"), actor(warm2, "lora_"))
    assert not same(critic(warm1), critic(warm2))  # ...while the critic is being fit
    assert not same(actor(warm2, "lora_"), actor(joint, "lora_"))  # then actor and critic train together
    assert not same(critic(warm2), critic(joint))
    assert "warmup" in phases and "joint" in phases and phases[-1] == "done"

    # Rewards: two episodes per round, one right (1.0) and one with partial credit (0.5 * 1/2).
    rewards = [p.value for p in store.metrics.points("rpr-1", "rpr/reward")]
    assert rewards == pytest.approx([0.625, 0.625, 0.625])
    assert [p.value for p in store.metrics.points("rpr-1", "rpr/warmup")] == [1.0, 1.0, 0.0]
    assert [p.step for p in store.metrics.points("rpr-1", "ppo/value_loss")] == [1, 2, 3]
    assert [p.step for p in store.metrics.points("rpr-1", "ppo/explained_variance")] == [1, 2, 3]
    assert [p.step for p in store.metrics.points("rpr-1", "ppo/kl")] == [3]  # the actor is only compared once it trains
    ev = [p.value for p in store.metrics.points("rpr-1", "ppo/explained_variance")]
    assert ev[0] == pytest.approx(0.0)  # an untrained critic (V = 0 everywhere) explains nothing
    value_loss = [p.value for p in store.metrics.points("rpr-1", "ppo/value_loss")]
    assert value_loss[-1] < value_loss[0]  # the same rollouts each round: the critic's error falls

    # The checkpoint: both adapters, the value head and the trainer state; the actor is served by llama.cpp.
    latest = stage.latest()
    assert latest is not None and latest.name == "iter-003"
    assert {"actor", "critic", "value_head.pt", "trainer_state.pt", "actor.gguf"} <= {p.name for p in latest.iterdir()}
    saved = torch.load(latest / "value_head.pt", weights_only=True)
    assert torch.equal(saved["weight"], joint["value_head"])
    from engine.policy.spec import resolve_hf_base
    from engine.rpr.actor_critic import ActorCritic
    from engine.training.loader import LoraShape

    restored = ActorCritic.load(
        resolve_hf_base("bundled:smollm2-135m"),
        actor_adapter=latest / "actor",
        critic_adapter=latest / "critic",
        value_head=latest / "value_head.pt",
        reference="base",
        reference_adapter=None,
        lora=LoraShape(4, 8),
        load_4bit=False,
        temperature=0.8,
    )
    assert torch.equal(restored.value_head.weight, joint["value_head"])
    assert all(p.requires_grad for p in restored.value_head.parameters())
    state = torch.load(latest / "trainer_state.pt", weights_only=False)
    assert state["cursor"] == 3 and state["global_step"] == 3 and len(state["optimizers"]) == 2
    assert report.checkpoint == f"bundled:smollm2-135m+lora={latest / 'actor.gguf'}"
    assert report.iterations == 3 and report.episodes == 6
    assert store.rpr.run(1).status == "done"


class AlwaysRight(SeededScript):
    def generate_ids(self, prompt, *, max_tokens, temperature, seed=None):
        return super().generate_ids(prompt, max_tokens=max_tokens, temperature=temperature, seed=0)


def test_a_joint_round_whose_rollouts_all_earn_the_same_reward_says_so_and_leaves_the_actor(
    tmp_path: Path, real_policy
):
    store, bus = Store(tmp_path / "db.sqlite"), EventBus()
    lines = []
    bus.subscribe(lambda e: lines.append(e.detail) if isinstance(e, RprProgress) else None)
    stage = make_stage(tmp_path, real_policy, store=store, bus=bus, script=AlwaysRight, critic_warmup_rounds=1)
    report = stage.run()
    warm, joint = stage.snapshots
    assert same(actor(warm, "lora_"), actor(joint, "lora_"))  # both rollouts succeeded: nothing to prefer
    joint_line = next(m for m in lines if m.startswith("round 2/2 (joint): reward"))
    assert "success 1.00" in joint_line and "no update" in joint_line and "nan" not in joint_line
    # The served actor is still the stage-start one: the warm-up round exports none, the joint round moved nothing.
    assert report.checkpoint == "bundled:smollm2-135m"


def test_the_probe_rolls_out_the_same_tasks_and_seeds_before_and_after_the_joint_rounds(tmp_path: Path, real_policy):
    """The probe measures the actor it follows: the stage-start actor (right on even seeds only)
    before the joint round, the trained one (scripted to be always right) after it."""
    store, bus = Store(tmp_path / "db.sqlite"), EventBus()
    lines = []
    bus.subscribe(lambda e: lines.append(e.detail) if isinstance(e, RprProgress) else None)
    served = []

    def loader(spec: str):
        served.append(spec)
        return (AlwaysRight if "iter-" in spec else SeededScript)(real_policy)

    stage = make_stage(tmp_path, real_policy, store=store, bus=bus, loader=loader, probe_tasks=1, probe_episodes=4)
    report = stage.run()
    assert report.checkpoint != "bundled:smollm2-135m"  # the joint round moved the actor
    jobs = stage.planner.probe_jobs(stage._tasks())  # noqa: SLF001
    assert len(jobs) == 4
    even = sum(job.seed % 2 == 0 for job in jobs) / len(jobs)  # what the stage-start actor gets right
    probes = store.metrics.points("rpr-1", "rpr/probe_success")
    assert [(p.step, p.value) for p in probes] == [(2, pytest.approx(even)), (3, 1.0)]  # after warm-up, after joint
    assert store.rpr.probe_jobs(1, 0).keys() == store.rpr.probe_jobs(1, 1).keys()  # same tasks, same seeds
    assert report.episodes == 6  # probe rollouts are measured, not trained on
    assert any(line.startswith("probe after 1 joint round(s): success 1.00") for line in lines)
    # A finished stage run again rolls nothing out, probes included.
    runs_before = len(store.runs.list(100))
    make_stage(tmp_path, real_policy, store=store, loader=loader, probe_tasks=1, probe_episodes=4).run()
    assert len(store.runs.list(100)) == runs_before


def test_the_probe_runs_every_probe_every_rounds_and_after_the_last(tmp_path: Path, real_policy):
    store = Store(tmp_path / "db.sqlite")
    stage = make_stage(
        tmp_path, real_policy, store=store, rounds=3, critic_warmup_rounds=0, probe_tasks=1, probe_every=2
    )
    stage.run()
    # Before joint round 1 (step 0), after round 2, and after round 3 because it is the last.
    assert [p.step for p in store.metrics.points("rpr-1", "rpr/probe_success")] == [0, 2, 3]
    assert [len(store.rpr.probe_jobs(1, j)) for j in range(4)] == [2, 0, 2, 2]


def test_a_killed_stage_resumes_where_it_stopped_to_the_same_weights(tmp_path: Path, real_policy):
    straight = make_stage(tmp_path / "a", real_policy, store=Store(tmp_path / "a.sqlite"))
    straight.run()

    store = Store(tmp_path / "b.sqlite")
    # Stops during round 2's rollouts, after its first episode is stored (round 1 is checkpointed).
    killed = make_stage(tmp_path / "b", real_policy, store=store, stop=lambda: len(store.rpr.jobs(1, 1)) >= 1)
    with pytest.raises(InterruptedError):
        killed.run()
    assert killed.latest().name == "iter-001" and len(store.rpr.jobs(1, 1)) == 1
    resumed = make_stage(tmp_path / "b", real_policy, store=store)
    report = resumed.run()
    # Nothing lost, nothing repeated: 3 rounds x 2 rollouts, the stored one reused.
    episodes = [e for r in store.runs.list(50) if r.kind == "rpr-rollout" for e in store.runs.episodes(r.id)]
    assert len(episodes) == 6 and report.episodes == 6
    assert [len(store.rpr.jobs(1, i)) for i in range(3)] == [2, 2, 2]
    # Optimizer, scheduler, RNG and cursor came back: the resumed stage ends on the same weights.
    final_a, final_b = straight.snapshots[-1], resumed.snapshots[-1]
    assert final_a.keys() == final_b.keys()
    for name in final_a:
        assert torch.allclose(final_a[name], final_b[name], atol=1e-6), name
    # A finished stage run again does nothing.
    assert make_stage(tmp_path / "b", real_policy, store=store).run().checkpoint == report.checkpoint


def test_infrastructure_failures_are_left_out_of_the_loss_not_scored_zero():
    from engine.rpr.ppo import ppo_update
    from engine.rpr.rollouts import Rollout

    broken = [Rollout("e1", "t", (1, 2, 3), (0, 1, 1), (), None, False, 0.0, 1.0)]
    stats = ppo_update(None, broken, settings(), (None, None), (None, None), train_actor=True, rng=random.Random(0))
    assert (stats.episodes, stats.skipped_infra, stats.optimizer_steps) == (0, 1, 0)


@pytest.mark.parametrize("kl_mode", ["loss", "reward"])
def test_ppo_makes_the_rewarded_reply_more_likely_than_the_unrewarded_one(real_policy, kl_mode):
    from engine.rpr.actor_critic import ACTOR
    from engine.rpr.ppo import make_optimizers, ppo_update
    from engine.rpr.rollouts import Rollout

    prompt = real_policy.tokenize_chat(
        [{"role": "user", "content": "Write hello to /app/out.txt."}], add_generation_prompt=True
    )
    stop = [min(real_policy.stop_ids)]

    def reply(text: str) -> list[int]:
        return real_policy._llm.tokenize(text.encode(), add_bos=False, special=False) + stop  # noqa: SLF001

    good, bad = reply("<bash>echo hello > /app/out.txt</bash>"), reply("<bash>echo nope > /app/out.txt</bash>")
    rollouts = [
        Rollout(
            name, "t", tuple(prompt + r), tuple([0] * len(prompt) + [1] * len(r)), (), reward, reward == 1, 0.0, 1.0
        )
        for name, r, reward in (("good", good, 1.0), ("bad", bad, 0.0))
    ]
    ac = tiny_actor_critic()
    s = settings(actor_lr=2e-3, ppo_epochs=2, minibatch_episodes=2, kl_coef=0.05, kl_mode=kl_mode)
    optimizers, schedulers = make_optimizers(ac, s)

    def margin() -> float:
        with torch.no_grad():
            lp = [
                float(ac.actions(ACTOR, torch.tensor([r.ids]), torch.tensor([r.mask[1:]])).logprobs.sum())
                for r in rollouts
            ]
        return lp[0] - lp[1]

    before = margin()
    stats = [
        ppo_update(ac, rollouts, s, optimizers, schedulers, train_actor=True, rng=random.Random(i)) for i in range(3)
    ]
    assert margin() > before + 1.0  # log-odds of the rewarded reply over the other, up by more than e
    assert stats[-1].kl > 0.0 and stats[-1].optimizer_steps == 2


def test_a_bf16_update_moves_the_adapters_as_the_fp32_one_does():
    """bf16 autocast ([rpr] precision) computes the same update up to bf16 rounding."""
    from engine.rpr.ppo import make_optimizers, ppo_update
    from engine.training.precision import compute_dtype

    moved = {}
    for precision in ("fp32", "bf16"):
        ac = tiny_actor_critic(precision)
        assert ac.dtype == precision and compute_dtype("fp32", ac.device) == "fp32"
        start = [p.detach().clone() for p in ac.actor_parameters()]
        rollouts = _random_rollouts(ac, sampler_shift=0.0)
        s = settings(ppo_epochs=1, minibatch_episodes=4, actor_lr=1e-3, precision=precision)
        optimizers, schedulers = make_optimizers(ac, s)
        stats = ppo_update(ac, rollouts, s, optimizers, schedulers, train_actor=True, rng=random.Random(0))
        moved[precision] = torch.cat([(p.detach() - q).flatten() for p, q in zip(ac.actor_parameters(), start)])
        assert math.isfinite(stats.value_loss) and math.isfinite(stats.policy_loss)
    cosine = torch.nn.functional.cosine_similarity(moved["fp32"], moved["bf16"], dim=0)
    assert moved["bf16"].abs().max() > 0 and cosine > 0.9


def _random_rollouts(ac, *, sampler_shift: float | None):
    """Three short episodes; with sampler_shift, sampler log-probs = the trainer's + the shift."""
    from engine.rpr.actor_critic import ACTOR
    from engine.rpr.rollouts import Rollout

    rng = random.Random(0)
    mask = tuple([0] * 24 + [1] * 12 + [0] * 8 + [1] * 12)
    rollouts = []
    for i, reward in enumerate((0.0, 0.5, 1.0)):
        ids = tuple(rng.randrange(100, 40000) for _ in range(len(mask)))
        sampler = ()
        if sampler_shift is not None:
            with torch.no_grad():
                trainer = ac.actions(ACTOR, torch.tensor([ids]), torch.tensor([mask[1:]])).logprobs
            sampler = tuple((trainer + sampler_shift).tolist())
        rollouts.append(Rollout(f"e{i}", "t", ids, mask, sampler, reward, reward == 1.0, 0.0, 0.0))
    return rollouts


def test_the_faster_update_takes_the_same_step_with_fewer_forward_passes():
    """Sampler log-probs as the old ones and the critic's single forward: same parameters after."""
    from engine.rpr.ppo import make_optimizers, ppo_update

    results = {}
    for fast in (False, True):
        ac = tiny_actor_critic()
        start = [p.detach().clone() for p in ac.actor_parameters() + ac.critic_parameters()]
        rollouts = _random_rollouts(ac, sampler_shift=0.0)
        s = settings(ppo_epochs=1, minibatch_episodes=4, old_logprobs="sampler" if fast else "recompute", actor_lr=1e-3)
        optimizers, schedulers = make_optimizers(ac, s)
        stats = ppo_update(
            ac, rollouts, s, optimizers, schedulers, train_actor=True, rng=random.Random(0), fuse_critic=fast
        )
        moved = [p.detach() - q for p, q in zip(ac.actor_parameters() + ac.critic_parameters(), start)]
        results[fast] = (stats, torch.cat([m.flatten() for m in moved]))
    slow, fast = results[False][0], results[True][0]
    assert (slow.old_logprobs_from, fast.old_logprobs_from) == ("trainer", "sampler")
    # Per episode: old, reference, critic twice, actor -> reference, critic, actor (each once).
    assert (slow.forward_passes, fast.forward_passes) == (5, 3)
    assert fast.policy_loss == pytest.approx(slow.policy_loss, abs=1e-6)
    assert fast.value_loss == pytest.approx(slow.value_loss, abs=1e-6)
    # Adam turns float rounding in a near-zero gradient (the episodes ran as one batch in one
    # path, the sampler's log-probs stood in in the other) into a full step on that coordinate,
    # so the movement is compared as a whole.
    slow_moved, fast_moved = results[False][1], results[True][1]
    assert slow_moved.norm() > 0 and (fast_moved - slow_moved).norm() < 0.01 * slow_moved.norm()


def test_a_critic_warm_up_update_runs_the_model_once_per_episode_and_leaves_the_actor():
    from engine.rpr.ppo import make_optimizers, ppo_update

    ac = tiny_actor_critic()
    rollouts = _random_rollouts(ac, sampler_shift=0.0)
    s = settings(ppo_epochs=1, minibatch_episodes=4)
    optimizers, schedulers = make_optimizers(ac, s)
    actor_before = [p.detach().clone() for p in ac.actor_parameters()]
    critic_before = [p.detach().clone() for p in ac.critic_parameters()]
    stats = ppo_update(ac, rollouts, s, optimizers, schedulers, train_actor=False, rng=random.Random(0))
    assert stats.forward_passes == 1 and stats.optimizer_steps == 1  # the critic's training forward only
    assert all(torch.equal(a, b) for a, b in zip(actor_before, ac.actor_parameters()))
    assert any(not torch.equal(a, b) for a, b in zip(critic_before, ac.critic_parameters()))


def test_sampler_log_probs_that_disagree_with_the_trainer_are_not_used_as_the_old_ones():
    from engine.rpr.ppo import make_optimizers, ppo_update

    ac = tiny_actor_critic()
    rollouts = _random_rollouts(ac, sampler_shift=0.5)  # a sampler serving other weights
    s = settings(ppo_epochs=1, minibatch_episodes=4, old_logprobs="sampler", sampler_tolerance=0.1)
    optimizers, schedulers = make_optimizers(ac, s)
    stats = ppo_update(ac, rollouts, s, optimizers, schedulers, train_actor=True, rng=random.Random(0))
    assert stats.old_logprobs_from == "trainer" and stats.forward_passes == 3  # the probe was a training forward
    assert stats.sampler_ratio == pytest.approx(float(torch.exp(torch.tensor(-0.5))), rel=1e-3)
    assert stats.policy_loss == pytest.approx(0.0, abs=1e-6)  # ratio 1 against the recomputed old log-probs
