"""Task families, all declared one way (`registry.py`): the curriculum's, drawn from its split
pools (`pools.py`) and worded by `phrasing.py`, in two tiers, one-step (`one_command.py`) and
multi-step (`multi_step.py`), with held-out families of both (`heldout.py`); and the built-in
suite's, by tier (`builtin_trivial_easy.py`, `builtin_medium_hard.py`).
`engine/tasks/curriculum.py` and `engine/tasks/builtin_suite.py` draw and write their instances."""

from engine.tasks.families.registry import Draw, Families

__all__ = ["Draw", "Families"]
