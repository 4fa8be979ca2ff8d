"""The prompt prefix PPO's episodes share runs through the model once per pass, and their tails run
together (engine/rpr/prefix.py): the update is the one made running every episode whole, alone."""

from __future__ import annotations

import os
import random

import pytest

from engine.config import RprConfig
from engine.rpr.prefix import MIN_SHARED_TOKENS, shared_length

if not os.environ.get("CI"):
    pytest.importorskip("peft", reason="needs the hf extra (installed by .ci/setup)")

import torch

from tests.conftest import tiny_actor_critic


def _item(ids: list[int], first_action: int) -> tuple[torch.Tensor, torch.Tensor]:
    mask = [0] * first_action + [1] * (len(ids) - first_action)
    return torch.tensor([ids]), torch.tensor([mask[1:]])


def test_the_shared_prefix_is_the_common_start_and_ends_before_the_first_predicted_action():
    common = list(range(100, 160))
    a = _item(common + [1, 2, 3, 4], 62)
    b = _item(common + [5, 6, 7], 61)
    assert shared_length([a, b]) == 60  # where the two episodes part
    # The hidden state at position 44 predicts the first action token (45): it must be computed.
    assert shared_length([a, _item(common + [5, 6, 7], 45)]) == 44
    differs_early = _item(common[:10] + [9] + common[11:] + [5], 61)
    assert shared_length([a, differs_early]) == 0  # 10 tokens in common: under MIN_SHARED_TOKENS
    assert MIN_SHARED_TOKENS > 10
    assert shared_length([a]) == 0  # nothing to share with


def _rollouts(ac, n: int = 4):
    """Episodes of one harness: a common 40-token prompt, then each its own task and turns."""
    from engine.rpr.actor_critic import ACTOR
    from engine.rpr.rollouts import Rollout

    rng = random.Random(1)
    prompt = [rng.randrange(100, 40000) for _ in range(40)]
    rollouts = []
    for i in range(n):
        task = [rng.randrange(100, 40000) for _ in range(6 + 3 * i)]
        turns = [rng.randrange(100, 40000) for _ in range(30)]
        ids = tuple(prompt + task + turns)
        mask = tuple([0] * (len(prompt) + len(task)) + [1] * 12 + [0] * 8 + [1] * 10)
        with torch.no_grad():
            sampler = ac.actions(ACTOR, torch.tensor([ids]), torch.tensor([mask[1:]])).logprobs
        reward = (0.0, 0.5, 1.0, 0.0)[i % 4]
        rollouts.append(Rollout(f"e{i}", f"t{i}", ids, mask, tuple(sampler.tolist()), reward, reward == 1.0, 0.0, 0.0))
    return rollouts


@pytest.mark.parametrize(
    "case",
    [
        dict(train_actor=True, ppo_epochs=2, minibatch_episodes=2),  # old, reference and values passes first
        dict(train_actor=True, ppo_epochs=1, minibatch_episodes=4),  # fused: the training passes give them
        dict(train_actor=False, ppo_epochs=2, minibatch_episodes=4),  # critic warm-up
    ],
    ids=["joint", "joint-fused", "warm-up"],
)
def test_sharing_the_prompt_prefix_and_batching_make_the_same_update_as_running_each_episode_whole(case):
    from engine.rpr.ppo import make_optimizers, ppo_update

    case = dict(case)
    train_actor = case.pop("train_actor")
    results = {}
    for share in (False, True):
        ac = tiny_actor_critic()
        start = [p.detach().clone() for p in ac.actor_parameters() + ac.critic_parameters()]
        rollouts = _rollouts(ac)
        # Unshared, the episodes run one at a time, whole: the update as it was before sharing.
        s = RprConfig(actor_lr=1e-3, critic_lr=1e-3, share_prefix=share, batch_tokens=2048 if share else 0, **case)
        optimizers, schedulers = make_optimizers(ac, s)
        stats = ppo_update(ac, rollouts, s, optimizers, schedulers, train_actor=train_actor, rng=random.Random(0))
        moved = [p.detach() - q for p, q in zip(ac.actor_parameters() + ac.critic_parameters(), start)]
        results[share] = (stats, torch.cat([m.flatten() for m in moved]))
    whole, shared = results[False][0], results[True][0]
    assert whole.shared_prefix_tokens == 0 and shared.shared_prefix_tokens >= 40
    assert shared.optimizer_steps == whole.optimizer_steps > 0
    assert shared.value_loss == pytest.approx(whole.value_loss, rel=1e-4, abs=1e-6)
    if train_actor:
        assert shared.policy_loss == pytest.approx(whole.policy_loss, rel=1e-4, abs=1e-6)
        assert shared.kl == pytest.approx(whole.kl, rel=1e-3, abs=1e-7)
    # Adam turns float rounding in a near-zero gradient into a full step on that coordinate, so
    # the parameters' movement is compared as a whole (measured: 0.0008 of its norm apart).
    whole_moved, shared_moved = results[False][1], results[True][1]
    assert whole_moved.norm() > 0
    assert (shared_moved - whole_moved).norm() < 0.01 * whole_moved.norm()


def test_episodes_run_together_within_the_token_budget_and_a_long_one_runs_alone():
    from engine.rpr.prefix import Prefixes

    common = list(range(100, 140))

    def chunks(tails: list[int], budget: int, share: bool = True) -> list[list[int]]:
        episodes = [_item(common + list(range(200, 200 + n)), 41) for n in tails]
        return Prefixes(None, episodes, share=share, batch_tokens=budget).chunks()

    # One long episode among short ones: padding the short ones to its length would cost more
    # than a pass of its own.
    assert chunks([720, 86, 233, 101], 2048) == [[1, 3, 2], [0]]
    assert chunks([400, 400, 400, 400], 2048) == [[0, 1, 2, 3]]  # equal lengths: one pass
    for tails, budget, share in [([100, 100, 300, 50], 400, True), ([100, 100, 300, 50], 400, False)]:
        runs = chunks(tails, budget, share)
        assert sorted(i for run in runs for i in run) == [0, 1, 2, 3]
        whole = [n + (0 if share else 40) for n in tails]
        assert all(len(run) == 1 or max(whole[i] for i in run) * len(run) <= budget for run in runs)
    assert chunks([100, 100, 300, 50], 0) == [[3], [0], [1], [2]]  # 0: one at a time
