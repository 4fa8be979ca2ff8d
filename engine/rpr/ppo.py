"""One PPO update of actor and critic on a batch of rollouts (or of the critic alone, in warm-up).

1. Without gradients, the training model recomputes the actor's log-probs of the sampled
   tokens (the "old" ones PPO's ratio starts from), the reference's, and the critic's values;
   the importance ratio of the training model against the sampling backend is logged.
2. The episode's success-first reward sits on its last action token (minus a per-token KL
   penalty when kl_mode = "reward"); GAE runs over action tokens only.
3. `ppo_epochs` passes over shuffled minibatches of whole episodes: clipped policy loss (+ KL
   loss when kl_mode = "loss"), clipped value loss, aggregated over each minibatch as
   `loss_agg_mode` says (token-mean, or seq-mean-token-mean as in verl); backward
   per episode and adapter (see actor_critic), gradient clipping, one optimizer step per
   minibatch.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from typing import Callable

import torch

from engine.config import RprConfig
from engine.rpr.actor_critic import ACTOR, ActorCritic
from engine.rpr.ppo_math import (
    KL_ESTIMATORS,
    explained_variance,
    gae,
    kl_k1,
    masked_whiten,
    policy_loss,
    terminal_rewards,
    value_loss,
)
from engine.rpr.rollouts import Rollout


@dataclass(frozen=True)
class UpdateStats:
    episodes: int
    skipped_infra: int
    skipped_long: int
    tokens: int
    action_tokens: int
    mean_reward: float
    success_rate: float
    policy_loss: float
    value_loss: float
    kl: float
    entropy: float
    clip_fraction: float
    explained_variance: float
    sampler_ratio: float  # mean exp(logp_train - logp_sampler) over action tokens
    sampler_log_ratio_max: float
    optimizer_steps: int
    seconds: float


@dataclass
class _Prepared:
    rollout: Rollout
    ids: torch.Tensor
    target_mask: torch.Tensor
    old_logprobs: torch.Tensor
    ref_logprobs: torch.Tensor | None
    old_values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor


def make_optimizers(ac: ActorCritic, settings: RprConfig):
    def warmup(step: int) -> float:
        return min(1.0, (step + 1) / settings.lr_warmup_steps) if settings.lr_warmup_steps else 1.0

    actor = torch.optim.AdamW(ac.actor_parameters(), lr=settings.actor_lr, weight_decay=0.0)
    critic = torch.optim.AdamW(ac.critic_parameters(), lr=settings.critic_lr, weight_decay=0.0)
    return (actor, critic), (
        torch.optim.lr_scheduler.LambdaLR(actor, warmup),
        torch.optim.lr_scheduler.LambdaLR(critic, warmup),
    )


def _prepare(ac: ActorCritic, rollouts: list[Rollout], settings: RprConfig, train_actor: bool) -> list[_Prepared]:
    need_ref = settings.kl_coef > 0 and (train_actor or settings.kl_mode == "reward")
    prepared = []
    with torch.no_grad():
        for r in rollouts:
            ids = torch.tensor([r.ids], dtype=torch.long)
            target_mask = torch.tensor([r.mask[1:]], dtype=torch.long)
            old = ac.actions(ACTOR, ids, target_mask).logprobs
            ref = ac.reference_logprobs(ids, target_mask) if need_ref else None
            values = ac.values(ids, target_mask)
            ones = torch.ones(1, len(values))
            rewards = terminal_rewards(ones, torch.tensor([float(r.reward)]))[0]
            if settings.kl_mode == "reward" and ref is not None:
                rewards = rewards - settings.kl_coef * kl_k1(old, ref)
            adv, ret = gae(rewards[None], values[None], ones, settings.gamma, settings.lam)
            prepared.append(_Prepared(r, ids, target_mask, old, ref, values, adv[0], ret[0]))
    if settings.normalize_advantages:
        flat = torch.cat([p.advantages for p in prepared])
        if flat.numel() > 1:
            whitened = masked_whiten(flat, torch.ones_like(flat)).split([len(p.advantages) for p in prepared])
            for p, a in zip(prepared, whitened):
                p.advantages = a
    return prepared


def ppo_update(
    ac: ActorCritic,
    rollouts: list[Rollout],
    settings: RprConfig,
    optimizers,
    schedulers,
    *,
    train_actor: bool,
    rng: random.Random,
    should_stop: Callable[[], bool] = lambda: False,
) -> UpdateStats:
    started = time.monotonic()
    usable = [r for r in rollouts if r.trainable and len(r.ids) <= settings.max_len]
    skipped_infra = sum(1 for r in rollouts if not r.trainable)
    skipped_long = sum(1 for r in rollouts if r.trainable and len(r.ids) > settings.max_len)
    if not usable:
        return UpdateStats(
            0,
            skipped_infra,
            skipped_long,
            0,
            0,
            math.nan,
            math.nan,
            math.nan,
            math.nan,
            math.nan,
            math.nan,
            math.nan,
            math.nan,
            math.nan,
            math.nan,
            0,
            time.monotonic() - started,
        )
    ac.train_actor = train_actor
    prepared = _prepare(ac, usable, settings, train_actor)

    all_values = torch.cat([p.old_values for p in prepared])[None]
    all_returns = torch.cat([p.returns for p in prepared])[None]
    ev = explained_variance(all_values, all_returns, torch.ones_like(all_values))
    ratios, log_ratio_max = [], 0.0
    for p in prepared:
        if len(p.rollout.sampler_logprobs) == len(p.old_logprobs):
            log_ratio = p.old_logprobs - torch.tensor(p.rollout.sampler_logprobs)
            ratios.append(torch.exp(log_ratio))
            log_ratio_max = max(log_ratio_max, float(log_ratio.abs().max()))
    sampler_ratio = float(torch.cat(ratios).mean()) if ratios else math.nan

    actor_opt, critic_opt = optimizers
    actor_sched, critic_sched = schedulers
    kl_estimator = KL_ESTIMATORS[settings.kl_estimator]
    sums = {"policy": 0.0, "value": 0.0, "kl": 0.0, "entropy": 0.0, "clip": 0.0}
    weight_total = 0.0
    steps = 0
    for _ in range(settings.ppo_epochs):
        order = list(prepared)
        rng.shuffle(order)
        for start in range(0, len(order), settings.minibatch_episodes):
            if should_stop():
                raise InterruptedError("PPO update stopped")
            batch = order[start : start + settings.minibatch_episodes]
            n_tokens = sum(len(p.old_logprobs) for p in batch)
            actor_opt.zero_grad(set_to_none=True)
            critic_opt.zero_grad(set_to_none=True)
            for p in batch:
                # Each episode's losses are token-means over its own actions; weighting them by length
                # makes a token-mean over the minibatch, weighting them equally a sequence-mean.
                w = len(p.old_logprobs) / n_tokens if settings.loss_agg_mode == "token-mean" else 1 / len(batch)
                ones = torch.ones(1, len(p.old_logprobs))
                if train_actor:
                    fwd = ac.actions(ACTOR, p.ids, p.target_mask, with_entropy=True)
                    pl, clip_frac = policy_loss(
                        fwd.logprobs[None], p.old_logprobs[None], p.advantages[None], ones, settings.clip_ratio
                    )
                    loss = pl
                    if p.ref_logprobs is not None:
                        kl = kl_estimator(fwd.logprobs, p.ref_logprobs).mean()
                        if settings.kl_mode == "loss":
                            loss = loss + settings.kl_coef * kl
                        sums["kl"] += float(kl.detach()) * w
                    (loss * w).backward()
                    sums["policy"] += float(pl.detach()) * w
                    sums["clip"] += float(clip_frac) * w
                    sums["entropy"] += float(fwd.entropy.detach().mean()) * w
                values = ac.values(p.ids, p.target_mask)
                vl = value_loss(values[None], p.old_values[None], p.returns[None], ones, settings.clip_value)
                (vl * w).backward()
                sums["value"] += float(vl.detach()) * w
            weight_total += 1.0
            if train_actor:
                torch.nn.utils.clip_grad_norm_(ac.actor_parameters(), settings.grad_clip)
                actor_opt.step()
                actor_sched.step()
            torch.nn.utils.clip_grad_norm_(ac.critic_parameters(), settings.grad_clip)
            critic_opt.step()
            critic_sched.step()
            steps += 1
    mean = {k: v / weight_total for k, v in sums.items()}
    nan_unless_actor = (lambda v: v) if train_actor else (lambda v: math.nan)
    return UpdateStats(
        episodes=len(prepared),
        skipped_infra=skipped_infra,
        skipped_long=skipped_long,
        tokens=sum(len(p.rollout.ids) for p in prepared),
        action_tokens=sum(len(p.old_logprobs) for p in prepared),
        mean_reward=sum(p.rollout.reward for p in prepared) / len(prepared),
        success_rate=sum(p.rollout.success for p in prepared) / len(prepared),
        policy_loss=nan_unless_actor(mean["policy"]),
        value_loss=mean["value"],
        kl=nan_unless_actor(mean["kl"]) if any(p.ref_logprobs is not None for p in prepared) else math.nan,
        entropy=nan_unless_actor(mean["entropy"]),
        clip_fraction=nan_unless_actor(mean["clip"]),
        explained_variance=ev,
        sampler_ratio=sampler_ratio,
        sampler_log_ratio_max=log_ratio_max,
        optimizer_steps=steps,
        seconds=time.monotonic() - started,
    )
