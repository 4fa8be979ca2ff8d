"""How results read, the same in the CLI's tables and the TUI's widgets.

Plain strings only (no Rich or Textual types), so both front ends lay them out their own way.
"""

from __future__ import annotations

from engine.api import (
    PIPELINE_STAGES,
    FamilyRow,
    NodeStatus,
    RunComparison,
    RunRecord,
    StageOverSeeds,
    StageRecord,
    TaskAggregate,
    interval_text,
)


def short_checkpoint(checkpoint: str) -> str:
    """A checkpoint spec without the long directory part of its adapter path."""
    if not checkpoint:
        return "-"
    head, sep, path = checkpoint.partition("=")
    if not sep:
        return checkpoint
    parts = path.split("/")
    return head + sep + ".../" + "/".join(parts[-3:]) if len(parts) > 3 else checkpoint


STAGE_COLUMNS = ("stage", "status", "pass@1 [95% CI]", "checkpoint", "detail")


def stage_rows(
    stages: dict[str, StageRecord], *, missing: str = "pending", short: bool = False
) -> list[tuple[str, str, str, str, str]]:
    """One row per pipeline stage, in pipeline order, for STAGE_COLUMNS."""
    rows = []
    for name in PIPELINE_STAGES:
        s = stages.get(name)
        if s is None:
            rows.append((name, missing, "-", "-" if short else "", ""))
        else:
            checkpoint = short_checkpoint(s.checkpoint) if short else s.checkpoint
            rows.append((name, s.status, s.pass_text, checkpoint, s.detail or ""))
    return rows


SEED_COLUMNS = ("stage", "seeds", "pass@1 per seed", "mean pass@1 [95% CI]", "vs parent [95% CI]")


def seed_rows(summary: list[StageOverSeeds] | tuple[StageOverSeeds, ...]) -> list[tuple[str, str, str, str, str]]:
    """One row per stage of `Engine.over_seeds`, for SEED_COLUMNS."""
    rows = []
    for r in summary:
        per_seed = ", ".join(f"{seed}: {rate:.3f}" for seed, rate in zip(r.seeds, r.per_seed)) or "-"
        mean = interval_text(r.mean.estimate, r.mean.low, r.mean.high) if r.mean else "-"
        if r.gain is None:
            gain = "-"
        else:
            gain = f"{r.gain.estimate:+.3f} [{r.gain.low:+.3f}, {r.gain.high:+.3f}] vs {r.parent}"
        rows.append((r.stage, str(len(r.seeds)), per_seed, mean, gain))
    return rows


def family_columns(stages: list[str]) -> tuple[str, ...]:
    """FAMILY rows' columns: the family, its tier, then each stage's eval pass@1 (RSR stages with
    their exploration's successes/attempts), then the seeds it was learned in."""
    return ("family", "tier", *stages, "learned in seeds")


def family_row_cells(row: FamilyRow, stages: list[str]) -> tuple[str, ...]:
    """One family for `family_columns`: per stage "0.375 (3/8)" over seeds, "+ explore 2/16"."""
    cells = []
    for stage in stages:
        cell = row.stages.get(stage)
        if cell is None or cell.rate is None:
            cells.append("-")
            continue
        s, n = sum(a for a, _ in cell.per_seed), sum(b for _, b in cell.per_seed)
        text = f"{cell.rate:.2f} ({s}/{n})"
        if cell.explore is not None:
            text += f", explore {cell.explore[0]}/{cell.explore[1]}"
        cells.append(text)
    return (row.family, row.tier, *cells, ", ".join(map(str, row.learned_in)) or "-")


RUN_COLUMNS = ("run", "kind", "agent", "status", "episodes", "success", "pass@1 [95% CI]", "started")


def run_row(r: RunRecord) -> tuple[str, ...]:
    """One stored run for RUN_COLUMNS."""
    s = r.summary
    low, high = (s.get("ci95") or (None, None))[:2]
    return (
        r.id,
        r.kind,
        r.agent,
        r.status,
        str(s.get("episodes", r.total)),
        success_rate(r.success_rate),
        interval_text(s.get("pass_at_1"), low, high),
        r.created_at.replace("T", " ")[:19],
    )


def success_rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.1%}"


def summary_lines(summary: dict) -> list[str]:
    """An evaluation's summary: success over scored episodes, then pass@1 and pass@k."""
    rate = "n/a" if summary["success_rate"] is None else f"{summary['success_rate']:.1%}"
    lines = [
        f"success rate {rate} ({summary['successes']}/{summary['scored']} scored episodes; "
        f"{summary['infra_errors']} infrastructure errors)"
    ]
    if summary["pass_at_1"] is not None:
        lo, hi = summary["ci95"]
        ks = ", ".join(f"pass@{k} {v:.3f}" for k, v in summary["pass_at_k"].items())
        lines.append(f"pass@1 {summary['pass_at_1']:.3f} (95% CI {lo:.3f}-{hi:.3f}, task bootstrap); {ks}")
    return lines


def task_row(t: TaskAggregate) -> tuple[str, str, str, str, str]:
    rate = "-" if t.success_rate is None else f"{t.success_rate:.2f}"
    return (t.task, str(t.episodes), str(t.successes), rate, str(t.infra_errors))


def comparison_lines(c: RunComparison, run_a: str, run_b: str) -> list[str]:
    d = c.difference
    return [
        f"{c.shared_tasks} shared tasks: pass@1 {c.pass_a:.3f} ({run_a}) -> {c.pass_b:.3f} ({run_b})",
        f"difference {d.estimate:+.3f} (95% CI {d.low:+.3f} to {d.high:+.3f}, paired task bootstrap)",
    ]


def cluster_line(nodes: list[NodeStatus]) -> str:
    """One line for a cluster's nodes (`Engine.cluster_status`): the CLI's summary and the
    dashboard's cluster line."""
    if not nodes:
        return "cluster: no live node"
    workers = [n.worker for n in nodes if n.worker is not None]
    backends = sorted({b for n in nodes for b in n.backends})
    parts = [
        f"cluster: {len(nodes)} node{'s' if len(nodes) != 1 else ''}",
        "backends " + (", ".join(backends) or "none"),
    ]
    if workers:
        free = sum(w.slots - w.running for w in workers)
        parts.append(f"{free}/{sum(w.slots for w in workers)} sandbox slots free")
        digests = sorted({w.checkpoint for w in workers if w.checkpoint})
        parts.append("checkpoint " + (", ".join(digests) if digests else "none loaded"))
    else:
        parts.append("no run is using it")
    return " · ".join(parts)
