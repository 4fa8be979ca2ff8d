"""One PPO update of actor and critic on a batch of rollouts (or of the critic alone, in warm-up).

1. The "old" log-probs PPO's ratio starts from are the sampler's own (llama.cpp reports them with
   every token) when a probe agrees: the training model recomputes one episode's log-probs and,
   if their mean |difference| from the sampler's is within `sampler_tolerance`, the sampler's
   stand for every episode (they are the behaviour policy, so the ratio also corrects the small
   sampler/trainer mismatch). Otherwise, or with `old_logprobs = "recompute"`, the training model
   recomputes them all. The reference's log-probs are computed when the KL term needs them; a
   frozen actor (critic warm-up) needs no old log-probs at all.
2. The episode's success-first reward sits on its last action token (minus a per-token KL
   penalty when kl_mode = "reward"); GAE runs over action tokens only, from the critic's values.
   When the update is one epoch over one minibatch, nothing has moved when an episode first goes
   through the model, so no forward pass runs only to look: the critic's training forward gives
   the old values (its loss is unclipped there anyway), and the actor's gives the old log-probs,
   its first episode serving as the probe. The result is the same update.
3. `ppo_epochs` passes over shuffled minibatches of whole episodes: clipped policy loss (+ KL
   loss when kl_mode = "loss"), clipped value loss, aggregated over each minibatch as
   `loss_agg_mode` says (token-mean, or seq-mean-token-mean as in verl); backward
   per episode and adapter (see actor_critic), gradient clipping, one optimizer step per
   minibatch.

A stop (`should_stop`) is honoured between minibatches and episodes and inside every forward and
backward pass (engine/training/stop.py): InterruptedError, the update left unfinished; the stage
discards it and reruns the round from its last checkpoint.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from typing import Callable

import torch

from engine.config import RprConfig
from engine.rpr.actor_critic import ACTOR, CRITIC, ActorCritic
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
from engine.rpr.prefix import Episode, Prefixes, SharedPrefix
from engine.rpr.rollouts import Rollout
from engine.training.stop import stoppable


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
    old_logprobs_from: str = ""  # "sampler" or "trainer": whose log-probs the ratio started from
    forward_passes: int = 0  # through the model, per episode on average (backward passes not counted)
    # The prompt prefix a minibatch's episodes shared, run once per training pass instead of once
    # per episode (engine/rpr/prefix.py): its mean length in tokens, 0 where nothing was shared.
    shared_prefix_tokens: float = 0.0


@dataclass
class _Prepared:
    rollout: Rollout
    ids: torch.Tensor
    target_mask: torch.Tensor
    old_logprobs: torch.Tensor | None  # None until the actor's training forward gives them (fused)
    ref_logprobs: torch.Tensor | None
    old_values: torch.Tensor | None = None  # None until the critic has run (fused: in training)
    advantages: torch.Tensor | None = None
    returns: torch.Tensor | None = None
    # With a critic on the top layers only: the hidden states entering them [T, H], computed once.
    critic_inputs: torch.Tensor | None = None

    @property
    def n_actions(self) -> int:
        return int(self.target_mask.sum())


@dataclass
class _SamplerCheck:
    """How the training model's log-probs compare with the sampler's, on the episodes recomputed."""

    ratios: list[torch.Tensor]
    log_ratio_max: float = 0.0

    def add(self, trainer: torch.Tensor, sampler: tuple[float, ...]) -> float:
        """Records one episode; returns its mean |log ratio|."""
        log_ratio = trainer - torch.tensor(sampler)
        self.ratios.append(torch.exp(log_ratio))
        self.log_ratio_max = max(self.log_ratio_max, float(log_ratio.abs().max()))
        return float(log_ratio.abs().mean())

    @property
    def mean_ratio(self) -> float:
        return float(torch.cat(self.ratios).mean()) if self.ratios else math.nan


def make_optimizers(ac: ActorCritic, settings: RprConfig):
    def warmup(step: int) -> float:
        return min(1.0, (step + 1) / settings.lr_warmup_steps) if settings.lr_warmup_steps else 1.0

    actor = torch.optim.AdamW(ac.actor_parameters(), lr=settings.actor_lr, weight_decay=0.0)
    critic = torch.optim.AdamW(ac.critic_parameters(), lr=settings.critic_lr, weight_decay=0.0)
    return (actor, critic), (
        torch.optim.lr_scheduler.LambdaLR(actor, warmup),
        torch.optim.lr_scheduler.LambdaLR(critic, warmup),
    )


def _has_sampler_logprobs(r: Rollout) -> bool:
    return len(r.sampler_logprobs) == r.action_tokens


def _prefixes(ac: ActorCritic, episodes: list[Episode], settings: RprConfig, adapter: str | None = ACTOR) -> Prefixes:
    """How `adapter`'s passes over `episodes` run. A critic on the top layers reads cached inputs,
    whole episodes, and shares no prefix."""
    share = settings.share_prefix and not (adapter == CRITIC and ac.critic_start)
    return Prefixes(ac, episodes, share=share, batch_tokens=settings.batch_tokens)


def _critic_values(ac: ActorCritic, batch: list[_Prepared], prefix: SharedPrefix | None = None) -> list[torch.Tensor]:
    """The critic's values of `batch`, whole when its inputs are cached (then `prefix` is None),
    else after `prefix`; one chunk of episodes as `Prefixes.chunks` makes them."""
    episodes = [(p.ids, p.target_mask) for p in batch]
    if batch[0].critic_inputs is None:
        return ac.values_many(episodes, prefix)
    return ac.values_many(episodes, inputs=[p.critic_inputs for p in batch])


def _old_logprobs(
    ac: ActorCritic, rollouts: list[Rollout], inputs: list[Episode], settings: RprConfig, prefixes: Prefixes
) -> tuple[list[torch.Tensor], _SamplerCheck, str, int]:
    """Old log-probs per episode, the sampler check, whose they are, and the forward passes spent."""
    check = _SamplerCheck([])
    if settings.old_logprobs == "sampler" and all(_has_sampler_logprobs(r) for r in rollouts):
        ids, target_mask = inputs[0]
        # The probe runs the whole episode: a shared prefix would cost more than it saves here.
        probe = ac.actions(ACTOR, ids, target_mask).logprobs
        if check.add(probe, rollouts[0].sampler_logprobs) <= settings.sampler_tolerance:
            return [torch.tensor(r.sampler_logprobs) for r in rollouts], check, "sampler", 1
    old = [f.logprobs for f in prefixes.run(ACTOR, lambda some, pre: ac.actions_many(ACTOR, some, prefix=pre))]
    for r, logprobs in zip(rollouts, old):
        if _has_sampler_logprobs(r):
            check.add(logprobs, r.sampler_logprobs)
    return old, check, "trainer", len(rollouts)


def _old_from_training(
    p: _Prepared, current: torch.Tensor, check: _SamplerCheck, source: str, rollouts: list[Rollout], settings: RprConfig
) -> str:
    """Sets `p.old_logprobs` from the actor's first training forward (the parameters have not moved
    yet), exactly as `_old_logprobs` would: the first episode is the probe that decides whether the
    sampler's log-probs stand in; every episode's agreement is recorded. Returns the source."""
    agreement = check.add(current, p.rollout.sampler_logprobs) if _has_sampler_logprobs(p.rollout) else math.inf
    if not source:
        usable = settings.old_logprobs == "sampler" and all(_has_sampler_logprobs(r) for r in rollouts)
        source = "sampler" if usable and agreement <= settings.sampler_tolerance else "trainer"
    p.old_logprobs = torch.tensor(p.rollout.sampler_logprobs) if source == "sampler" else current
    return source


def _advantages(p: _Prepared, values: torch.Tensor, settings: RprConfig) -> None:
    ones = torch.ones(1, len(values))
    rewards = terminal_rewards(ones, torch.tensor([float(p.rollout.reward)]))[0]
    if settings.kl_mode == "reward" and p.ref_logprobs is not None:
        rewards = rewards - settings.kl_coef * kl_k1(p.old_logprobs, p.ref_logprobs)
    adv, ret = gae(rewards[None], values[None], ones, settings.gamma, settings.lam)
    p.old_values, p.advantages, p.returns = values, adv[0], ret[0]


def _whiten(prepared: list[_Prepared], settings: RprConfig) -> None:
    if not settings.normalize_advantages:
        return
    flat = torch.cat([p.advantages for p in prepared])
    if flat.numel() > 1:
        whitened = masked_whiten(flat, torch.ones_like(flat)).split([len(p.advantages) for p in prepared])
        for p, a in zip(prepared, whitened):
            p.advantages = a


def _prepare(
    ac: ActorCritic,
    rollouts: list[Rollout],
    settings: RprConfig,
    train_actor: bool,
    *,
    with_values: bool,
    old_in_training: bool,
) -> tuple[list[_Prepared], _SamplerCheck, str, int]:
    """`old_in_training`: the old log-probs come from the actor's training forward (see ppo_update),
    so none are computed here."""
    need_ref = settings.kl_coef > 0 and (train_actor or settings.kl_mode == "reward")
    # A frozen actor's old log-probs are used only by a KL penalty in the reward.
    need_old = (train_actor or (need_ref and settings.kl_mode == "reward")) and not old_in_training
    with torch.no_grad():
        inputs = [
            (torch.tensor([r.ids], dtype=torch.long), torch.tensor([r.mask[1:]], dtype=torch.long)) for r in rollouts
        ]
        prefixes = _prefixes(ac, inputs, settings)
        if need_old:
            old, check, source, passes = _old_logprobs(ac, rollouts, inputs, settings, prefixes)
        else:
            old, check, source, passes = [None] * len(rollouts), _SamplerCheck([]), "", 0
        refs: list[torch.Tensor | None] = [None] * len(rollouts)
        if need_ref:
            adapter = ac.reference_adapter
            forwards = prefixes.run(adapter, lambda some, pre: ac.actions_many(adapter, some, prefix=pre))
            refs = [f.logprobs for f in forwards]
        prepared = [_Prepared(r, ids, mask, o, ref) for r, (ids, mask), o, ref in zip(rollouts, inputs, old, refs)]
        if ac.critic_start:
            cached = ac.critic_inputs(inputs, share=settings.share_prefix, batch_tokens=settings.batch_tokens)
            for p, hidden in zip(prepared, cached):
                p.critic_inputs = hidden
        if with_values:
            critic = _prefixes(ac, inputs, settings, CRITIC)
            for chunk in critic.chunks():
                some = [prepared[i] for i in chunk]
                for p, values in zip(some, _critic_values(ac, some, critic.get(CRITIC))):
                    _advantages(p, values, settings)
    passes += len(rollouts) * (int(need_ref) + int(with_values))
    if with_values:
        _whiten(prepared, settings)
    return prepared, check, source, passes


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
    fuse_critic: bool = True,
) -> UpdateStats:
    """`fuse_critic=False` keeps the critic's separate no-grad forward even where it is not needed
    (bench/ppo.py measures the update both ways)."""
    started = time.monotonic()
    usable = [r for r in rollouts if r.trainable and len(r.ids) <= settings.max_len]
    skipped_infra = sum(1 for r in rollouts if not r.trainable)
    skipped_long = sum(1 for r in rollouts if r.trainable and len(r.ids) > settings.max_len)
    if not usable:  # no losses to report: every statistic of the update is NaN
        return UpdateStats(0, skipped_infra, skipped_long, 0, 0, *[math.nan] * 10, 0, time.monotonic() - started)
    # Inside the passes too: one long episode's forward and backward on a loaded CPU take far
    # longer than a stop may wait (engine/training/stop.py).
    with stoppable(ac.model, should_stop, "critic warm-up" if not train_actor else "PPO update"):
        ac.train_actor = train_actor
        # One epoch over one minibatch: the parameters have not moved when each episode first goes
        # through the model, so the critic's training forward gives the old values, and the actor's
        # gives the old log-probs (or, when they agree with the sampler's, says so: the sampler's
        # then stand in, as the probe decides below). No forward pass runs only to look.
        fused = fuse_critic and settings.ppo_epochs == 1 and len(usable) <= settings.minibatch_episodes
        old_in_training = fused and settings.kl_mode == "loss"
        prepared, check, source, passes = _prepare(
            ac, usable, settings, train_actor, with_values=not fused, old_in_training=old_in_training
        )

        actor_opt, critic_opt = optimizers
        actor_sched, critic_sched = schedulers
        kl_estimator = KL_ESTIMATORS[settings.kl_estimator]
        sums = {"policy": 0.0, "value": 0.0, "kl": 0.0, "entropy": 0.0, "clip": 0.0}
        weight_total = 0.0
        steps = 0

        def weight(p: _Prepared, batch: list[_Prepared], n_tokens: int) -> float:
            # Each episode's losses are token-means over its own actions; weighting them by length
            # makes a token-mean over the minibatch, weighting them equally a sequence-mean.
            return p.n_actions / n_tokens if settings.loss_agg_mode == "token-mean" else 1 / len(batch)

        def critic_backward(batch: list[_Prepared], weights: list[float], prefix: SharedPrefix | None) -> None:
            total = torch.zeros(())
            for p, w, values in zip(batch, weights, _critic_values(ac, batch, prefix)):
                if p.old_values is None:
                    _advantages(p, values.detach(), settings)
                ones = torch.ones(1, p.n_actions)
                vl = value_loss(values[None], p.old_values[None], p.returns[None], ones, settings.clip_value)
                total = total + vl * w
                sums["value"] += float(vl.detach()) * w
            total.backward()

        def actor_backward(batch: list[_Prepared], weights: list[float], prefix: SharedPrefix | None) -> None:
            nonlocal source
            forwards = ac.actions_many(ACTOR, [(p.ids, p.target_mask) for p in batch], with_entropy=True, prefix=prefix)
            total = torch.zeros(())
            for p, w, fwd in zip(batch, weights, forwards):
                if p.old_logprobs is None:
                    source = _old_from_training(p, fwd.logprobs.detach(), check, source, usable, settings)
                ones = torch.ones(1, p.n_actions)
                pl, clip_frac = policy_loss(
                    fwd.logprobs[None], p.old_logprobs[None], p.advantages[None], ones, settings.clip_ratio
                )
                loss = pl
                if p.ref_logprobs is not None:
                    kl = kl_estimator(fwd.logprobs, p.ref_logprobs).mean()
                    if settings.kl_mode == "loss":
                        loss = loss + settings.kl_coef * kl
                    sums["kl"] += float(kl.detach()) * w
                total = total + loss * w
                sums["policy"] += float(pl.detach()) * w
                sums["clip"] += float(clip_frac) * w
                sums["entropy"] += float(fwd.entropy.detach().mean()) * w
            total.backward()

        def backward_pass(adapter: str, batch: list[_Prepared], n_tokens: int, chunk_backward: Callable) -> int:
            """One network's forward and backward over the minibatch, a chunk of episodes at a time
            and its shared prefix once; all of it before the other network's forward (see actor_critic)."""
            prefixes = _prefixes(ac, [(p.ids, p.target_mask) for p in batch], settings, adapter)
            prefix = prefixes.get(adapter)
            for chunk in prefixes.chunks():
                # Between chunks too: a minibatch of long episodes on a loaded CPU takes longer than
                # a stop may wait; the round's update is discarded and rerun on resume.
                if should_stop():
                    raise InterruptedError("PPO update stopped")
                some = [batch[i] for i in chunk]
                chunk_backward(some, [weight(p, batch, n_tokens) for p in some], prefix)
            prefixes.backward()
            shared_tokens.append(prefixes.length)
            return len(batch)

        shared_tokens: list[int] = []
        for _ in range(settings.ppo_epochs):
            order = list(prepared)
            rng.shuffle(order)
            for start in range(0, len(order), settings.minibatch_episodes):
                if should_stop():
                    raise InterruptedError("PPO update stopped")
                batch = order[start : start + settings.minibatch_episodes]
                n_tokens = sum(p.n_actions for p in batch)
                actor_opt.zero_grad(set_to_none=True)
                critic_opt.zero_grad(set_to_none=True)
                if fused:  # values, advantages and the critic's gradients first; whitening needs them all
                    passes += backward_pass(CRITIC, batch, n_tokens, critic_backward)
                    _whiten(prepared, settings)
                if train_actor:
                    passes += backward_pass(ACTOR, batch, n_tokens, actor_backward)
                if not fused:
                    passes += backward_pass(CRITIC, batch, n_tokens, critic_backward)
                weight_total += 1.0
                if train_actor:
                    torch.nn.utils.clip_grad_norm_(ac.actor_parameters(), settings.grad_clip)
                    actor_opt.step()
                    actor_sched.step()
                torch.nn.utils.clip_grad_norm_(ac.critic_parameters(), settings.grad_clip)
                critic_opt.step()
                critic_sched.step()
                steps += 1
        all_values = torch.cat([p.old_values for p in prepared])[None]
        all_returns = torch.cat([p.returns for p in prepared])[None]
        ev = explained_variance(all_values, all_returns, torch.ones_like(all_values))
        mean = {k: v / weight_total for k, v in sums.items()}
        nan_unless_actor = (lambda v: v) if train_actor else (lambda v: math.nan)
        return UpdateStats(
            episodes=len(prepared),
            skipped_infra=skipped_infra,
            skipped_long=skipped_long,
            tokens=sum(len(p.rollout.ids) for p in prepared),
            action_tokens=sum(p.n_actions for p in prepared),
            mean_reward=sum(p.rollout.reward for p in prepared) / len(prepared),
            success_rate=sum(p.rollout.success for p in prepared) / len(prepared),
            policy_loss=nan_unless_actor(mean["policy"]),
            value_loss=mean["value"],
            kl=nan_unless_actor(mean["kl"]) if any(p.ref_logprobs is not None for p in prepared) else math.nan,
            entropy=nan_unless_actor(mean["entropy"]),
            clip_fraction=nan_unless_actor(mean["clip"]),
            explained_variance=ev,
            sampler_ratio=check.mean_ratio,
            sampler_log_ratio_max=check.log_ratio_max,
            optimizer_steps=steps,
            seconds=time.monotonic() - started,
            old_logprobs_from=source,
            forward_passes=passes / len(prepared),
            shared_prefix_tokens=sum(shared_tokens) / len(shared_tokens) if shared_tokens else 0.0,
        )
