"""The arithmetic of PPO as small pure functions over [batch, time] tensors (torch).

Time runs over a sequence's *target* positions (token t predicted from tokens < t). `mask` is 1
on action tokens, the ones the policy sampled, and 0 on prompt, template and observation
tokens: those carry no action, so they get no advantage, no return and no value loss, and GAE
steps from one action token straight to the next one.

Every function here is checked against hand-computed values in tests/test_rpr_math.py.
"""

from __future__ import annotations

import torch


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of x over positions where mask is 1 (0 when the mask is empty, not NaN)."""
    mask = mask.to(x.dtype)
    return (x * mask).sum() / mask.sum().clamp(min=1.0)


def masked_whiten(x: torch.Tensor, mask: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """Zero-mean unit-variance over the masked positions; masked-out positions stay 0."""
    mean = masked_mean(x, mask)
    var = masked_mean((x - mean) ** 2, mask)
    return (x - mean) * torch.rsqrt(var + eps) * mask.to(x.dtype)


def gae(
    rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float = 1.0, lam: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalized advantage estimation over action tokens only.

    For action token t whose next action token is t' (None at the episode's last action):
        delta_t = r_t + gamma * V(t') - V(t)      (V(None) = 0)
        A_t     = delta_t + gamma * lam * A_t'
    Rewards and values at observation positions are ignored; advantages and returns there are 0.
    Returns (advantages, returns) with returns = advantages + values on action tokens.
    """
    rewards, values, mask = rewards.float(), values.float(), mask.float()
    # Plain floats: a Python loop over tensor elements is ~100x slower for 2k-token episodes.
    r_rows, v_rows, m_rows = rewards.tolist(), values.tolist(), mask.tolist()
    adv_rows = []
    for r_row, v_row, m_row in zip(r_rows, v_rows, m_rows):
        adv = [0.0] * len(v_row)
        next_value = next_adv = 0.0
        for t in range(len(v_row) - 1, -1, -1):
            if not m_row[t]:
                continue
            delta = r_row[t] + gamma * next_value - v_row[t]
            adv[t] = delta + gamma * lam * next_adv
            next_value, next_adv = v_row[t], adv[t]
        adv_rows.append(adv)
    advantages = torch.tensor(adv_rows, dtype=torch.float32).reshape(values.shape)
    returns = (advantages + values) * mask
    return advantages, returns


def policy_loss(
    logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, clip: float = 0.2
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO's clipped surrogate, token-mean over the mask; returns (loss, fraction of tokens clipped)."""
    ratio = torch.exp(logprobs - old_logprobs)
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1.0 - clip, 1.0 + clip)
    loss = masked_mean(torch.maximum(unclipped, clipped), mask)
    clip_fraction = masked_mean((clipped > unclipped).float(), mask)
    return loss, clip_fraction


def value_loss(
    values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor, clip: float = 0.2
) -> torch.Tensor:
    """0.5 * max((V - R)^2, (V_clipped - R)^2), V_clipped kept within `clip` of the old value."""
    clipped = old_values + torch.clamp(values - old_values, -clip, clip)
    return 0.5 * masked_mean(torch.maximum((values - returns) ** 2, (clipped - returns) ** 2), mask)


def kl_k1(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token log(pi/ref): unbiased for KL(pi||ref) under samples of pi, but can be negative."""
    return logprobs - ref_logprobs


def kl_k3(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token (r - 1) - log r with r = ref/pi: unbiased and never negative (Schulman's k3)."""
    log_r = ref_logprobs - logprobs
    return torch.exp(log_r) - 1.0 - log_r


KL_ESTIMATORS = {"k1": kl_k1, "k3": kl_k3}


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of softmax(logits) over the last axis."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return -(logp.exp() * logp).sum(-1)


def explained_variance(values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor) -> float:
    """1 - Var(R - V) / Var(R) over the mask: 1 is a perfect critic, 0 no better than the mean,
    negative worse than the mean. NaN when the returns do not vary (nothing to explain)."""
    m = mask.bool()
    r, v = returns[m].float(), values[m].float()
    if r.numel() < 2:
        return float("nan")
    var_r = torch.var(r, unbiased=False)
    if var_r <= 1e-12:
        return float("nan")
    return float(1.0 - torch.var(r - v, unbiased=False) / var_r)


def terminal_rewards(mask: torch.Tensor, episode_rewards: torch.Tensor) -> torch.Tensor:
    """The episode's reward on its last action token, 0 everywhere else."""
    rewards = torch.zeros(mask.shape, dtype=torch.float32)
    for b in range(mask.shape[0]):
        actions = torch.nonzero(mask[b]).flatten()
        if actions.numel():
            rewards[b, actions[-1]] = float(episode_rewards[b])
    return rewards
