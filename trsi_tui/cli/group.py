"""The `trsi-tui` group itself: --home, and the TUI when no command is given."""

from __future__ import annotations

import os
from pathlib import Path

import click

from trsi_tui.cli.common import HOME_HELP, engine_of


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", metavar="DIR", default=None, help=HOME_HELP)
@click.version_option(package_name="trsi-tui")
@click.pass_context
def cli(ctx: click.Context, home: str | None) -> None:
    """trsi-tui: train terminal agents by recursive self-improvement.

    Run without a command to open the workstation TUI. Commands run headless.
    """
    ctx.ensure_object(dict)
    ctx.obj["home"] = home
    if home:
        # Everything below resolves paths the same way, sandbox build caches included.
        os.environ["TRSI_HOME"] = str(Path(home).expanduser().resolve())
    if ctx.invoked_subcommand is None:
        from trsi_tui.app import create_app

        create_app(engine_of(ctx)).run()
