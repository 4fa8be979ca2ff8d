"""`trsi-tui rpr run`: one RPR stage (PPO), resumable."""

from __future__ import annotations

from dataclasses import asdict

import click

from engine.api import HARNESSES, RprRequest
from engine.events import Event, RprProgress
from trsi_tui.cli.common import new_table, out, write_json
from trsi_tui.cli.detach import detachable, note_job
from trsi_tui.cli.group import cli
from trsi_tui.cli.stage_command import AliasOption, StageOptions, run_stage, stage_options
from trsi_tui.safe_text import markup


# -- RPR ---------------------------------------------------------------------------------------
@cli.group()
def rpr() -> None:
    """Recursive Policy-Refine: PPO with actor and critic, the critic warmed up first."""


def _fmt(value) -> str:
    return "-" if value is None or value != value else f"{value:.3f}"


@rpr.command("run")
@click.option(
    "--number",
    "number",
    cls=AliasOption,
    type=click.IntRange(1, 1000),
    required=True,
    help="Stage number (RPR-N); the same number resumes a stopped stage.",
)
# The old name of --number, too easily read as --rounds (PPO rounds): hidden, kept for one release.
@click.option("--round", "number", cls=AliasOption, type=click.IntRange(1, 1000), hidden=True)
@click.option(
    "--model",
    "model_spec",
    metavar="SPEC",
    required=True,
    help="The actor to refine: bundled:NAME[+lora=FILE] (e.g. an RSR checkpoint) or hf:PATH[+adapter=DIR].",
)
@click.option(
    "--rounds",
    type=click.IntRange(0, 1000),
    default=None,
    help="Rounds in which actor and critic train together (default from config: 4).",
)
@click.option(
    "--critic-warmup",
    type=click.IntRange(0, 1000),
    default=None,
    help="Critic-only rounds first, actor frozen (default from config: 4; 0 skips the warm-up).",
)
@click.option(
    "--critic-from",
    metavar="DIR",
    default=None,
    help="Inherit the critic (adapter + value head) of an RPR checkpoint directory.",
)
@click.option(
    "--harness",
    type=click.Choice(sorted(HARNESSES)),
    default=None,
    help="Rollout harness (default from config: fenced-bash-primed).",
)
@stage_options("the report")
@detachable("rpr")
@click.pass_context
def rpr_run(
    ctx: click.Context,
    number: int,
    model_spec: str,
    rounds: int | None,
    critic_warmup: int | None,
    critic_from: str | None,
    harness: str | None,
    stage: StageOptions,
) -> None:
    """Run or resume one RPR stage: critic warm-up rounds, then joint PPO rounds.

    Every round collects fresh rollouts of the current actor, updates, and checkpoints both
    adapters, the value head, optimizer, scheduler and RNG state; a stopped stage resumes from
    its last checkpoint with the same command. Metrics (reward, KL, value loss, explained
    variance) go to the store and the TUI's curves.
    """
    request = RprRequest(
        number,
        model_spec,
        critic_from=critic_from,
        rounds=rounds,
        critic_warmup_rounds=critic_warmup,
        harness=harness,
        tasks=stage.tasks,
        backend=stage.backend,
        concurrency=stage.concurrency,
        seed=stage.seed,
    )

    def show(event: Event) -> None:
        if isinstance(event, RprProgress):
            out.print(f"[bold]rpr {event.round}[/] {markup(event.detail)}")

    stopped = f"RPR stage {number} stopped"
    report = run_stage(ctx, stage, lambda engine: engine.run_rpr(request), show=show, stopped=stopped)
    table = new_table(
        f"RPR stage {number}",
        "round",
        "phase",
        "reward",
        "success",
        "expected",
        "probe",
        "value loss",
        "expl. var.",
        "KL",
        "entropy",
    )
    for row in report.history:
        table.add_row(
            str(row["round"]),
            {1.0: "warm-up", 0.0: "joint"}.get(row.get("rpr/warmup"), "start"),
            _fmt(row.get("rpr/reward")),
            _fmt(row.get("rpr/success")),
            _fmt(row.get("rpr/expected_success")),
            _fmt(row.get("rpr/probe_success")),
            _fmt(row.get("ppo/value_loss")),
            _fmt(row.get("ppo/explained_variance")),
            _fmt(row.get("ppo/kl")),
            _fmt(row.get("ppo/entropy")),
        )
    out.print(table)
    out.print(f"actor: {markup(report.checkpoint or 'unchanged')}")
    note_job(ctx, f"actor {report.checkpoint or 'unchanged'}")
    out.print(f"trainer checkpoint (critic, value head, optimizer state): {markup(str(report.trainer_checkpoint))}")
    write_json(stage.json_path, {**asdict(report), "history": list(report.history)})
