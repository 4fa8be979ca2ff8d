"""`trsi-tui eval`: run an agent on a suite, and compare two stored runs."""

from __future__ import annotations

import click

from engine.api import HARNESSES, SCRIPTED_AGENTS, ClusterError, PolicyError
from sandboxes import SandboxError
from trsi_tui.cli.common import (
    TASKS_HELP,
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
from trsi_tui.cli.detach import detach_if_asked, detachable, note_job
from trsi_tui.cli.group import cli
from trsi_tui.render import comparison_lines, summary_lines, task_row
from trsi_tui.safe_text import markup


# -- eval -------------------------------------------------------------------------------------
@cli.group("eval", invoke_without_command=True)
@click.option("--tasks", "tasks_path", metavar="PATH", default=None, help=TASKS_HELP)
@click.option(
    "--agent",
    type=click.Choice([*sorted(SCRIPTED_AGENTS), "model"]),
    default=None,
    help="oracle runs solution/solve.sh; nop does nothing; model lets --model act through --harness.",
)
@click.option(
    "--model",
    "model_spec",
    metavar="SPEC",
    default=None,
    help="With --agent model: bundled:smollm2-135m (the bundled SmolLM2-135M-Instruct) or gguf:PATH, "
    "each optionally +lora=FILE (a GGUF LoRA adapter, as `rsr run` exports), "
    "hf:PATH_OR_ID[+adapter=PATH][+4bit] (transformers), or openai:URL#MODEL "
    "(an OpenAI-compatible server).",
)
@click.option(
    "--harness",
    type=click.Choice(sorted(HARNESSES)),
    default=None,
    help="How the model is prompted and how its replies become commands "
    "(default from the config: [pipeline] eval_harness).",
)
@click.option(
    "--temperature",
    type=click.FloatRange(0.0, 5.0),
    default=None,
    help="Sampling temperature (default from the config: [eval] temperature).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Sampling seed (per attempt: seed*1000+attempt).")
@click.option(
    "--max-turns",
    type=click.IntRange(1, 200),
    default=None,
    help="Replies the model may give (default from the config: [eval] max_turns).",
)
@click.option(
    "--backend", default=None, help="Sandbox backend: local (bubblewrap) or docker (default from config: local)."
)
@click.option("--split", type=click.Choice(["train", "eval"]), default=None, help="Only this split.")
@click.option("--task", "only", metavar="NAME", multiple=True, help="Only this task (repeatable).")
@click.option(
    "--attempts", type=click.IntRange(1, 100), default=1, show_default=True, help="Episodes per task and seed."
)
@click.option(
    "--seeds",
    type=click.IntRange(1, 100),
    default=1,
    show_default=True,
    help="Sampling seeds per task (seed, seed+1, ...); pass@1 is the mean over attempts and seeds.",
)
@click.option("--concurrency", "-j", type=click.IntRange(1, 64), default=None, help="Episodes at once.")
@click.option(
    "--json",
    "json_path",
    metavar="FILE",
    default=None,
    help="Write {results: [...], summary: {success_rate, ...}} as JSON.",
)
@cluster_option
@detachable("eval")
@click.pass_context
def eval_cmd(
    ctx: click.Context,
    tasks_path: str | None,
    agent: str,
    model_spec: str | None,
    harness: str | None,
    temperature: float | None,
    seed: int,
    max_turns: int | None,
    backend: str | None,
    split: str | None,
    only: tuple[str, ...],
    attempts: int,
    seeds: int,
    concurrency: int | None,
    json_path: str | None,
    cluster: str | None,
) -> None:
    """Run an agent on every task in real sandboxes and report pass rates; all stored in SQLite.

    The summary gives pass@1 (tasks weigh equally) with a 95% task-bootstrap interval and the
    unbiased pass@k. `trsi-tui eval compare RUN_A RUN_B` compares two stored runs.
    """
    if ctx.invoked_subcommand is not None:
        return
    if agent is None:
        raise click.UsageError("Missing option '--agent' (oracle, nop or model).")
    check_backend(backend)
    detach_if_asked(ctx)
    engine = engine_of(ctx, cluster)
    unsubscribe = engine.bus.subscribe(progress_printer())
    try:
        report, suite = engine.evaluate(
            tasks_path,
            agent=agent,
            backend=backend,
            concurrency=concurrency,
            attempts=attempts,
            split=split,
            model=model_spec,
            harness=harness,
            temperature=temperature,
            seed=seed,
            seeds=seeds,
            max_turns=max_turns,
            only=only,
        )
    except (SandboxError, PolicyError, ValueError, ClusterError) as exc:
        raise failure(exc) from None
    finally:
        unsubscribe()
    passed = f"{report.summary['successes']}/{report.summary['scored']}"
    note_job(ctx, f"run {report.run_id}: {passed} scored episodes passed")
    for e in suite.errors:
        err.print(f"[red]skipped malformed task[/] {markup(str(e.path))}: {markup(e.reason)}")
    table = new_table(
        f"eval {agent} (run {report.run_id})",
        "task",
        "split",
        "status",
        "success",
        "failure",
        "checks",
        "reward",
        "time",
    )
    for r in report.results:
        table.add_row(
            r.task,
            r.split or "-",
            r.status,
            "yes" if r.success else "no",
            r.failure_mode or "-",  # tampered and verifier_isolation among them: a zero with its reason
            f"{r.checks_passed}/{r.checks_total}",
            "-" if r.reward is None else f"{r.reward:.2f}",
            f"{r.duration_s:.1f}s",
        )
    out.print(table)
    tasks = report.per_task()
    if any(t.episodes > 1 for t in tasks):
        table = new_table("per task", "task", "episodes", "successes", "pass@1", "infra errors")
        for t in tasks:
            table.add_row(*task_row(t))
        out.print(table)
    for line in summary_lines(report.summary):
        out.print(markup(line))
    write_json(json_path, report.to_json())


@eval_cmd.command("compare")
@click.argument("run_a")
@click.argument("run_b")
@click.pass_context
def eval_compare(ctx: click.Context, run_a: str, run_b: str) -> None:
    """Difference in pass@1 (RUN_B - RUN_A) on the tasks both runs share, with a paired 95% interval."""
    try:
        comparison = engine_of(ctx).compare_runs(run_a, run_b)
    except KeyError as exc:
        raise click.ClickException(f"no stored run {exc.args[0]!r} (see `trsi-tui runs`)") from None
    except ValueError as exc:
        raise failure(exc) from None
    for line in comparison_lines(comparison, run_a, run_b):
        out.print(markup(line))
