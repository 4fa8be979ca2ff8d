"""`trsi-tui pipeline`: run the whole pipeline, and show its stage table."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.table import Table

from engine.api import (
    PIPELINE_STAGES,
    ConfigError,
    FamilyRow,
    PipelineRequest,
    PolicyError,
    RprError,
    RsrError,
    StageOverSeeds,
    StageRecord,
    load_config,
    load_preset,
)
from sandboxes import SandboxError
from trsi_tui.cli.common import (
    TASKS_HELP,
    check_backend,
    cluster_option,
    engine_of,
    failure,
    new_table,
    out,
    progress_printer,
    run_resumable,
    stage_printer,
    write_json,
)
from trsi_tui.cli.detach import detach_if_asked, detachable, start_job
from trsi_tui.cli.group import cli
from trsi_tui.render import SEED_COLUMNS, STAGE_COLUMNS, family_columns, family_row_cells, seed_rows, stage_rows


# -- pipeline ------------------------------------------------------------------------------------
@cli.group()
def pipeline() -> None:
    """The whole loop: Base -> RSR-1 -> RPR-1 -> RSR-2 -> RPR-2, evaluated after every stage."""


@pipeline.command("run")
@click.option(
    "--config",
    "config_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A config file for the whole pipeline (sections [rsr], [rpr], [pipeline], ...). Without it, the preset.",
)
@click.option(
    "--preset",
    type=click.Choice(["demo", "home"]),
    default="demo",
    show_default=True,
    help="The configuration used when --config is not given. demo (embedded): the bundled model on the "
    "generated curriculum (one-step and multi-step families: 208 train, 128 eval tasks), 3 turns per episode. "
    "home: the home's own config file (the defaults where there is none), as the TUI's P runs the pipeline.",
)
@click.option("--tasks", "tasks_path", metavar="PATH", default=None, help=TASKS_HELP)
@click.option("--backend", default=None, help="Sandbox backend: local or docker (default from the config).")
@click.option("--concurrency", "-j", type=click.IntRange(1, 64), default=None, help="Episodes at once.")
@click.option(
    "--headless",
    is_flag=True,
    help="Print progress lines instead of opening the TUI's dashboard (the default when stdout is not a terminal).",
)
@click.option(
    "--stop-after",
    type=click.Choice(["Base", "RSR-1", "RPR-1", "RSR-2", "RPR-2"]),
    default=None,
    help="Run up to this stage, then stop (run again without it to go on).",
)
@click.option(
    "--seeds",
    "seeds_text",
    metavar="SEEDS",
    default=None,
    help="Training seeds, like 0,1,2 or 0-2: the whole pipeline once per seed, each its own lineage "
    "of checkpoints, one after the other (default from the config: [pipeline] seeds, else seed).",
)
@click.option("--json", "json_path", metavar="FILE", default=None, help="Write the stage table as JSON.")
@cluster_option
@detachable("pipeline", headless=True)
@click.pass_context
def pipeline_run(
    ctx: click.Context,
    config_file: Path | None,
    preset: str,
    tasks_path: str | None,
    backend: str | None,
    concurrency: int | None,
    headless: bool,
    stop_after: str | None,
    seeds_text: str | None,
    json_path: str | None,
    cluster: str | None,
) -> None:
    """Run or resume the pipeline; each stage starts from the previous stage's checkpoint.

    The stage table (checkpoint, pass@1 with a 95% interval over the eval seeds, lineage) is
    kept in the store: stop it anywhere (s in the TUI, ctrl+c headless, `trsi-tui jobs stop ID`
    from any terminal) and run the same command again to resume without losing or repeating
    work. Opening the TUI, it runs as a background job the TUI attaches to (quitting the TUI
    leaves it running; `[tui] detach = false` runs it inside the TUI). With several training
    seeds, a second table gives each stage's mean pass@1 over seeds and its paired gain over its
    parent (same eval tasks and sampling seeds), both with 95% intervals.
    """
    check_backend(backend)
    engine = engine_of(ctx)
    try:
        if config_file or preset != "home":  # home: the config the engine opened with
            chosen = load_config(config_file) if config_file else load_preset(preset)
            engine.use_config(chosen, keep_tui=True)  # the home's keymap stays
        seeds = engine.training_seeds(seeds_text)
        if cluster:
            engine.use_cluster(cluster)
    except (ConfigError, ValueError) as exc:
        raise failure(exc) from None
    request = PipelineRequest(
        tasks=tasks_path, backend=backend, concurrency=concurrency, stop_after=stop_after, seeds=tuple(seeds)
    )
    tui = not headless and sys.stdout.isatty() and sys.stdin.isatty()
    detach_if_asked(ctx, journal=not tui)
    if tui:
        from trsi_tui.app import create_app

        if engine.config.tui.detach:  # the TUI attaches to it: quitting the TUI leaves it running
            create_app(engine, follow_job=start_job(ctx)).run()
        else:
            create_app(engine, start_pipeline=request).run()
        return

    lineages = run_resumable(
        engine,
        [stage_printer(), progress_printer()],
        lambda: engine.run_pipeline(request),
        errors=(SandboxError, PolicyError, RsrError, RprError, ValueError, RuntimeError),
        stopped="pipeline stopped",
        hint="\nfix it and run the same command to resume",
    )
    for seed, stages in lineages.items():
        out.print(stage_table(stages, f"Pipeline, training seed {seed}" if len(lineages) > 1 else "Pipeline"))
    summary = engine.over_seeds(list(lineages))
    if summary:
        out.print(seed_table(summary))
    write_json(json_path, pipeline_json(lineages, summary))


@pipeline.command("status")
@click.option("--json", "json_path", metavar="FILE", default=None, help="Write the stage table as JSON.")
@click.option(
    "--families",
    is_flag=True,
    help="Also the stage table per curriculum tier (one-step, multi-step, held-out families) and per "
    "family (eval pass@1 per stage, RSR exploration's successes); with --json, under by_tier and by_family.",
)
@click.pass_context
def pipeline_status(ctx: click.Context, json_path: str | None, families: bool) -> None:
    """The stored stage table: status, checkpoint, pass@1 with its 95% interval; with several
    training seeds, one table per seed and each stage's mean over seeds and gain over its parent."""
    engine = engine_of(ctx)
    lineages = engine.stored_lineages()
    for seed, stages in lineages.items():
        out.print(stage_table(stages, f"Pipeline, training seed {seed}" if len(lineages) > 1 else "Pipeline"))
    summary = engine.over_seeds(list(lineages))
    if summary:
        out.print(seed_table(summary))
    data = pipeline_json(lineages, summary)
    if families:
        from dataclasses import asdict

        tiers, rows = engine.by_tier(list(lineages)), engine.by_family(list(lineages))
        for tier, table_rows in tiers.items():
            done = [r for r in table_rows if r.seeds]  # a stage no seed has finished says nothing yet
            out.print(seed_table(done, f"Tier {tier} (paired: same eval tasks and sampling seeds)"))
        out.print(family_table(rows))
        data = {**data, "by_tier": {t: [asdict(r) for r in rs] for t, rs in tiers.items()}}
        data["by_family"] = [asdict(r) for r in rows]
    write_json(json_path, data)


