"""Percentiles and millisecond summaries shared by the bench scripts."""

from __future__ import annotations

import statistics


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def ms(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(pct(values, 0.5) * 1e3, 3),
        "p95_ms": round(pct(values, 0.95) * 1e3, 3),
        "mean_ms": round(statistics.mean(values) * 1e3, 3),
        "max_ms": round(max(values) * 1e3, 3),
        "n": len(values),
    }
