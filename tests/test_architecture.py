"""Layering rules from pyproject's [tool.importlinter]: engine/ and sandboxes/ never import the TUI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from engine.paths import REPO_ROOT


def test_import_contracts_hold():
    lint = Path(sys.executable).parent / "lint-imports"
    proc = subprocess.run([str(lint)], cwd=REPO_ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout
