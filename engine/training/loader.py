"""One way to load a base model for training, on the CPU or a CUDA device.

SFT and PPO both put LoRA adapters on a base that is optionally NF4-quantized (bitsandbytes,
on the CPU as well). The device is chosen here once: the first CUDA device when there is one,
else the CPU. Compute stays float32 (the CPU has no fast bf16 path; on a GPU the adapters are
small and the NF4 base dominates memory anyway).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.config.logs import quiet_libraries

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class LoraShape:
    rank: int = 8
    alpha: int = 16
    dropout: float = 0.0
    target_modules: tuple[str, ...] = LORA_TARGETS

    def peft_config(self, layers: range | None = None):
        """`layers`: the decoder layers the adapter changes (None: all of them)."""
        from peft import LoraConfig

        return LoraConfig(
            r=self.rank,
            lora_alpha=self.alpha,
            lora_dropout=self.dropout,
            target_modules=list(self.target_modules),
            task_type="CAUSAL_LM",
            layers_to_transform=list(layers) if layers is not None else None,
            layers_pattern="layers" if layers is not None else None,
        )


def training_device():
    import torch

    return torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")


def load_base(base: str, *, load_4bit: bool):
    """The causal LM at `base` (a local transformers directory), on `training_device()`."""
    import torch
    from transformers import AutoModelForCausalLM

    quiet_libraries()
    kwargs: dict = {"dtype": torch.float32}
    if training_device().type == "cuda":
        kwargs["device_map"] = {"": 0}
    if load_4bit:
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.float32
        )
    return AutoModelForCausalLM.from_pretrained(base, **kwargs)


def model_device(model):
    return next(model.parameters()).device
