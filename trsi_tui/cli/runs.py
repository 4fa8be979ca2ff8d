"""`trsi-tui runs`, `export` and `config`: stored runs, exports, where things live."""

from __future__ import annotations

import json
from pathlib import Path

import click

from engine.api import DEFAULT_CONFIG_TOML, resolve_paths
from trsi_tui.cli.common import engine_of, new_table, out
from trsi_tui.cli.group import cli
from trsi_tui.render import RUN_COLUMNS, run_row


# -- export -----------------------------------------------------------------------------------
@cli.command("export")
@click.option("--run", "run_id", required=True, help="A stored run id (see `trsi-tui runs`).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "atif"]),
    default="jsonl",
    show_default=True,
    help="jsonl: one episode per line with messages, token ids, loss mask, checks, reward; "
    "atif: one ATIF-v1.4 trajectory per line.",
)
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def export_cmd(ctx: click.Context, run_id: str, fmt: str, file: Path) -> None:
    """Write a run's episodes to FILE for other tools."""
    try:
        written = engine_of(ctx).export_run(run_id, fmt, file)
    except KeyError:
        raise click.ClickException(f"no stored run {run_id!r} (see `trsi-tui runs`)") from None
    out.print(f"wrote {written} episodes to {file}")


# -- runs / config ----------------------------------------------------------------------------
@cli.command("runs")
@click.option("--limit", type=int, default=20, show_default=True)
@click.pass_context
def runs_cmd(ctx: click.Context, limit: int) -> None:
    """List stored runs, newest first."""
    table = new_table("runs", *RUN_COLUMNS)
    for r in engine_of(ctx).runs(limit):
        table.add_row(*run_row(r))
    out.print(table)


@cli.group()
def config() -> None:
    """Show or create the configuration file."""


@config.command("path")
@click.pass_context
def config_path(ctx: click.Context) -> None:
    """Print where the config file and the database live."""
    paths = resolve_paths(ctx.find_root().obj.get("home"))
    out.print(f"config   {paths.config_file}\ndatabase {paths.database}")


@config.command("show")
@click.pass_context
def config_show(ctx: click.Context) -> None:
    """Print the effective configuration as JSON."""
    out.print_json(json.dumps(engine_of(ctx).config.model_dump()))


@config.command("init")
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
@click.pass_context
def config_init(ctx: click.Context, force: bool) -> None:
    """Write a commented config file with the defaults."""
    paths = resolve_paths(ctx.find_root().obj.get("home")).ensure()
    if paths.config_file.exists() and not force:
        raise click.ClickException(f"{paths.config_file} exists (use --force to overwrite)")
    paths.config_file.write_text(DEFAULT_CONFIG_TOML)
    out.print(f"wrote {paths.config_file}")
