"""The results file each bench script writes: its payload as indented JSON, and a line saying where."""

from __future__ import annotations

import json
from pathlib import Path


def write_results(out: Path, payload: dict) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {out}")
