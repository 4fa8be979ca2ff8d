"""Export a peft LoRA adapter (llama-family) as a GGUF LoRA adapter that llama.cpp applies at load.

So the llama.cpp backend serves the same policy SFT produced: `bundled:smollm2-135m+lora=FILE`
(or `gguf:PATH+lora=FILE`). Layout, as llama.cpp's adapter loader expects it:
- metadata `general.type = adapter`, `adapter.type = lora`, `adapter.lora.alpha` (llama.cpp scales
  by alpha / rank, as peft does);
- for each adapted weight `blk.N.<name>.weight`, tensors `...weight.lora_a` (rank x in) and
  `...weight.lora_b` (out x rank), float32;
- the GGUF base stores q and k projections with their rows permuted for its rope layout, so the
  rows of lora_b for q and k get the same permutation.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

GGUF_NAMES = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
_KEY = re.compile(r"layers\.(\d+)\.(\w+\.\w+)\.lora_([AB])\.weight$")


class ExportError(RuntimeError):
    pass


def _permute(rows, n_head: int):
    """The row order llama.cpp's converter gives q/k weights (heads split into rope halves)."""
    return rows.reshape(n_head, 2, rows.shape[0] // n_head // 2, *rows.shape[1:]).swapaxes(1, 2).reshape(rows.shape)


def export_lora_gguf(adapter_dir: Path, base_config_dir: Path, out_file: Path) -> Path:
    import gguf
    import numpy as np
    from safetensors.numpy import load_file

    adapter_dir, out_file = Path(adapter_dir), Path(out_file)
    cfg = json.loads((adapter_dir / "adapter_config.json").read_text())
    base = json.loads((Path(base_config_dir) / "config.json").read_text())
    if base.get("model_type") not in ("llama", "mistral"):
        raise ExportError(f"GGUF LoRA export supports llama-family models, not {base.get('model_type')!r}")
    weights_file = adapter_dir / "adapter_model.safetensors"
    if not weights_file.is_file():
        raise ExportError(f"{weights_file} not found (save the adapter with safetensors)")
    n_head, n_kv = base["num_attention_heads"], base.get("num_key_value_heads", base["num_attention_heads"])
    pairs: dict[tuple[int, str], dict[str, object]] = {}
    for key, value in load_file(str(weights_file)).items():
        m = _KEY.search(key)
        if not m:
            raise ExportError(f"unexpected adapter tensor {key}")
        layer, module, ab = int(m.group(1)), m.group(2), m.group(3)
        if module not in GGUF_NAMES:
            raise ExportError(f"no GGUF name for adapted module {module}")
        pairs.setdefault((layer, module), {})[ab] = value.astype(np.float32)
    tmp = out_file.with_name(out_file.name + ".partial")  # complete or absent, never half-written
    writer = gguf.GGUFWriter(str(tmp), "llama")
    writer.add_type("adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", float(cfg["lora_alpha"]))
    for (layer, module), ab in sorted(pairs.items()):
        a, b = ab["A"], ab["B"]
        if module == "self_attn.q_proj":
            b = _permute(b, n_head)
        elif module == "self_attn.k_proj":
            b = _permute(b, n_kv)
        name = f"blk.{layer}.{GGUF_NAMES[module]}.weight"
        writer.add_tensor(f"{name}.lora_a", np.ascontiguousarray(a))
        writer.add_tensor(f"{name}.lora_b", np.ascontiguousarray(b))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp.rename(out_file)
    return out_file
