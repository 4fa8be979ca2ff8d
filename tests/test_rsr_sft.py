"""QLoRA SFT on the bundled model (CPU): it learns the actions, and the checkpoint loads as a policy."""

from __future__ import annotations

import json
import math
import os

import pytest

from engine.rsr.sft import METADATA, SftConfig, data_hash, train_sft
from engine.store.records import Provenance, Sample

if not os.environ.get("CI"):
    pytest.importorskip("peft", reason="SFT needs the hf extra (installed by .ci/setup)")
    pytest.importorskip("bitsandbytes", reason="QLoRA needs bitsandbytes (installed by .ci/setup)")

ACTION = "<bash>wc -l < /app/input.txt > /app/count.txt</bash>"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from engine.policy import load_policy
    from engine.policy.spec import resolve_hf_base

    base = resolve_hf_base("bundled:smollm2-135m")
    policy = load_policy(f"hf:{base}")
    opening = [
        {"role": "system", "content": "You run bash commands."},
        {"role": "user", "content": "Count the lines of /app/input.txt into /app/count.txt."},
    ]
    prompt = policy.tokenize_chat(opening, add_generation_prompt=True)
    action = policy.tokenizer.encode(ACTION, add_special_tokens=False) + [min(policy.stop_ids)]
    sample = Sample(
        tuple(prompt + action),
        tuple([0] * len(prompt) + [1] * len(action)),
        Provenance("count-lines", "xml-bash", "src", "replay"),
    )
    before = _logprob(policy, prompt, action)
    out = tmp_path_factory.mktemp("ckpt")
    steps = []
    result = train_sft(
        base,
        [sample],
        out,
        SftConfig(epochs=12, learning_rate=2e-3, rank=8, seed=1),
        on_step=lambda step, loss, tokens: steps.append((step, loss)),
    )
    return base, sample, prompt, action, before, result, steps, out


def _logprob(policy, prompt, action) -> float:
    import torch

    with torch.no_grad():
        logits = policy.model(torch.tensor([prompt + action])).logits[0]
    logp = torch.log_softmax(logits.float(), dim=-1)
    return float(sum(logp[len(prompt) - 1 + i, t] for i, t in enumerate(action)))


def test_loss_falls_and_every_step_is_reported(trained):
    *_, result, steps, _ = trained
    assert [s for s, _ in steps] == list(range(1, 13))
    assert result.losses[-1] < result.losses[0] * 0.5 and all(math.isfinite(x) for x in result.losses)
    assert result.action_tokens == 12 * sum(trained[1].mask)  # the loss saw only action tokens


def test_the_checkpoint_holds_the_adapter_and_its_lineage(trained):
    base, sample, *_, result, _, out = trained
    meta = json.loads((out / METADATA).read_text())
    assert meta["base_model"] == base and meta["data_hash"] == data_hash([sample])
    assert meta["config"]["load_4bit"] is True and meta["metrics"]["final_loss"] == result.losses[-1]
    assert (result.checkpoint / "adapter_config.json").is_file()


def test_the_adapted_policy_prefers_the_trained_action(trained):
    from engine.policy import load_policy

    base, _, prompt, action, before, result, _, _ = trained
    adapted = load_policy(f"hf:{base}+adapter={result.checkpoint}")
    assert _logprob(adapted, prompt, action) > before + 5.0  # e^5: the action became far more likely


def test_packing_gives_the_same_loss_as_padded_batches(trained, tmp_path):
    """Packed rows (block-diagonal mask, restarted positions) see exactly what separate rows see."""
    from engine.rsr.sft import collate_packed

    base, sample, prompt, action, *_ = trained
    other = Sample(sample.ids[:-3] + sample.ids[-2:], sample.mask[:-3] + sample.mask[-2:], sample.provenance)
    _, _, _, _, real = collate_packed([sample, other], 4096, 0)
    assert real == len(sample.ids) + len(other.ids)
    config = SftConfig(epochs=1, batch_samples=2, learning_rate=1e-9, load_4bit=False, seed=3)
    padded = train_sft(base, [sample, other], tmp_path / "a", config)
    packed = train_sft(base, [sample, other], tmp_path / "b", SftConfig(**{**config.__dict__, "packing": True}))
    assert abs(padded.losses[0] - packed.losses[0]) < 1e-4
    assert packed.tokens == padded.tokens  # padding is never counted as training tokens


def test_action_loss_equals_the_models_own_loss(trained):
    """Logits only at action positions: the same loss as the full forward, for far less memory."""
    import torch
    from transformers import AutoModelForCausalLM

    from engine.rsr.sft import action_loss, collate

    base, sample, *_ = trained
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    other = Sample(sample.ids[:-4], sample.mask[:-4], sample.provenance)
    ids, labels, attention = collate([sample, other], 4096, 0)
    with torch.no_grad():
        full = model(input_ids=ids, attention_mask=attention, labels=labels).loss
        ours = action_loss(model, ids, attention, labels)
    assert abs(float(full) - float(ours)) < 1e-5


def test_a_small_dataset_repeats_until_min_steps(trained, tmp_path):
    """3 samples in batches of 2 are 2 steps an epoch: min_steps 5 runs 2.5 epochs, no more."""
    from engine.rsr.sft import planned_steps

    base, sample, *_ = trained
    samples = [sample, Sample(sample.ids[:-1], sample.mask[:-1], sample.provenance), sample]
    config = SftConfig(epochs=1, min_steps=5, batch_samples=2, learning_rate=1e-9, load_4bit=False)
    steps = []
    result = train_sft(base, samples, tmp_path, config, on_step=lambda step, *_: steps.append(step))
    assert steps == [1, 2, 3, 4, 5] and result.steps == 5
    assert json.loads((tmp_path / METADATA).read_text())["metrics"]["epochs"] == 2.5
    # A dataset big enough for min_steps keeps its whole epochs.
    assert planned_steps(40, SftConfig(epochs=3, min_steps=12, batch_samples=4)) == 30


def test_bf16_autocast_trains_to_the_same_place_as_float32(trained, tmp_path):
    """`[rsr.sft] precision = "bf16"`: the matrix products in bf16, the weights and the optimizer in
    float32. The first step's loss is float32's up to bf16 rounding, the adapter learns the action
    as well, and the checkpoint says how it was computed."""
    base, sample, *_ = trained
    config = SftConfig(epochs=8, learning_rate=2e-3, load_4bit=False, seed=1)
    results = {}
    for precision in ("fp32", "bf16"):
        results[precision] = train_sft(
            base, [sample], tmp_path / precision, SftConfig(**{**config.__dict__, "precision": precision})
        )
        dtype = json.loads((tmp_path / precision / METADATA).read_text())["metrics"]["compute_dtype"]
        assert dtype == precision
    fp32, bf16 = results["fp32"].losses, results["bf16"].losses
    assert bf16[0] != fp32[0]  # it did run in bf16
    assert abs(bf16[0] - fp32[0]) < 0.02 * fp32[0]
    assert bf16[-1] < 0.2 * bf16[0] and fp32[-1] < 0.2 * fp32[0]
