"""A prompt prefix that many episodes share, run through the model once instead of once per episode.

Every episode of a harness starts with the same system prompt: in the demo's RPR rounds, 285 of
an episode's ~390 tokens. PPO runs each episode through the model ten times (old, reference and
training passes of actor and critic), so most of its work was this one prefix, again and again.

A `SharedPrefix` holds the prefix's keys and values at every layer, computed once under one
adapter; each episode's forward then runs only the tokens after it, attending to those keys and
values as a KV cache (what generation does). Attention makes this the same computation as the
whole sequence's, so log-probs, values and gradients are unchanged up to float rounding
(tests/test_rpr_prefix.py).

With gradients, each episode's backward stops at the prefix: its keys and values are handed to
the episode forwards as detached leaves, which collect every episode's gradient, and `backward()`
then sends the sum through the prefix's own graph, once. Until then the prefix's graph is kept,
so `backward()` must run before another adapter's forward (peft resets requires_grad on switching).
"""

from __future__ import annotations

import functools
import inspect

import torch

# An episode as the model takes it: its token ids [1, T] and the action mask shifted by one [1, T-1].
Episode = tuple[torch.Tensor, torch.Tensor]

# Shorter common prefixes are not worth a second kind of forward pass.
MIN_SHARED_TOKENS = 16
# What a pass through the model costs beyond its tokens, in tokens: on the demo's CPU (bf16) a
# forward of 8 tokens took 0.16 s, of 115 tokens 0.23 s and of 400 tokens 0.39 s, about 0.17 s
# plus 0.55 ms a token.
PASS_TOKENS = 300


def shared_length(items: list[Episode]) -> int:
    """How many leading tokens every episode has in common and none predicts from: the shared
    prefix must end before the first position whose output is used (the token before an
    episode's first action). `items` are (ids [1, T], target_mask [1, T-1]); 0 when sharing is
    not worth it (one episode, or a common prefix under MIN_SHARED_TOKENS)."""
    if len(items) < 2:
        return 0
    first = items[0][0][0]
    length = min(len(ids[0]) for ids, _ in items)
    for ids, _ in items[1:]:
        differs = (ids[0, :length] != first[:length]).nonzero()
        if len(differs):
            length = int(differs[0, 0])
    for _, target_mask in items:
        used = target_mask[0].nonzero()
        if len(used):
            length = min(length, int(used[0, 0]))
    return length if length >= MIN_SHARED_TOKENS else 0


@functools.cache
def _cache_keyword(decoder_type: type) -> str:
    """The decoder's KV-cache argument: `cache` in transformers 5, `past_key_values` before."""
    return "cache" if "cache" in inspect.signature(decoder_type.forward).parameters else "past_key_values"


def _cache_of(output):
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


class SharedPrefix:
    def __init__(self, adapter: str | None, length: int, keys_values: list[Episode]) -> None:
        self.adapter, self.length = adapter, length
        self.hidden: torch.Tensor | None = None  # the prefix's own last hidden states [1, P, H], detached
        self._graph = keys_values
        self._tracked = any(k.requires_grad or v.requires_grad for k, v in keys_values)
        if self._tracked:
            self._leaves = [(k.detach().requires_grad_(), v.detach().requires_grad_()) for k, v in keys_values]
        else:
            self._leaves = keys_values

    @classmethod
    def compute(cls, adapter: str | None, decoder, ids: torch.Tensor) -> "SharedPrefix":
        """Runs `ids` [1, P] through `decoder` (the adapter already active, autocast already
        entered); with gradients when they are enabled."""
        output = decoder(input_ids=ids, use_cache=True)
        # A decoder running only its first layers (the critic's inputs, actor_critic) leaves the
        # cache's later layers empty.
        pairs = [(layer[0], layer[1]) for layer in _cache_of(output) if layer[0] is not None]
        prefix = cls(adapter, ids.shape[1], pairs)
        prefix.hidden = output.last_hidden_state.detach()
        return prefix

    def forward(self, decoder, tails: torch.Tensor) -> torch.Tensor:
        """Last hidden states of `tails` [B, S], the tokens that follow the prefix in B episodes."""
        from transformers import DynamicCache

        cache = DynamicCache()
        rows = tails.shape[0]
        for layer, (k, v) in enumerate(self._leaves):
            cache.update(k.expand(rows, -1, -1, -1), v.expand(rows, -1, -1, -1), layer)
        kwargs = {_cache_keyword(type(decoder)): cache}
        return decoder(input_ids=tails, use_cache=True, **kwargs).last_hidden_state

    def backward(self) -> None:
        """Sends the gradients the episodes left on the prefix's keys and values through the
        prefix's own graph (a no-op without gradients)."""
        if not self._tracked:
            return
        outputs, grads = [], []
        for graph, leaf in zip(self._graph, self._leaves):
            for g, x in zip(graph, leaf):
                if g.requires_grad and x.grad is not None:
                    outputs.append(g)
                    grads.append(x.grad)
        if outputs:
            torch.autograd.backward(outputs, grads)
        self._tracked = False  # the graph is freed; a second call would fail


