"""Layering rules from pyproject's [tool.importlinter]: engine/ and sandboxes/ never import the TUI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from engine.config.paths import REPO_ROOT


def test_import_contracts_hold():
    lint = Path(sys.executable).parent / "lint-imports"
    proc = subprocess.run([str(lint)], cwd=REPO_ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_front_ends_are_kept_from_every_engine_module_but_the_api_and_the_events():
    """The forbidden contract names the engine's modules one by one: one added later must join it,
    or the CLI and the TUI could import it unnoticed."""
    import tomllib

    contracts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (front_ends,) = [c for c in contracts if c.get("source_modules") == ["trsi_tui"]]
    engine = REPO_ROOT / "engine"
    modules = {f"engine.{p.stem}" for p in engine.glob("*.py") if p.stem != "__init__"}
    modules |= {f"engine.{p.parent.name}" for p in engine.glob("*/__init__.py")}
    assert set(front_ends["forbidden_modules"]) == modules - {"engine.api", "engine.events"}


def _engine_modules() -> list[Path]:
    return sorted(p for p in (REPO_ROOT / "engine").rglob("*.py") if p.name != "__init__.py")


def test_every_engine_module_is_in_a_layer():
    """A module outside the layers contract could import anything, and would go unnoticed."""
    import tomllib

    contracts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [c for c in contracts if c["type"] == "layers"]
    named = {name.strip() for layer in layers["layers"] for name in layer.split("|")}
    engine = REPO_ROOT / "engine"
    tops = {f"engine.{p.stem}" for p in engine.glob("*.py") if p.stem != "__init__"}
    tops |= {f"engine.{p.parent.name}" for p in engine.glob("*/__init__.py")}
    assert tops <= named, f"not in any layer: {sorted(tops - named)}"


def test_no_engine_module_is_a_room_too_large_to_live_in():
    sizes = {p.relative_to(REPO_ROOT).as_posix(): len(p.read_text().splitlines()) for p in _engine_modules()}
    assert {path: n for path, n in sizes.items() if n > 400} == {}
    loose = [p.name for p in (REPO_ROOT / "engine").glob("*.py") if p.name != "__init__.py"]
    assert len(loose) <= 6, sorted(loose)


def test_job_keys_and_scopes_are_built_and_parsed_only_in_engine_keys():
    """A resumed run finds its finished jobs by key: a key written one way and read another would
    repeat work silently. So key strings are built and split in engine/keys.py alone (the store's
    schema migrations rewrite old scopes and are exempt)."""
    import re

    pattern = re.compile(r"""f["'](rsr|rpr|stage)/|\.split\(["']\|["']\)|rpartition\(["']\|["']\)|["']\|aided""")
    found = [
        f"{p.relative_to(REPO_ROOT)}:{n}: {line.strip()}"
        for p in _engine_modules()
        if p.name not in ("keys.py", "schema.py")
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []
