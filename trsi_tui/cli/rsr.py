"""`trsi-tui rsr run`: one RSR round, resumable."""

from __future__ import annotations

from dataclasses import asdict

import click

from engine.api import HARNESSES, RsrRequest
from engine.events import Event, RsrProgress, RunbookDrafted
from trsi_tui.cli.common import new_table, out, write_json
from trsi_tui.cli.detach import detachable, note_job
from trsi_tui.cli.group import cli
from trsi_tui.cli.stage_command import StageOptions, run_stage, stage_options
from trsi_tui.safe_text import markup


# -- rsr --------------------------------------------------------------------------------------
@cli.group()
def rsr() -> None:
    """Recursive Self-Rewrite: train the actor on its own verified, leak-checked successes."""


@rsr.command("run")
@click.option(
    "--round",
    "round_",
    type=click.IntRange(1, 1000),
    required=True,
    help="Round number; running a round again resumes it where it stopped.",
)
@click.option(
    "--model",
    "model_spec",
    metavar="SPEC",
    required=True,
    help="The actor: bundled:smollm2-135m[+lora=FILE] or hf:PATH[+adapter=DIR] (SFT needs "
    "transformers weights; see `eval --help` for every spec).",
)
@click.option(
    "--approval",
    type=click.Choice(["auto", "manual"]),
    default=None,
    help="auto: approve what the leak scan and the reviewer both pass; manual: wait for a person "
    "to decide each draft in the TUI's Runbooks screen (default from config: auto).",
)
@click.option(
    "--attempts",
    type=click.IntRange(1, 64),
    default=None,
    help="Explore attempts per task and harness (default from config: 6).",
)
@click.option(
    "--harness",
    "harnesses",
    multiple=True,
    type=click.Choice(sorted(HARNESSES)),
    help="Explore harness (repeatable; default from config: fenced-bash-primed).",
)
@click.option("--split", default=None, help="Task split to explore (default from config: train).")
@stage_options("the round's report")
@detachable("rsr")
@click.pass_context
def rsr_run(
    ctx: click.Context,
    round_: int,
    model_spec: str,
    approval: str | None,
    attempts: int | None,
    harnesses: tuple[str, ...],
    split: str | None,
    stage: StageOptions,
) -> None:
    """Run or resume one RSR round: explore -> runbooks -> review -> approval -> replay -> dataset -> SFT.

    Every artifact is stored in SQLite as it is made, so a round stopped at any point resumes
    with the same command. The checkpoint is a LoRA adapter (transformers) plus its GGUF export,
    printed as a model spec that `eval --agent model --model SPEC` takes.
    """
    request = RsrRequest(
        round_,
        model_spec,
        tasks=stage.tasks,
        approval=approval,
        attempts=attempts,
        backend=stage.backend,
        concurrency=stage.concurrency,
        seed=stage.seed,
        harnesses=harnesses,
        split=split,
    )

    def show(event: Event) -> None:
        if isinstance(event, RsrProgress):
            out.print(f"[bold]rsr {event.round} {markup(event.stage)}[/]: {markup(event.detail)}")
        elif isinstance(event, RunbookDrafted):
            out.print(f"  runbook {event.runbook_id} for {markup(event.task)}: {markup(event.status)}")

    report = run_stage(ctx, stage, lambda engine: engine.run_rsr(request), show=show, stopped=f"round {round_} stopped")
    table = new_table(
        f"RSR round {round_}", "explored", "passed", "runbooks", "replays", "replays passed", "samples", "checkpoint"
    )
    table.add_row(
        str(report.explored),
        str(report.successes),
        ", ".join(f"{v} {k}" for k, v in report.runbooks.items()) or "0",
        str(report.replays),
        str(report.replay_successes),
        str(report.samples),
        report.checkpoint or "none",
    )
    out.print(table)
    note_job(ctx, f"checkpoint {report.checkpoint or 'none'}")
    out.print("funnel: " + " -> ".join(f"{n} {step}" for step, n in report.funnel.items()))
    for note in report.notes:
        out.print(f"note: {markup(note)}")
    write_json(stage.json_path, {**asdict(report), "notes": list(report.notes)})