class Prefixes:
    """The prefix a batch of episodes shares, computed once per adapter, and the chunks the
    episodes then run in. A prefix's keys and values hold the parameters of when they were
    computed (and a graph, with gradients), so a `Prefixes` lives for one pass over the batch."""

    def __init__(self, ac, episodes: list[Episode], *, share: bool, batch_tokens: int) -> None:
        """`share`: look for a shared prefix at all; `batch_tokens`: the most tokens (padding
        included) a chunk of episodes may run as, 0 for one episode at a time."""
        self.ac, self.episodes, self.batch_tokens = ac, episodes, batch_tokens
        self.length = shared_length(episodes) if share else 0
        self._by_adapter: dict[str | None, SharedPrefix] = {}

    def get(self, adapter: str | None) -> SharedPrefix | None:
        """The shared prefix under `adapter` (an ActorCritic's), or None where none is worth sharing."""
        if not self.length:
            return None
        if adapter not in self._by_adapter:
            self._by_adapter[adapter] = self.ac.prefix(adapter, self.episodes[0][0][:, : self.length])
        return self._by_adapter[adapter]

    def chunks(self) -> list[list[int]]:
        """The episodes' indices in runs that go through the model together, each padded to its
        longest tail and within `batch_tokens` (0: one episode a run).

        Over episodes sorted by length, the split that costs least when a run costs its padded
        tokens plus PASS_TOKENS: one long episode among short ones runs on its own rather than
        padding them all to its length, and short ones run together rather than each paying
        for a pass of its own."""
        tails = [ids.shape[1] - self.length for ids, _ in self.episodes]
        order = sorted(range(len(tails)), key=lambda i: tails[i])
        # best[j]: the least cost of the first j episodes in order, and where its last run starts.
        best: list[tuple[float, int]] = [(0.0, 0)]
        for j in range(1, len(order) + 1):
            width = tails[order[j - 1]]  # the longest of any run ending here
            options = [
                (best[i][0] + PASS_TOKENS + width * (j - i), i)
                for i in range(j)
                if j - i == 1 or width * (j - i) <= self.batch_tokens
            ]
            best.append(min(options))
        runs, j = [], len(order)
        while j:
            i = best[j][1]
            runs.append(order[i:j])
            j = i
        return runs[::-1]

    def run(self, adapter: str | None, forward) -> list:
        """`forward(some_episodes, prefix)` over every chunk, its per-episode results in the
        episodes' order."""
        results: list = [None] * len(self.episodes)
        for chunk in self.chunks():
            for i, result in zip(chunk, forward([self.episodes[i] for i in chunk], self.get(adapter))):
                results[i] = result
        return results

    def backward(self) -> None:
        for prefix in self._by_adapter.values():
            prefix.backward()
