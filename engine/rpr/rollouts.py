"""A stored episode as PPO training data: exact token ids, the action mask, sampler log-probs, reward.

The ids and mask are the episode's append-only token buffer, the same ones SFT trains on, so
PPO sees exactly the tokens the policy sampled. An infrastructure failure has no reward (None):
it is kept out of the loss rather than scored as a zero.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.store import Store


@dataclass(frozen=True)
class Rollout:
    episode_id: str
    task: str
    ids: tuple[int, ...]
    mask: tuple[int, ...]
    sampler_logprobs: tuple[float, ...]  # one per action token, as the sampling backend reported them
    reward: float | None
    success: bool
    generation_s: float
    duration_s: float

    @property
    def action_tokens(self) -> int:
        return sum(self.mask)

    @property
    def trainable(self) -> bool:
        return self.reward is not None and self.action_tokens > 0


def load_rollout(store: Store, episode_id: str) -> Rollout:
    episode = store.runs.episode(episode_id)
    ids, mask = store.runs.episode_tokens(episode_id)
    steps = store.runs.steps(episode_id)
    sampler = tuple(lp for s in steps for lp in s.logprobs)
    if len(sampler) != sum(mask):
        sampler = ()  # a step without logprobs: no importance ratio to log for this episode
    # The store keeps no reward for infrastructure and verifier failures (None): never a zero.
    return Rollout(
        episode_id,
        episode.task,
        tuple(ids),
        tuple(mask),
        sampler,
        episode.reward,
        episode.success,
        sum(s.generation_s for s in steps),
        episode.duration_s,
    )
