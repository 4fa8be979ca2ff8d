"""Policies: language models that produce the agent's replies. Select one with a model spec."""

from engine.policy.base import Generation, Policy, PolicyError
from engine.policy.spec import ModelSpec, load_configured_policy, load_policy, parse_model_spec

__all__ = [
    "Generation",
    "ModelSpec",
    "Policy",
    "PolicyError",
    "load_configured_policy",
    "load_policy",
    "parse_model_spec",
]
