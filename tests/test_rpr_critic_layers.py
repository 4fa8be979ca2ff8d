"""A critic whose adapter changes only the top layers (`[rpr] critic_layers`) sees the base's hidden
states below them, which no update changes: an update computes them once, and the critic's forward
and backward then run through its own layers only. It is the same critic, and the same update, as
running every episode through the whole model."""

from __future__ import annotations

import os
import random

import pytest

from engine.config import RprConfig

if not os.environ.get("CI"):
    pytest.importorskip("peft", reason="needs the hf extra (installed by .ci/setup)")

import torch

from tests.conftest import tiny_actor_critic
from tests.test_rpr_prefix import _rollouts

TOP = 6


def _episodes(rollouts):
    return [(torch.tensor([r.ids]), torch.tensor([r.mask[1:]])) for r in rollouts]


def _nudged(ac):
    """A critic that is not all zeros (a fresh value head predicts 0 everywhere)."""
    torch.manual_seed(3)
    with torch.no_grad():
        for p in ac.critic_parameters():
            p.add_(torch.randn_like(p) * 0.01)
    return ac


def test_the_critic_changes_only_its_top_layers_and_its_values_and_gradients_are_the_whole_models():
    ac = _nudged(tiny_actor_critic(critic_layers=TOP))
    n_layers = ac.model.get_base_model().config.num_hidden_layers
    assert ac.critic_start == n_layers - TOP
    layers = {
        int(name.split(".layers.")[1].split(".")[0]) for name, _ in ac.model.named_parameters() if ".critic." in name
    }
    assert layers == set(range(n_layers - TOP, n_layers))

    episodes = _episodes(_rollouts(ac))
    inputs = ac.critic_inputs(episodes, share=True, batch_tokens=2048)
    assert [len(h) for h in inputs] == [ids.shape[1] for ids, _ in episodes]
    whole = ac.values_many(episodes)
    top = ac.values_many(episodes, inputs=inputs)
    assert float(torch.cat(whole).detach().abs().max()) > 0.01
    for a, b in zip(whole, top):
        assert torch.allclose(a, b, atol=1e-4)

    def gradients(**kwargs):
        for p in ac.critic_parameters():
            p.grad = None
        sum(v.sum() for v in ac.values_many(episodes, **kwargs)).backward()
        return torch.cat([p.grad.flatten() for p in ac.critic_parameters()])

    g_whole, g_top = gradients(), gradients(inputs=inputs)
    assert g_whole.norm() > 0
    assert (g_top - g_whole).norm() < 1e-4 * g_whole.norm()


@pytest.mark.parametrize(
    "case",
    [
        dict(train_actor=True, ppo_epochs=2, minibatch_episodes=2),
        dict(train_actor=True, ppo_epochs=1, minibatch_episodes=4),  # fused: values from the training pass
        dict(train_actor=False, ppo_epochs=2, minibatch_episodes=4),  # critic warm-up
    ],
    ids=["joint", "joint-fused", "warm-up"],
)
def test_the_update_on_cached_critic_inputs_is_the_update_through_the_whole_model(case, monkeypatch):
    from engine.rpr.actor_critic import ActorCritic
    from engine.rpr.ppo import make_optimizers, ppo_update

    case = dict(case)
    train_actor = case.pop("train_actor")
    results = {}
    for cached in (False, True):
        with monkeypatch.context() as patch:
            if not cached:  # the same top-layer critic, every episode run through the whole model
                patch.setattr(ActorCritic, "critic_start", property(lambda self: 0))
            ac = _nudged(tiny_actor_critic(critic_layers=TOP))
            params = ac.actor_parameters() + ac.critic_parameters()
            start = [p.detach().clone() for p in params]
            s = RprConfig(actor_lr=1e-3, critic_lr=1e-3, critic_layers=TOP, **case)
            optimizers, schedulers = make_optimizers(ac, s)
            stats = ppo_update(
                ac, _rollouts(ac), s, optimizers, schedulers, train_actor=train_actor, rng=random.Random(0)
            )
            moved = torch.cat([(p.detach() - q).flatten() for p, q in zip(params, start)])
            results[cached] = (stats, moved)
    (whole, whole_moved), (top, top_moved) = results[False], results[True]
    assert top.optimizer_steps == whole.optimizer_steps > 0
    assert top.value_loss == pytest.approx(whole.value_loss, rel=1e-4, abs=1e-6)
    assert top.explained_variance == pytest.approx(whole.explained_variance, rel=1e-3, abs=1e-5)
    if train_actor:
        assert top.policy_loss == pytest.approx(whole.policy_loss, rel=1e-4, abs=1e-6)
    assert whole_moved.norm() > 0
    assert (top_moved - whole_moved).norm() < 0.01 * whole_moved.norm()


def test_an_inherited_critic_keeps_its_own_layers(tmp_path):
    from engine.policy.spec import resolve_hf_base
    from engine.rpr.actor_critic import ActorCritic
    from engine.training.loader import LoraShape

    ac = _nudged(tiny_actor_critic(critic_layers=TOP))
    episodes = _episodes(_rollouts(ac, 2))
    before = ac.values_many(episodes)
    ac.save(tmp_path)
    restored = ActorCritic.load(
        resolve_hf_base("bundled:smollm2-135m"),
        actor_adapter=tmp_path / "actor",
        critic_adapter=tmp_path / "critic",
        value_head=tmp_path / "value_head.pt",
        reference="base",
        reference_adapter=None,
        lora=LoraShape(4, 8),
        load_4bit=False,
        temperature=1.0,
        critic_layers=0,  # a fresh critic would change every layer; a loaded one keeps its shape
    )
    assert restored.critic_start == ac.critic_start > 0
    inputs = restored.critic_inputs(episodes, share=True, batch_tokens=2048)
    for a, b in zip(before, restored.values_many(episodes, inputs=inputs)):
        assert torch.allclose(a, b, atol=1e-4)
