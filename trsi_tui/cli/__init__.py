"""The `trsi-tui` command: no subcommand opens the TUI; subcommands run headless.

One module per command group; each registers its commands on the group in `group.py`.
"""

from __future__ import annotations

import sys

from trsi_tui.cli import cluster, evaluate, jobs, pipeline, rpr, rsr, runs, sandbox, tasks  # noqa: F401 - they register commands
from trsi_tui.cli.common import err
from trsi_tui.cli.group import cli

__all__ = ["cli", "main"]


def main() -> None:
    try:
        cli(obj={})
    except KeyboardInterrupt:
        err.print("interrupted: sandboxes stopped, finished episodes are stored")
        sys.exit(130)
