"""GGUF weights re-encoded for serving: written once, named by their source, the same model."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from engine.policy import PolicyError, load_policy
from engine.policy.bundled import bundled_model_path
from engine.policy.gguf_weights import reencoded_gguf


def test_weights_are_encoded_once_and_again_when_the_source_changes(tmp_path):
    source = tmp_path / "model.gguf"
    shutil.copy(bundled_model_path(), source)
    cache = tmp_path / "cache"
    first = reencoded_gguf(source, "q8_0", cache)
    assert first.is_file() and first.stat().st_size > source.stat().st_size  # 8 bits a weight, not 4
    written = first.stat().st_mtime_ns
    assert reencoded_gguf(source, "q8_0", cache) == first and first.stat().st_mtime_ns == written
    assert reencoded_gguf(source, "as-is", cache) == source
    os.utime(source, ns=(source.stat().st_atime_ns, source.stat().st_mtime_ns + 10**9))
    assert reencoded_gguf(source, "q8_0", cache) != first
    assert not list(cache.glob("*.partial"))


def test_an_unreadable_source_or_unknown_type_is_a_clear_error(tmp_path):
    with pytest.raises(PolicyError, match="unknown GGUF weight type"):
        reencoded_gguf(bundled_model_path(), "q3", tmp_path)
    with pytest.raises(PolicyError, match="cannot read"):
        reencoded_gguf(tmp_path / "missing.gguf", "q8_0", tmp_path)
    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(b"not a gguf file")
    with pytest.raises(PolicyError, match="could not re-encode"):
        reencoded_gguf(garbage, "q8_0", tmp_path / "cache")
    assert not list((tmp_path / "cache").glob("*"))


def test_q8_0_serves_the_same_model_to_within_a_small_divergence():
    """The next-token distributions of the re-encoded weights stay close to the shipped file's."""
    prompt_text = "Count the lines of /app/a.txt and write the number to /app/count.txt."
    rows = {}
    for weights in ("as-is", "q8_0"):
        policy = load_policy("bundled:smollm2-135m", n_ctx=512, instances=1, weights=weights)
        prompt = policy.tokenize_chat([{"role": "user", "content": prompt_text}], add_generation_prompt=True)
        rows[weights] = policy.next_token_logprobs(prompt)
        policy.close()
    p = np.exp(rows["as-is"])
    kl = float((p * (rows["as-is"] - rows["q8_0"])).sum())
    assert 0 <= kl < 0.05
    assert int(np.argmax(rows["as-is"])) == int(np.argmax(rows["q8_0"]))
