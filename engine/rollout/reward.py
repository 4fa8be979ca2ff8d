"""Success-first reward: a full success scores 1, partial credit stays strictly below it."""

from __future__ import annotations


def shaped_reward(passed: int, total: int, alpha: float) -> float:
    """1.0 when every check passed, else alpha * passed/total with 0 <= alpha < 1.

    Because alpha < 1, no amount of partial credit reaches a success: 9 of 11 checks is
    worth less than 11 of 11, always.
    """
    if not 0.0 <= alpha < 1.0:
        raise ValueError(f"alpha must be in [0, 1), got {alpha}")
    if total <= 0 or passed < 0 or passed > total:
        raise ValueError(f"invalid check counts: {passed}/{total}")
    if passed == total:
        return 1.0
    return alpha * passed / total
