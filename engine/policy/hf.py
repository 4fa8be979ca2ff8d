"""transformers: a local checkpoint directory, a hub id, or a GGUF file (dequantized), with an
optional peft LoRA adapter and optional 4-bit NF4 loading (bitsandbytes).

Generation is a plain KV-cached loop, so the sampled ids and their log-probabilities are exact:
each token is drawn from softmax(logits / T) with no truncation (argmax at T = 0), the same
semantics as the llama.cpp backend.
"""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path

from engine.config.logs import quiet_libraries
from engine.policy.base import END_OF_TURN_MARKERS, Generation, LocalPolicy, Messages, PolicyError, StopAt, Tools


class TransformersPolicy(LocalPolicy):
    def __init__(
        self,
        target: str,
        *,
        adapter: str | None = None,
        load_4bit: bool = False,
        n_ctx: int = 4096,
        name: str = "",
        min_p: float = 0.0,
    ) -> None:
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError:
            raise PolicyError("the transformers backend needs torch and transformers: pip install '.[hf]'") from None
        quiet_libraries()
        self.name = name or f"hf:{target}"
        self.min_p = min_p  # [policy] min_p (engine/policy/llamacpp_chat.min_p_keep: the same rule)
        path = Path(target).expanduser()
        source, extra = target, {}
        if path.is_file() and path.suffix == ".gguf":
            source, extra = str(path.parent), {"gguf_file": path.name}
        elif path.exists():
            source = str(path)
        model_kwargs = dict(extra, dtype=torch.float32)
        if load_4bit:
            import importlib.util

            from transformers import BitsAndBytesConfig

            if importlib.util.find_spec("bitsandbytes") is None:
                raise PolicyError("4-bit loading needs bitsandbytes: pip install bitsandbytes")
            model_kwargs["quantization_config"] = BitsAndBytesConfig(
                load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.float32
            )
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(source, **extra)
            model = AutoModelForCausalLM.from_pretrained(source, **model_kwargs)
        except (OSError, ValueError) as exc:
            raise PolicyError(f"transformers could not load {target}: {exc}") from None
        if adapter:
            try:
                from peft import PeftModel
            except ImportError:
                raise PolicyError("a LoRA adapter needs peft: pip install peft") from None
            try:
                model = PeftModel.from_pretrained(model, adapter)
            except (OSError, ValueError) as exc:
                raise PolicyError(f"could not load the adapter {adapter}: {exc}") from None
        self.model = model.eval()
        self._torch = torch
        self._lock = threading.Lock()
        limit = getattr(model.config, "max_position_embeddings", n_ctx) or n_ctx
        self.n_ctx = min(n_ctx, int(limit))
        stops = {self.tokenizer.eos_token_id}
        for marker in END_OF_TURN_MARKERS:
            ids = self.tokenizer.convert_tokens_to_ids(marker)
            if isinstance(ids, int) and ids != self.tokenizer.unk_token_id:
                stops.add(ids)
        self._stop_ids = frozenset(i for i in stops if i is not None)

    @property
    def stop_ids(self) -> frozenset[int]:
        return self._stop_ids

    def tokenize_text(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def tokenize_chat(
        self, messages: Messages, *, add_generation_prompt: bool, tools: Tools | None = None
    ) -> list[int]:
        out = self.tokenizer.apply_chat_template(
            messages, tools=tools, add_generation_prompt=add_generation_prompt, tokenize=True, return_dict=False
        )
        return list(out)

    def next_token_logprobs(self, prompt: list[int]):
        """log softmax of the next-token logits after `prompt` (for cross-backend checks)."""
        torch = self._torch
        with torch.no_grad(), self._lock:
            logits = self.model(input_ids=torch.tensor([prompt])).logits[0, -1].float()
        return torch.log_softmax(logits, dim=-1)

    supports_stop_at = True

    def generate_ids(
        self, prompt: list[int], *, max_tokens: int, temperature: float, seed: int | None = None, stop_at: StopAt = None
    ) -> Generation:
        torch = self._torch
        budget = self.token_budget(prompt, max_tokens)
        if budget == 0:
            return Generation("", (), (), len(prompt), "context_full")
        start, finish = time.monotonic(), "length"
        ids, logprobs = [], []  # the sampled token ids, and each one's log-probability
        generator = torch.Generator().manual_seed(seed) if seed is not None else None
        with torch.no_grad(), self._lock:
            out = self.model(input_ids=torch.tensor([prompt]), use_cache=True)
            while True:
                logits = out.logits[0, -1].float()
                scaled = logits / temperature if temperature > 0 else logits
                logp = torch.log_softmax(scaled, dim=-1)
                if temperature > 0:
                    probs = logp.exp()
                    if self.min_p > 0:  # min-p at T = 1, as llama.cpp's sampler and min_p_keep do
                        probs = torch.where(logits >= logits.max() + math.log(self.min_p), probs, 0.0)
                    token = int(torch.multinomial(probs, 1, generator=generator))
                else:
                    token = int(torch.argmax(logp))
                ids.append(token)
                logprobs.append(float(logp[token]))
                if token in self._stop_ids:
                    finish = "stop"
                    break
                if stop_at is not None and stop_at(self.tokenizer.decode(ids)):
                    finish = "action"
                    break
                if len(ids) >= budget:
                    break
                out = self.model(input_ids=torch.tensor([[token]]), use_cache=True, **_cache_kwargs(out))
        text = self.tokenizer.decode([t for t in ids if t not in self._stop_ids])
        return Generation(text, tuple(ids), tuple(logprobs), len(prompt), finish, [], time.monotonic() - start)


def _cache_kwargs(out) -> dict:
    """The KV cache of a forward pass, under the keyword this transformers version expects."""
    if "cache" in out:
        return {"cache": out["cache"]}
    return {"past_key_values": out["past_key_values"]}


def plain_checkpoint(gguf_path: Path, dest: Path) -> Path:
    """A plain transformers checkpoint of a GGUF model, written once to `dest` and reused.

    transformers loads a GGUF (dequantizing it) but marks the model as quantized and refuses to
    save, train or re-quantize it; a model rebuilt from its config and weights has no such flag.
    """
    if (dest / "config.json").is_file():
        return dest
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError:
        raise PolicyError("the transformers backend needs torch and transformers: pip install '.[hf]'") from None
    quiet_libraries()
    src, name = str(gguf_path.parent), gguf_path.name
    loaded = AutoModelForCausalLM.from_pretrained(src, gguf_file=name, dtype=torch.float32)
    config = loaded.config
    config.__dict__.pop("quantization_config", None)  # the GGUF marker would block re-quantizing
    plain = AutoModelForCausalLM.from_config(config)
    plain.load_state_dict(loaded.state_dict())
    tmp = dest.with_name(dest.name + ".partial")
    plain.save_pretrained(tmp)
    AutoTokenizer.from_pretrained(src, gguf_file=name).save_pretrained(tmp)
    tmp.rename(dest)  # complete or absent: an interrupted conversion is redone, never half-used
    return dest
