"""Draw pass@1 per pipeline stage as an SVG: the mean over training seeds with its 95% interval,
and each seed's own value, from the JSON that `trsi-tui pipeline status --json FILE` writes.

    .venv/bin/trsi-tui --home HOME pipeline status --json /tmp/stages.json
    .venv/bin/python docs/stage_plot.py /tmp/stages.json docs/stages.svg

A plain SVG, so that the plot needs nothing beyond the standard library and reads in any browser
or on GitHub. The TUI's Curves screen draws the same numbers in the terminal.
"""

from __future__ import annotations

import argparse
import json
from html import escape
from pathlib import Path

WIDTH, HEIGHT = 720, 420
LEFT, RIGHT, TOP, BOTTOM = 70, 30, 50, 60
SEED_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2")


def rows_of(data: dict) -> list[dict]:
    """One row per stage: {stage, mean, low, high, per_seed: {seed: value}}."""
    if "over_seeds" not in data:  # a single lineage: {stage: record}
        return [
            {"stage": name, "mean": rec["pass_at_1"], "low": rec["ci_low"], "high": rec["ci_high"], "per_seed": {}}
            for name, rec in data.items()
            if rec.get("pass_at_1") is not None
        ]
    rows = []
    for row in data["over_seeds"]:
        if row["mean"] is None:
            continue
        rows.append(
            {
                "stage": row["stage"],
                "mean": row["mean"]["estimate"],
                "low": row["mean"]["low"],
                "high": row["mean"]["high"],
                "per_seed": dict(zip(row["seeds"], row["per_seed"])),
            }
        )
    return rows


def svg(rows: list[dict], title: str) -> str:
    top_value = max([0.5, *(r["high"] for r in rows), *(v for r in rows for v in r["per_seed"].values())])
    ymax = min(1.0, round(top_value + 0.05, 1))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(i: int) -> float:
        return LEFT + plot_w * (i + 0.5) / len(rows)

    def y(v: float) -> float:
        return TOP + plot_h * (1 - v / ymax)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="13">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="24" text-anchor="middle" font-size="15">{escape(title)}</text>',
    ]
    steps = round(ymax / 0.1)
    for k in range(steps + 1):
        v = k * 0.1
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{LEFT - 8}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.1f}</text>')
    out.append(
        f'<text x="18" y="{TOP + plot_h / 2}" transform="rotate(-90 18 {TOP + plot_h / 2})" '
        'text-anchor="middle">held-out pass@1</text>'
    )
    seeds = sorted({s for r in rows for s in r["per_seed"]})
    for i, r in enumerate(rows):
        cx = x(i)
        out.append(f'<text x="{cx:.1f}" y="{HEIGHT - BOTTOM + 22}" text-anchor="middle">{escape(r["stage"])}</text>')
        out.append(
            f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y(r["low"]):.1f}" y2="{y(r["high"]):.1f}" '
            'stroke="black" stroke-width="2"/>'
        )
        for v in (r["low"], r["high"]):
            out.append(f'<line x1="{cx - 8:.1f}" x2="{cx + 8:.1f}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="black"/>')
        for j, seed in enumerate(seeds):
            if seed in r["per_seed"] and len(r["per_seed"]) > 1:
                sx = cx + 18 + 7 * j
                colour = SEED_COLOURS[j % len(SEED_COLOURS)]
                out.append(f'<circle cx="{sx:.1f}" cy="{y(r["per_seed"][seed]):.1f}" r="4" fill="{colour}"/>')
    path = " ".join(f"{'M' if i == 0 else 'L'}{x(i):.1f},{y(r['mean']):.1f}" for i, r in enumerate(rows))
    out.append(f'<path d="{path}" fill="none" stroke="black" stroke-dasharray="4 3"/>')
    for i, r in enumerate(rows):
        out.append(f'<circle cx="{x(i):.1f}" cy="{y(r["mean"]):.1f}" r="5" fill="black"/>')
        out.append(f'<text x="{x(i) - 10:.1f}" y="{y(r["mean"]) - 9:.1f}" text-anchor="end">{r["mean"]:.3f}</text>')
    legend = ["black: mean over seeds, bar: 95% interval (seed-and-task bootstrap)"] if seeds else []
    legend += [f"seed {s}" for s in seeds]
    lx = LEFT
    for j, text in enumerate(legend):
        if j:
            out.append(f'<circle cx="{lx + 5}" cy="{HEIGHT - 17}" r="4" fill="{SEED_COLOURS[(j - 1) % 6]}"/>')
            lx += 14
        out.append(f'<text x="{lx}" y="{HEIGHT - 12}">{escape(text)}</text>')
        lx += 8 * len(text) + 18
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("status_json", type=Path, help="what `pipeline status --json FILE` wrote")
    parser.add_argument("out", type=Path, help="the SVG to write")
    parser.add_argument("--title", default="pass@1 per stage, bundled SmolLM2-135M, demo preset")
    args = parser.parse_args()
    rows = rows_of(json.loads(args.status_json.read_text()))
    if not rows:
        raise SystemExit(f"{args.status_json}: no evaluated stage")
    args.out.write_text(svg(rows, args.title))
    print(f"wrote {args.out} ({len(rows)} stages)")


if __name__ == "__main__":
    main()
