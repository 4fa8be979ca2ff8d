"""An SFT adapter exported to GGUF: llama.cpp serves the same policy transformers does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.policy import PolicyError, load_policy, parse_model_spec

if not os.environ.get("CI"):
    pytest.importorskip("llama_cpp", reason="needs the model extra (installed by .ci/setup)")
    pytest.importorskip("peft", reason="needs the hf extra (installed by .ci/setup)")

PROMPTS = ["Write the number 5.", "List the files in /app.", "Count the lines of /app/input.txt."]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from engine.policy.spec import resolve_hf_base
    from engine.training.gguf_export import export_lora_gguf
    from engine.training.loader import LORA_TARGETS

    base = resolve_hf_base("bundled:smollm2-135m")
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32),
        LoraConfig(r=4, lora_alpha=8, target_modules=list(LORA_TARGETS), task_type="CAUSAL_LM"),
    )
    torch.manual_seed(0)
    with torch.no_grad():  # a trained adapter's B is non-zero; random B exercises every row, q/k permutation included
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, 0.1)
    out = tmp_path_factory.mktemp("adapter")
    model.save_pretrained(out / "adapter")
    gguf_file = export_lora_gguf(out / "adapter", Path(base), out / "adapter.gguf")
    return base, out / "adapter", gguf_file


def _llama_logprobs(policy, prompt):
    import numpy as np

    if hasattr(policy, "next_token_logprobs"):  # the batched backend: its own context, adapter applied
        return policy.next_token_logprobs(prompt)
    llm = policy._llm  # noqa: SLF001 - the distribution straight from llama.cpp
    llm.reset()
    llm.eval(prompt)
    logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).astype(np.float64)  # noqa: SLF001
    return logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())


def _kl(p, q) -> float:
    import numpy as np

    return float(np.sum(np.exp(p) * (p - q)))


def test_llama_cpp_with_the_exported_adapter_matches_transformers(exported):
    import numpy as np

    base, adapter_dir, gguf_file = exported
    hf = load_policy(f"hf:{base}+adapter={adapter_dir}")
    served = load_policy(f"bundled:smollm2-135m+lora={gguf_file}", n_ctx=512)
    plain = load_policy("bundled:smollm2-135m", n_ctx=512)
    for text in PROMPTS:
        prompt = hf.tokenize_chat([{"role": "user", "content": text}], add_generation_prompt=True)
        p_hf = hf.next_token_logprobs(prompt).numpy().astype(np.float64)
        p_served, p_plain = _llama_logprobs(served, prompt), _llama_logprobs(plain, prompt)
        agree, moved = _kl(p_served, p_hf), _kl(p_served, p_plain)
        # Same policy up to Q4_1 rounding, while the adapter itself moves the distribution far more.
        assert agree < 0.05, f"KL(llama.cpp+lora || transformers+lora) = {agree:.4f} on {text!r}"
        assert moved > 10 * agree, f"the adapter barely changed llama.cpp ({moved:.4f}) on {text!r}"


def test_lora_specs_are_checked(tmp_path: Path):
    assert parse_model_spec(f"bundled:smollm2-135m+lora={__file__}").kind == "bundled"
    with pytest.raises(PolicyError, match="GGUF LoRA adapter not found"):
        parse_model_spec(f"bundled:smollm2-135m+lora={tmp_path / 'nope.gguf'}")
    with pytest.raises(PolicyError, match="unknown gguf: option"):
        parse_model_spec(f"gguf:{__file__}+adapter=x")
