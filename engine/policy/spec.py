"""Model spec strings select a policy backend:

bundled:smollm2-135m[+lora=FILE]
                        the bundled SmolLM2-135M-Instruct GGUF, served by llama.cpp, optionally
                        with a GGUF LoRA adapter (what `rsr` exports after SFT)
gguf:PATH[+lora=FILE]   any GGUF file, served by llama.cpp
openai:URL#MODEL        an OpenAI-compatible chat server, e.g. openai:http://127.0.0.1:8000/v1#smollm2
hf:PATH_OR_ID[+adapter=PATH][+4bit]
                        transformers: a checkpoint directory, a hub id (needs the hub) or a GGUF
                        file, optionally with a peft LoRA adapter and 4-bit NF4 loading
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from engine.policy.base import Policy, PolicyError

if TYPE_CHECKING:
    from engine.config import PolicyConfig

SPEC_HELP = (
    "bundled:smollm2-135m[+lora=FILE] | gguf:PATH[+lora=FILE] | openai:URL#MODEL | hf:PATH_OR_ID[+adapter=PATH][+4bit]"
)


@dataclass(frozen=True)
class ModelSpec:
    kind: str
    target: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.target}"


def parse_model_spec(text: str) -> ModelSpec:
    kind, sep, target = text.partition(":")
    if not sep or not target:
        raise PolicyError(f"model spec {text!r} is not KIND:TARGET ({SPEC_HELP})")
    if kind == "hf":
        base, *options = target.split("+")
        for opt in options:
            if opt != "4bit" and not opt.startswith("adapter="):
                raise PolicyError(f"unknown hf: option {opt!r} (use +adapter=PATH and/or +4bit)")
            if opt.startswith("adapter=") and not Path(opt[len("adapter=") :]).expanduser().is_dir():
                raise PolicyError(f"adapter directory not found: {opt[len('adapter=') :]}")
        if not base:
            raise PolicyError("hf: needs a path or a hub id")
    if kind not in ("bundled", "gguf", "openai", "hf"):
        raise PolicyError(f"unknown model spec kind {kind!r} ({SPEC_HELP})")
    if kind in ("bundled", "gguf"):
        model, *options = target.split("+")
        for opt in options:
            if not opt.startswith("lora="):
                raise PolicyError(f"unknown {kind}: option {opt!r} (use +lora=FILE)")
            if not Path(opt[len("lora=") :]).expanduser().is_file():
                raise PolicyError(f"GGUF LoRA adapter not found: {opt[len('lora=') :]}")
        if kind == "gguf" and not Path(model).expanduser().is_file():
            raise PolicyError(f"GGUF file not found: {model}")
    if kind == "openai":
        url, _, model = target.partition("#")
        if not url.startswith(("http://", "https://")) or not model:
            raise PolicyError(f"openai spec must be openai:http(s)://HOST:PORT/v1#MODEL, got {text!r}")
    return ModelSpec(kind, target)


def load_policy(
    spec: ModelSpec | str,
    *,
    n_ctx: int = 4096,
    threads: int | None = None,
    instances: int = 1,
    llama_backend: str = "batched",
    sequences: int = 8,
    weights: str = "as-is",
    name: str | None = None,
    min_p: float = 0.0,
) -> Policy:
    """`instances`: concurrent episodes the policy serves. For GGUF models, `llama_backend`
    "batched" (the default) serves them as sequences of one llama.cpp context, at most
    `sequences` decoding per batch; "instances" keeps one llama.cpp context per episode.
    `weights` ("as-is", "q8_0"): GGUF models are served from a copy of their weights
    re-encoded in that type and cached (engine/policy/gguf_weights.py says why).
    `name` (what episodes record as their model) defaults to the spec: a cluster worker serving
    its own copy of the head's files keeps the head's name. `min_p`: tokens less likely than
    min_p x the likeliest (at T = 1) are never sampled ([policy] min_p)."""
    spec = parse_model_spec(spec) if isinstance(spec, str) else spec
    name = name or str(spec)
    if spec.kind == "openai":
        from engine.policy.openai_compat import OpenAIPolicy

        url, _, model = spec.target.partition("#")
        return OpenAIPolicy(url, model, min_p=min_p)
    if spec.kind == "hf":
        from engine.policy.hf import TransformersPolicy

        base, *options = spec.target.split("+")
        adapter = next((o[len("adapter=") :] for o in options if o.startswith("adapter=")), None)
        return TransformersPolicy(
            resolve_hf_base(base), adapter=adapter, load_4bit="4bit" in options, n_ctx=n_ctx, name=name, min_p=min_p
        )
    from engine.policy.bundled import bundled_model_path
    from engine.policy.llamacpp import LlamaCppPolicy

    model, *options = spec.target.split("+")
    lora = next((Path(o[len("lora=") :]).expanduser() for o in options if o.startswith("lora=")), None)
    path = bundled_model_path(model) if spec.kind == "bundled" else Path(model).expanduser()
    if weights != "as-is":
        from engine.config.paths import resolve_paths
        from engine.policy.gguf_weights import reencoded_gguf

        path = reencoded_gguf(path, weights, resolve_paths().cache_dir / "models")
    if llama_backend == "instances":
        return LlamaCppPolicy(
            path, name=name, n_ctx=n_ctx, threads=threads, instances=instances, lora=lora, min_p=min_p
        )
    if llama_backend != "batched":
        raise PolicyError(f"unknown llama.cpp backend {llama_backend!r} (batched or instances)")
    from engine.policy.llamacpp_batched import BatchedLlamaCppPolicy

    return BatchedLlamaCppPolicy(
        path, name=name, n_ctx=n_ctx, threads=threads, slots=instances, sequences=sequences, lora=lora, min_p=min_p
    )


def load_configured_policy(
    spec: ModelSpec | str,
    settings: PolicyConfig,
    *,
    instances: int,
    threads: int | None = None,
    name: str | None = None,
) -> Policy:
    """`load_policy` with the GGUF choices of a config's `[policy]` section (backend, sequences
    per batch, weights), so that every place that serves a model serves it the same way."""
    return load_policy(
        spec,
        instances=instances,
        threads=threads,
        llama_backend=settings.llama_backend,
        sequences=settings.sequences,
        weights=settings.gguf_weights,
        name=name,
        min_p=settings.min_p,
    )


def resolve_hf_base(base: str) -> str:
    """A transformers-loadable path or hub id for the base of an `hf:` spec.

    `bundled:smollm2-135m` becomes the bundled model as a plain transformers checkpoint,
    converted from its GGUF once and cached (plain checkpoints can be quantized and trained).
    """
    if not base.startswith("bundled:"):
        return base
    from engine.config.paths import resolve_paths
    from engine.policy.bundled import bundled_model_path
    from engine.policy.hf import plain_checkpoint

    name = base.split(":", 1)[1]
    cache = resolve_paths().cache_dir / "models"
    cache.mkdir(parents=True, exist_ok=True)
    return str(plain_checkpoint(bundled_model_path(name), cache / f"{name}-hf"))


def trainable_weights(model: str) -> tuple[str, str | None]:
    """The transformers base and the peft adapter directory (if any) behind a policy spec.

    A llama.cpp LoRA `DIR/NAME.gguf` is served from the peft adapter `DIR/NAME/` it was exported
    from (the RSR and RPR checkpoints keep both), so training continues that adapter.
    """
    kind, _, target = model.partition(":")
    base, *options = target.split("+")
    if kind == "bundled":
        lora = next((o[len("lora=") :] for o in options if o.startswith("lora=")), None)
        adapter = str(Path(lora).with_suffix("")) if lora else None
        return resolve_hf_base(f"bundled:{base}"), adapter
    if kind == "hf":
        adapter = next((o[len("adapter=") :] for o in options if o.startswith("adapter=")), None)
        return resolve_hf_base(base), adapter
    raise PolicyError(f"training needs transformers weights; {model!r} has none here (use bundled:NAME or hf:PATH)")


def served_spec(model: str, adapter_dir: Path, gguf_file: Path | None) -> str:
    """The spec that serves `adapter_dir` on the same backend kind as `model`."""
    kind, _, target = model.partition(":")
    base, *options = target.split("+")
    if kind == "bundled" and gguf_file is not None:
        return f"bundled:{base}+lora={gguf_file}"
    keep = [o for o in options if o == "4bit"]
    return "+".join([f"hf:{base}", f"adapter={adapter_dir}", *keep])
