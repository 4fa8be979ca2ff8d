"""Model spec strings select a policy backend:

    bundled:smollm2-135m    the bundled SmolLM2-135M-Instruct GGUF, served by llama.cpp
    gguf:PATH               any GGUF file, served by llama.cpp
    openai:URL#MODEL        an OpenAI-compatible chat server, e.g. openai:http://127.0.0.1:8000/v1#smollm2

Still to come (issue 4): `hf:PATH_OR_ID[+adapter=PATH]` (transformers, optional LoRA, 4-bit).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.policy.base import Policy, PolicyError

SPEC_HELP = "bundled:smollm2-135m | gguf:PATH | openai:URL#MODEL"


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
        raise PolicyError(f"hf: model specs are not built yet; available now: {SPEC_HELP}")
    if kind not in ("bundled", "gguf", "openai"):
        raise PolicyError(f"unknown model spec kind {kind!r} ({SPEC_HELP})")
    if kind == "gguf" and not Path(target).expanduser().is_file():
        raise PolicyError(f"GGUF file not found: {target}")
    if kind == "openai":
        url, _, model = target.partition("#")
        if not url.startswith(("http://", "https://")) or not model:
            raise PolicyError(f"openai spec must be openai:http(s)://HOST:PORT/v1#MODEL, got {text!r}")
    return ModelSpec(kind, target)


def load_policy(spec: ModelSpec | str, *, n_ctx: int = 4096, threads: int | None = None) -> Policy:
    spec = parse_model_spec(spec) if isinstance(spec, str) else spec
    if spec.kind == "openai":
        from engine.policy.openai_compat import OpenAIPolicy

        url, _, model = spec.target.partition("#")
        return OpenAIPolicy(url, model)
    from engine.policy.bundled import bundled_model_path
    from engine.policy.llamacpp import LlamaCppPolicy

    path = bundled_model_path(spec.target) if spec.kind == "bundled" else Path(spec.target).expanduser()
    return LlamaCppPolicy(path, name=str(spec), n_ctx=n_ctx, threads=threads)
