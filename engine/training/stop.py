"""Stops honoured inside a forward or backward pass, not only between optimizer steps.

On a loaded 2-core CPU one long episode (2k tokens, the bundled 135M model) takes over a minute
through forward and backward, far longer than a stop may wait (10 s). So while training runs,
each decoder layer asks `should_stop` as its forward starts and as its gradient arrives in
backward; a stop then raises InterruptedError within one layer's work (about a second there),
and the update it interrupted is discarded by whoever runs it (the parameters have not moved:
the optimizer steps only after a whole backward).

    with stoppable(model, should_stop, "PPO update"):
        ...forward, backward, optimizer steps...
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator


def checkpoints_of(model) -> list:
    """The modules a stop is checked at: the decoder layers (any module whose class name ends in
    DecoderLayer, as in every transformers causal LM), or the whole model if it has none."""
    layers = [m for m in model.modules() if type(m).__name__.endswith("DecoderLayer")]
    return layers or [model]


@contextmanager
def stoppable(model, should_stop: Callable[[], bool], what: str) -> Iterator[None]:
    """While inside, a forward or backward pass through `model` raises InterruptedError(f"{what}
    stopped") at the next decoder layer once `should_stop()` is true."""

    def check() -> None:
        if should_stop():
            raise InterruptedError(f"{what} stopped")

    def before_forward(module, args) -> None:
        check()

    def after_forward(module, args, output) -> None:
        hidden = output[0] if isinstance(output, tuple) else output
        if getattr(hidden, "requires_grad", False):
            # Called when this layer's output gradient is ready in backward, before the layer's own
            # backward: the exception aborts the backward pass (autograd re-raises it as it is).
            hidden.register_hook(lambda grad: check())

    handles = []
    for module in checkpoints_of(model):
        handles.append(module.register_forward_pre_hook(before_forward))
        handles.append(module.register_forward_hook(after_forward))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
