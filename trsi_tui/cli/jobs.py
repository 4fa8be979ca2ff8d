"""`trsi-tui jobs`: runs of `pipeline run`, `eval`, `rsr run` and `rpr run` (runner jobs: detached,
started from the TUI, or in the foreground of a terminal): list them, follow one, stop one, prune
the journals of old ones."""

from __future__ import annotations

import time
from dataclasses import asdict

import click
from rich.text import Text

from engine.api import RunnerJob, UnknownJob
from engine.events import Event, RunbookDrafted, SandboxOutput
from trsi_tui.cli.common import engine_of, err, failure, new_table, out, progress_printer, stage_printer, write_json
from trsi_tui.cli.group import cli
from trsi_tui.safe_text import markup, one_line

POLL_S = 0.2
STATUS_STYLES = {"running": "cyan", "done": "green", "failed": "red", "stopped": "yellow", "interrupted": "yellow"}


@cli.group("jobs", invoke_without_command=True)
@click.pass_context
def jobs(ctx: click.Context) -> None:
    """Runs of `pipeline run`, `eval`, `rsr run` and `rpr run`, wherever they run: in the foreground
    of a terminal, or in a background process of their own that goes on when its terminal closes
    (--detach, and work started from the TUI). Without a command: `jobs list`."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(jobs_list)


@jobs.command("list")
@click.option("--limit", type=int, default=20, show_default=True)
@click.option("--json", "json_path", metavar="FILE", default=None, help="Write the jobs as JSON.")
@click.pass_context
def jobs_list(ctx: click.Context, limit: int, json_path: str | None) -> None:
    """Jobs, newest first: status (running, done, failed, stopped, or interrupted when its
    process ended without saying how, as after SIGKILL), process, start and end, what it said last
    (while it runs: what it is doing now; "waiting for approval: N runbook(s)" when its RSR round
    waits for a person to decide runbooks in the TUI)."""
    engine = engine_of(ctx)
    found = engine.runner_jobs(limit)
    # A running job's detail: what it said (stopping), else what it is doing now, from its events
    # (its newest progress; an RSR round waiting for a person to decide runbooks says so).
    activity = {job.id: engine.runner_job_activity(job.id) for job in found if job.running}
    if not found:
        out.print("no jobs: pipeline run, eval, rsr run and rpr run are jobs (--detach runs one in the background)")
    else:
        table = new_table("jobs", "job", "kind", "status", "pid", "started", "ended", "detail", "command")
        for job in found:
            now = activity.get(job.id)
            waiting = bool(now and now.awaiting_approval)
            table.add_row(
                job.id,
                job.kind,
                Text(job.status + (" (waiting)" if waiting else ""), style=STATUS_STYLES.get(job.status, "")),
                str(job.pid or "-"),
                job.started_at,
                job.ended_at or "-",
                one_line(job.detail or (now.line if now else "")) or "-",
                " ".join(job.command),
            )
        out.print(table)
    rows = []
    for job in found:
        row = asdict(job)
        if job.id in activity:
            row |= {"doing": activity[job.id].doing, "awaiting_approval": activity[job.id].awaiting_approval}
        rows.append(row)
    write_json(json_path, {"jobs": rows})


def _job(ctx: click.Context, job_id: str) -> RunnerJob:
    try:
        return engine_of(ctx).runner_job(job_id)
    except UnknownJob as exc:
        raise failure(exc) from None


def _ended(job: RunnerJob) -> str:
    detail = f": {markup(one_line(job.detail))}" if job.detail else ""
    return f"job {job.id} [{STATUS_STYLES.get(job.status, '')}]{job.status}[/]{detail}"


@jobs.command("stop")
@click.argument("job_id", metavar="ID")
@click.option(
    "--timeout",
    type=click.FloatRange(0),
    default=60,
    show_default=True,
    help="Seconds to wait for the job's process to end.",
)
@click.pass_context
def jobs_stop(ctx: click.Context, job_id: str, timeout: float) -> None:
    """Stop a running job as ctrl+c would: its sandboxes are stopped, its finished episodes stay
    stored, and the same command resumes its work. Waits for its process to end and says how the
    job ended; exits 1 if it did not end within --timeout (it goes on stopping)."""
    engine = engine_of(ctx)
    job = _job(ctx, job_id)
    if not job.running:
        out.print(f"job {job.id} is not running ({job.status})")
        return
    engine.stop_runner_job(job.id)
    out.print(f"stopping {job.id} (waits for the running episodes to end)")
    ended = engine.wait_runner_job(job.id, timeout)
    if ended is None:
        raise click.ClickException(
            f"job {job.id} did not end within {timeout:g} s; it is still stopping (process {job.pid}). "
            f"`trsi-tui jobs list` shows when it has; `kill -9 {job.pid}` ends it at once "
            "(it then reads as interrupted, and its work resumes with the same command)"
        )
    out.print(_ended(ended))


@jobs.command("attach")
@click.argument("job_id", metavar="ID")
@click.option("--shell", is_flag=True, help="Also the sandboxes' shell output (commands and what they print).")
@click.pass_context
def jobs_attach(ctx: click.Context, job_id: str, shell: bool) -> None:
    """Follow a job: its progress lines as the command prints them headless, first those already
    stored, then new ones as they come, until the job ends. ctrl+c detaches and leaves the job
    running. Exits 0 when the job ended done, 1 otherwise."""
    engine = engine_of(ctx)
    job = _job(ctx, job_id)
    out.print(
        f"attached to job {job.id} ({job.kind}, {job.status}, process {job.pid}); ctrl+c detaches, the job goes on"
    )
    printers = [stage_printer(), progress_printer(), _runbook_line] + ([_shell_lines] if shell else [])
    tail = engine.runner_job_events(job.id)
    seen = 0
    try:
        while True:
            job = engine.runner_job(job.id)  # its status before its events: the last ones come before the end
            for entry in tail.poll():
                seen += 1
                for show in printers:
                    show(entry.event)
            if not job.running:
                break
            time.sleep(POLL_S)
    except KeyboardInterrupt:
        err.print(f"detached from job {job.id}; it goes on running (`trsi-tui jobs stop {job.id}` stops it)")
        return
    finally:
        tail.close()
    if not seen and not job.running:
        out.print(_no_events(engine, job))
    out.print(_ended(job))
    if job.status != "done":
        ctx.exit(1)


@jobs.command("prune")
@click.option(
    "--keep",
    type=click.IntRange(0),
    default=None,
    help="Finished jobs whose journals are kept, newest first (default: [jobs] keep_journals; 0 keeps all).",
)
@click.pass_context
def jobs_prune(ctx: click.Context, keep: int | None) -> None:
    """Delete the journaled events (progress, shell streams) of finished jobs older than the newest
    --keep. Running jobs and every job's row in `jobs list` stay; episodes, steps and results are
    stored apart and are never touched. A job does this by itself as it ends."""
    pruned = engine_of(ctx).prune_job_journals(keep)
    out.print(f"pruned the journals of {pruned.jobs} finished job(s): {pruned.events} event(s) deleted")


def _no_events(engine, job: RunnerJob) -> str:
    """Why a finished job shows no events: its journal was pruned, or it wrote none."""
    keep = engine.config.jobs.keep_journals
    newest = [j.id for j in engine.runner_jobs(keep + 100) if not j.running][:keep]
    if keep and job.id not in newest:
        return (
            f"no events are kept for this job: the journals of finished jobs older than the newest {keep}"
            " are pruned (\\[jobs] keep_journals)"
        )
    return "this job journaled no events"


def _runbook_line(event: Event) -> None:
    if isinstance(event, RunbookDrafted):
        out.print(f"  runbook {event.runbook_id} for {markup(event.task)}: {markup(event.status)}")


def _shell_lines(event: Event) -> None:
    if isinstance(event, SandboxOutput):
        prefix = f"[dim]{markup(event.episode_id)} {markup(event.channel)}[/]"
        for line in event.text.splitlines() or [""]:
            text = f"$ {markup(line)}" if event.kind == "command" else markup(line)
            out.print(f"{prefix} {text}", highlight=False)