def pipeline_json(lineages: dict[int, dict[str, StageRecord]], summary: list[StageOverSeeds]) -> dict:
    """One seed: {stage: record} as before; several: {"seeds": {seed: {stage: record}}, "over_seeds": [...]}."""
    from dataclasses import asdict

    if len(lineages) == 1:
        return {name: asdict(rec) for name, rec in next(iter(lineages.values())).items()}
    return {
        "seeds": {str(seed): {name: asdict(rec) for name, rec in stages.items()} for seed, stages in lineages.items()},
        "over_seeds": [asdict(row) for row in summary],
    }


def stage_table(stages: dict[str, StageRecord], title: str = "Pipeline") -> Table:
    table = new_table(title, *STAGE_COLUMNS)
    for row in stage_rows(stages):
        table.add_row(*row)
    return table


def seed_table(
    summary: list[StageOverSeeds], title: str = "Over training seeds (paired: same eval tasks and sampling seeds)"
) -> Table:
    table = new_table(title, *SEED_COLUMNS)
    for row in seed_rows(summary):
        table.add_row(*row)
    return table


def family_table(rows: list[FamilyRow]) -> Table:
    stages = [s for s in PIPELINE_STAGES if any(s in r.stages for r in rows)]
    table = new_table("By family: eval pass@1 over seeds (successes/episodes)", *family_columns(stages))
    for row in rows:
        table.add_row(*family_row_cells(row, stages))
    return table
