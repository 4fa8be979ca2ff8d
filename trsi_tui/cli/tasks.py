"""`trsi-tui tasks`: list, check and import task suites."""

from __future__ import annotations

from pathlib import Path

import click
from rich.text import Text

from engine.api import FAMILIES, ClusterError, CurriculumError, generate_curriculum, import_tasks
from sandboxes import SandboxError
from trsi_tui.cli.common import (
    check_backend,
    cluster_option,
    engine_of,
    err,
    failure,
    new_table,
    out,
    progress_printer,
    write_json,
)
from trsi_tui.cli.group import cli
from trsi_tui.safe_text import markup, one_line


# -- tasks ------------------------------------------------------------------------------------
@cli.group()
def tasks() -> None:
    """Inspect and validate task suites (Harbor layout + environment/setup.sh)."""


@tasks.command("list")
@click.argument("path", required=False)
@click.pass_context
def tasks_list(ctx: click.Context, path: str | None) -> None:
    """List the tasks under PATH (default: the configured or built-in suite)."""
    suite = engine_of(ctx).load_suite(path)
    table = new_table(
        f"{len(suite.tasks)} tasks in {suite.root}",
        "task",
        "split",
        "difficulty",
        "category",
        "agent timeout",
        "instruction",
    )
    for t in suite.tasks:  # cells are made printable by the table
        table.add_row(
            t.name,
            t.split or "-",
            t.difficulty or "-",
            str(t.metadata.get("category", "-")),
            f"{t.agent_timeout_sec:g}s",
            one_line(t.instruction, 70),
        )
    out.print(table)
    for e in suite.errors:
        err.print(f"[red]malformed task[/] {markup(str(e.path))}: {markup(e.reason)}")
    ctx.exit(1 if suite.errors else 0)


@tasks.command("check")
@click.argument("paths", nargs=-1)
@click.option(
    "--backend", default=None, help="Sandbox backend: local (bubblewrap) or docker (default from config: local)."
)
@click.option("--concurrency", "-j", type=click.IntRange(1, 64), default=None, help="Episodes at once.")
@click.option("--json", "json_path", metavar="FILE", default=None, help="Write the results as JSON.")
@cluster_option
@click.pass_context
def tasks_check(
    ctx: click.Context,
    paths: tuple[str, ...],
    backend: str | None,
    concurrency: int | None,
    json_path: str | None,
    cluster: str | None,
) -> None:
    """Validate tasks: the oracle must pass every check, nop must not succeed.

    PATHS are task directories or suites (default: the configured or built-in suite).
    Exits 0 only if every task is valid.
    """
    check_backend(backend)
    engine = engine_of(ctx, cluster)
    unsubscribe = engine.bus.subscribe(progress_printer())
    try:
        run_id, checks = engine.check_tasks(list(paths), backend=backend, concurrency=concurrency)
    except (SandboxError, ClusterError) as exc:
        raise failure(exc) from None
    finally:
        unsubscribe()
    table = new_table(f"tasks check (run {run_id})", "task", "valid", "oracle", "nop", "reason")
    for c in checks:
        o = f"{c.oracle.checks_passed}/{c.oracle.checks_total}" if c.oracle else "-"
        n = f"{c.nop.checks_passed}/{c.nop.checks_total}" if c.nop else "-"
        table.add_row(c.task, Text("yes", style="green") if c.valid else Text("NO", style="red"), o, n, c.reason)
    out.print(table)
    valid = sum(c.valid for c in checks)
    out.print(f"{valid}/{len(checks)} tasks valid")
    write_json(
        json_path,
        {"run_id": run_id, "valid": valid == len(checks) and bool(checks), "tasks": [c.summary() for c in checks]},
    )
    ctx.exit(0 if checks and valid == len(checks) else 1)


@tasks.command("import")
@click.argument("src", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("dest", type=click.Path(file_okay=False, path_type=Path))
def tasks_import(src: Path, dest: Path) -> None:
    """Convert classic Terminal-Bench tasks (task.yaml) and copy Harbor tasks under SRC into
    DEST in the native layout, one directory per task. Existing tasks in DEST are not touched."""
    dest.mkdir(parents=True, exist_ok=True)
    done, errors = import_tasks(src, dest)
    table = new_table(f"imported {len(done)} tasks into {dest}", "task", "format", "from", "to")
    for t in done:
        table.add_row(t.name, t.format, str(t.source), str(t.dest))
    out.print(table)
    for path, reason in errors:
        err.print(f"[red]not imported[/] {markup(str(path))}: {markup(reason)}")
    if errors:
        raise SystemExit(1)


@tasks.command("generate")
@click.option(
    "--family",
    "families",
    multiple=True,
    default=("all",),
    show_default=True,
    help="A curriculum family (repeatable), or a group of them: all, one-step, multi-step, trained, heldout "
    "(held-out families are evaluated, never trained on). Families: " + ", ".join(FAMILIES) + ".",
)
@click.option("--instances", type=click.IntRange(1, 100_000), default=10, show_default=True, help="Per family.")
@click.option(
    "--split",
    type=click.Choice(["train", "eval"]),
    required=True,
    help="Which pool of names, words and numbers to draw from (train and eval never share one).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="The same seed writes the same tasks.")
@click.option(
    "--elsewhere",
    is_flag=True,
    help="Move each task's files out of /app, to a folder drawn from its name (/srv/W, /home/user/W, "
    "/opt/W/V, ...): the same tasks elsewhere, to measure how much of what a model learned is the "
    "curriculum's paths.",
)
@click.argument("dest", type=click.Path(file_okay=False, path_type=Path))
def tasks_generate(
    families: tuple[str, ...], instances: int, split: str, seed: int, elsewhere: bool, dest: Path
) -> None:
    """Write curriculum tasks into DEST/<split>/: one-step families (one command or one short
    pipeline) and multi-step ones (read something in the sandbox, then act on it).

    The families sit at the bundled model's frontier; instances are deterministic in (family,
    split, seed, index), each worded in one of several phrasings. Run `trsi-tui tasks check DEST`
    to validate them in sandboxes.
    """
    try:
        written = generate_curriculum(list(families), instances, split, seed, dest, elsewhere=elsewhere)
    except CurriculumError as exc:
        raise failure(exc) from None
    out.print(f"wrote {len(written)} tasks ({len(written) // instances} families x {instances}) to {dest / split}")
