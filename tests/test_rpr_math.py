"""PPO arithmetic against values worked out by hand."""

import math
import os

import pytest

if not os.environ.get("CI"):
    pytest.importorskip("torch", reason="PPO needs the hf extra (installed by .ci/setup)")

import torch

from engine.rpr.ppo_math import (
    entropy_from_logits,
    explained_variance,
    gae,
    kl_k1,
    kl_k3,
    masked_mean,
    masked_whiten,
    policy_loss,
    terminal_rewards,
    value_loss,
)


def t(*rows):
    return torch.tensor(rows, dtype=torch.float32)


def test_gae_with_gamma_lambda_one_is_reward_to_go_minus_value():
    # actions at 0, 1, 3; an observation token at 2; the reward 1.0 on the last action
    mask = t([1, 1, 0, 1])
    rewards = t([0, 0, 0, 1])
    values = t([0.2, 0.5, 9.0, 0.6])  # 9.0 sits on an observation token and must be ignored
    adv, ret = gae(rewards, values, mask, gamma=1.0, lam=1.0)
    assert adv.tolist()[0] == pytest.approx([0.8, 0.5, 0.0, 0.4])
    assert ret.tolist()[0] == pytest.approx([1.0, 1.0, 0.0, 1.0])


def test_gae_discounts_across_action_tokens_only():
    # gamma=0.9, lam=0.5; actions at 0 and 2, observation at 1.
    mask = t([1, 0, 1])
    rewards = t([0, 5.0, 1.0])  # reward on an observation token is ignored
    values = t([0.5, 3.0, 0.4])
    adv, ret = gae(rewards, values, mask, gamma=0.9, lam=0.5)
    # t=2: delta = 1 - 0.4 = 0.6, A = 0.6
    # t=0: delta = 0 + 0.9*0.4 - 0.5 = -0.14, A = -0.14 + 0.9*0.5*0.6 = 0.13
    assert adv.tolist()[0] == pytest.approx([0.13, 0.0, 0.6])
    assert ret.tolist()[0] == pytest.approx([0.63, 0.0, 1.0])


def test_observation_tokens_get_zero_advantage_and_zero_value_loss():
    mask = t([0, 1, 0, 0, 1, 0])
    rewards = terminal_rewards(mask, torch.tensor([1.0]))
    values = t([3.0, 0.1, -2.0, 7.0, 0.3, 5.0])
    adv, ret = gae(rewards, values, mask)
    assert adv[0, [0, 2, 3, 5]].abs().sum() == 0
    assert ret[0, [0, 2, 3, 5]].abs().sum() == 0
    # Changing the values on observation tokens changes neither the loss nor its gradient there.
    v = values.clone().requires_grad_(True)
    loss = value_loss(v, values, ret, mask, clip=10.0)
    loss.backward()
    assert v.grad[0, [0, 2, 3, 5]].abs().sum() == 0
    # by hand: returns on actions are 1.0 and 1.0; 0.5 * mean((0.1-1)^2, (0.3-1)^2) = 0.5 * (0.81+0.49)/2
    assert float(loss.detach()) == pytest.approx(0.325)


def test_terminal_reward_sits_on_the_last_action_token():
    mask = torch.tensor([[0, 1, 1, 0, 1, 0, 0], [1, 1, 0, 0, 0, 0, 0]])
    r = terminal_rewards(mask, torch.tensor([0.25, 1.0]))
    assert r.tolist() == [[0, 0, 0, 0, 0.25, 0, 0], [0, 1.0, 0, 0, 0, 0, 0]]


def test_policy_loss_clips_the_ratio():
    old = torch.log(t([0.5, 0.5, 0.5]))
    new = torch.log(t([0.8, 0.3, 0.5]))  # ratios 1.6, 0.6, 1.0
    adv = t([1.0, -1.0, 2.0])
    mask = t([1, 1, 1])
    loss, clipfrac = policy_loss(new, old, adv, mask, clip=0.2)
    # token 0: max(-1.6, -1.2) = -1.2 (clipped); token 1: max(0.6, 0.8) = 0.8 (clipped); token 2: -2.0
    assert float(loss) == pytest.approx((-1.2 + 0.8 - 2.0) / 3)
    assert float(clipfrac) == pytest.approx(2 / 3)


def test_policy_loss_ignores_masked_tokens():
    old = torch.zeros(1, 3)
    new = t([0.0, 5.0, 0.0])
    adv = t([1.0, 100.0, 1.0])
    loss, _ = policy_loss(new, old, adv, t([1, 0, 1]))
    assert float(loss) == pytest.approx(-1.0)


def test_value_loss_clips_moves_away_from_the_old_value():
    old = t([0.0])
    returns = t([1.0])
    # V moved to 0.5 with clip 0.2: clipped V = 0.2; max((0.5-1)^2, (0.2-1)^2) = 0.64; x0.5
    assert float(value_loss(t([0.5]), old, returns, t([1]), clip=0.2)) == pytest.approx(0.32)


def test_kl_estimators_by_hand():
    logp, ref = t([math.log(0.5)]), t([math.log(0.25)])
    assert float(kl_k1(logp, ref)) == pytest.approx(math.log(2))
    # r = ref/pi = 0.5: (0.5 - 1) - log 0.5 = -0.5 + 0.6931
    assert float(kl_k3(logp, ref)) == pytest.approx(-0.5 + math.log(2))
    assert float(kl_k3(ref, logp)) >= 0  # never negative, unlike k1
    assert float(kl_k1(ref, logp)) < 0


def test_entropy_of_uniform_and_certain_distributions():
    assert float(entropy_from_logits(torch.zeros(4))) == pytest.approx(math.log(4))
    assert float(entropy_from_logits(torch.tensor([0.0, -1e4]))) == pytest.approx(0.0, abs=1e-6)


def test_explained_variance():
    mask = t([1, 1, 1, 0])
    returns = t([1.0, 0.0, 1.0, 0.0])
    assert explained_variance(returns.clone(), returns, mask) == pytest.approx(1.0)
    # predicting the mean (2/3) explains nothing
    assert explained_variance(torch.full((1, 4), 2 / 3), returns, mask) == pytest.approx(0.0, abs=1e-6)
    assert explained_variance(t([0.0, 1.0, 0.0, 0.0]), returns, mask) < 0
    assert math.isnan(explained_variance(t([0.0, 0, 0, 0]), t([1.0, 1, 1, 0]), mask))


def test_masked_helpers():
    x, mask = t([1.0, 2.0, 3.0, 100.0]), t([1, 1, 1, 0])
    assert float(masked_mean(x, mask)) == pytest.approx(2.0)
    w = masked_whiten(x, mask)
    assert float(masked_mean(w, mask)) == pytest.approx(0.0, abs=1e-6)
    assert float(w[0, 3]) == 0.0
    assert float(masked_mean(x, torch.zeros(1, 4))) == 0.0


def test_a_trainer_that_disagrees_with_the_sampler_is_reported():
    from engine.rpr.stage import sampler_warning

    assert sampler_warning(1.003) == "" and sampler_warning(float("nan")) == ""
    assert "WARNING" in sampler_warning(0.0016) and "load_4bit = false" in sampler_warning(3.0)
