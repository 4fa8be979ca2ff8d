"""The update: one PPO round on a batch of rollouts, its metrics and its progress lines.

Reads the round's rollouts (a RolloutBatch) and the trainer (ActorCritic, optimizers,
schedulers, the PPO rng, all of which ppo_update moves). Writes nothing to the store. Returns a
`RoundOutcome`: the update's statistics, the round's metrics and its closing progress line.

A critic warm-up round updates the critic alone; a joint round trains on every group of one
task's rollouts whose rewards differ (`drop_uniform_groups`; sampling.informative).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from engine.config import RprConfig
from engine.rpr.plan import Round
from engine.rpr.resume import TrainerState
from engine.rpr.rollout_runs import RolloutBatch
from engine.rpr.sampling import informative, mixed_fraction

if TYPE_CHECKING:
    from engine.rpr.ppo import UpdateStats


def sampler_warning(ratio: float) -> str:
    """A loud note when the trainer's log-probs of the sampled tokens stray from the sampler's:
    PPO's updates are then off-policy by more than its clipping assumes (docs/rpr.md)."""
    if math.isnan(ratio) or 0.8 <= ratio <= 1.25:
        return ""
    return (
        f"; WARNING: trainer and sampler disagree on the sampled tokens (mean ratio {ratio:.3g}); "
        "with the bundled model train in fp32 ([rpr] load_4bit = false)"
    )


def number_text(value: float, digits: int) -> str:
    """A metric for a progress line; "-" where it is undefined (an explained variance when every
    return is equal, a loss with nothing trained), rather than "nan"."""
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def ppo_line(rnd: Round, episodes: int) -> str:
    """The progress line before the update."""
    return f"{rnd.label}: PPO on {episodes} episode(s)" + (", actor frozen" if rnd.warmup else "")


@dataclass(frozen=True)
class RoundOutcome:
    round: Round
    stats: UpdateStats
    trained: int  # rollouts the update was given (joint rounds leave out groups with equal rewards)
    # Over every scored rollout of the round, whether or not its group was trained on.
    reward: float
    success: float
    expected_success: float
    mixed_groups: float  # of the round's groups (one task's rollouts), the fraction whose rewards differ
    rollout_s: float
    generation_share: float  # of the episodes' wall time, spent sampling

    @property
    def moved(self) -> bool:
        """Whether the actor changed (the served actor is then this round's checkpoint)."""
        return not self.round.warmup and self.stats.optimizer_steps > 0

    def metrics(self) -> dict[str, float]:
        stats = self.stats
        return {
            "rpr/warmup": 1.0 if self.round.warmup else 0.0,
            "rpr/reward": self.reward,
            "rpr/success": self.success,
            "rpr/expected_success": self.expected_success,
            "rpr/trained_episodes": self.trained,
            "rpr/mixed_groups": self.mixed_groups,
            "ppo/value_loss": stats.value_loss,
            "ppo/explained_variance": stats.explained_variance,
            "ppo/policy_loss": stats.policy_loss,
            "ppo/kl": stats.kl,
            "ppo/entropy": stats.entropy,
            "ppo/clip_fraction": stats.clip_fraction,
            "ppo/sampler_ratio": stats.sampler_ratio,
            "ppo/sampler_log_ratio_max": stats.sampler_log_ratio_max,
            # 1 when the sampler's log-probs stood in for PPO's old ones (no recompute pass).
            "ppo/old_from_sampler": 1.0 if stats.old_logprobs_from == "sampler" else 0.0,
            "ppo/forward_passes": stats.forward_passes,
            "ppo/shared_prefix_tokens": stats.shared_prefix_tokens,
            "ppo/episodes": stats.episodes,
            "ppo/skipped_infra": stats.skipped_infra,
            "ppo/skipped_long": stats.skipped_long,
            "ppo/tokens": stats.tokens,
            "time/rollout_s": self.rollout_s,
            "time/train_s": stats.seconds,
            "time/generation_share": self.generation_share,
        }

    def progress(self) -> str:
        """The round's closing progress line."""
        stats = self.stats
        if self.trained:
            ev = number_text(stats.explained_variance, 3)
            fit = f"value loss {number_text(stats.value_loss, 4)}, explained variance {ev}"
        else:  # every group's rewards were equal: nothing to learn from, and no loss to report
            fit = "no update (every task's rollouts earned the same reward)"
        return (
            f"{self.round.label}: reward {number_text(self.reward, 3)}, success "
            f"{number_text(self.success, 2)} (expected "
            f"{number_text(self.expected_success, 2)}), mixed groups {number_text(self.mixed_groups, 2)}, {fit}"
            + sampler_warning(stats.sampler_ratio)
        )


def train_round(
    trainer: TrainerState,
    batch: RolloutBatch,
    rnd: Round,
    *,
    expected_success: float,
    settings: RprConfig,
    should_stop: Callable[[], bool],
) -> RoundOutcome:
    """One PPO update on the round's rollouts (the critic alone in a warm-up round)."""
    from engine.rpr.ppo import ppo_update

    rollouts = batch.rollouts
    trained = informative(list(batch.keyed)) if not rnd.warmup and settings.drop_uniform_groups else rollouts
    stats = ppo_update(
        trainer.ac,
        trained,
        settings,
        trainer.optimizers,
        trainer.schedulers,
        train_actor=not rnd.warmup,
        rng=trainer.rng,
        should_stop=should_stop,
    )
    scored = [r for r in rollouts if r.reward is not None]
    episode_s = sum(r.duration_s for r in rollouts) or 1.0
    return RoundOutcome(
        rnd,
        stats,
        len(trained),
        sum(r.reward for r in scored) / len(scored) if scored else math.nan,
        sum(r.success for r in scored) / len(scored) if scored else math.nan,
        expected_success,
        mixed_fraction(list(batch.keyed)),
        batch.seconds,
        sum(r.generation_s for r in rollouts) / episode_s,
    )
