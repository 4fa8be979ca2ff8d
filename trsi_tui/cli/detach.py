"""`--detach` on the commands that run long work (`pipeline run`, `eval`, `rsr run`, `rpr run`),
and those commands as runner jobs wherever they run.

With `--detach` the command checks its options, then starts itself again as a runner job: a
process of its own, in a new session (closing this terminal ends nothing), output to a log file
under the data dir's logs/jobs/, and returns at once with the job id. The job's process finds its
id in its environment (`JOB_ENV`) and runs the command as usual inside `Engine.as_runner_job`:
registered with its pid, every event journaled for `trsi-tui jobs attach` and the TUI, SIGTERM
(`jobs stop`) a clean stop, its outcome recorded.

Without `--detach` the command runs here, in the foreground of its terminal, and is a runner job
all the same (`Engine.as_runner_job` with a new id, from where its work starts): `jobs list` shows
it, `jobs attach` and a TUI on the same data dir follow it, `jobs stop` stops it. Only
`pipeline run` opening the TUI with the pipeline inside it is no job (the TUI shows its own work).

A command takes part in two places: `@detachable(kind)` under its `@cli.command` (the option, and
the job's side), and `detach_if_asked(ctx)` where its options are checked and its work would start.
"""

from __future__ import annotations

import functools
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from engine.api import JOB_ENV, RunnerJob, WorkBusy
from trsi_tui import background
from trsi_tui.cli.common import engine_of, err, failure, out
from trsi_tui.safe_text import markup

DETACH_HELP = (
    "Run in a background process of its own and return at once: it goes on when this terminal "
    "closes. Prints the job id; `trsi-tui jobs attach ID` follows it, `trsi-tui jobs stop ID` stops it."
)


@dataclass
class _Plan:
    kind: str
    headless: bool  # the command has --headless: the job gets it (it has no terminal for a TUI)
    asked: bool
    handled: bool = False
    job: Any = None  # the runner job this process runs as (`Engine.as_runner_job`), once it does


def detachable(kind: str, *, headless: bool = False):
    """Give a command `--detach` (see `detach_if_asked`) and run it as a runner job: from its first
    line in a detached job's process, from `detach_if_asked` on in the foreground."""

    def apply(command):
        @functools.wraps(command)
        def with_detach(*args, detach: bool, **kwargs):
            ctx = click.get_current_context()
            plan = ctx.meta["detach"] = _Plan(kind, headless, detach)
            job_id = os.environ.pop(JOB_ENV, None)  # the job's own children are no jobs
            if job_id is not None:  # an error in its options is how the job ended, too
                _run_as_job(ctx, plan, job_id)
            try:
                result = command(*args, **kwargs)
            except BaseException as exc:
                _job_ended(plan, exc)
                raise
            _job_ended(plan, None)
            if plan.asked and not plan.handled:  # `eval --detach compare A B`
                sub = f"`{ctx.info_name} {ctx.invoked_subcommand}`" if ctx.invoked_subcommand else "this"
                raise click.UsageError(f"--detach does not apply to {sub}, which runs at once")
            return result

        return click.option("--detach", is_flag=True, help=DETACH_HELP)(with_detach)

    return apply


def _run_as_job(ctx: click.Context, plan: _Plan, job_id: str | None) -> None:
    job = engine_of(ctx).as_runner_job(job_id, plan.kind, command_args(ctx))
    plan.job = ctx.meta["runner_job"] = job.__enter__()


def _job_ended(plan: _Plan, exc: BaseException | None) -> None:
    if plan.job is not None:
        plan.job.__exit__(type(exc) if exc else None, exc, exc.__traceback__ if exc else None)
        plan.job = None


def detach_if_asked(ctx: click.Context, *, journal: bool = True) -> None:
    """With --detach: start this command as a runner job, say how to reach it, and end the command.
    Without: the work runs here, as a runner job that other terminals can follow and stop (not
    with `journal=False`: `pipeline run` opening the TUI on its own work). Call it once the
    options are checked, before the work starts."""
    plan: _Plan = ctx.meta["detach"]
    if not plan.asked:
        if journal and plan.job is None:
            _check_work_free(ctx, plan.kind)
            _run_as_job(ctx, plan, None)
            if sys.stderr.isatty():
                reach = _reach(ctx, plan.job.id)
                err.print(f"[dim]job {plan.job.id}: {markup(reach)} from another terminal[/]", highlight=False)
        return
    plan.handled = True
    job = start_job(ctx)
    out.print(f"started job [bold]{job.id}[/] (process {job.pid}); it goes on when this terminal closes")
    out.print(f"  log:    {markup(str(engine_of(ctx).runner_job_log(job.id)))}")
    prefix = _prefix(ctx)
    out.print(f"  follow: {markup(prefix)} jobs attach {job.id}")
    out.print(f"  stop:   {markup(prefix)} jobs stop {job.id}")
    out.print(f"  list:   {markup(prefix)} jobs list")
    ctx.exit(0)


def start_job(ctx: click.Context) -> RunnerJob:
    """This command as a detached runner job (refused when another process holds the work lock the
    job would need), returned at once."""
    plan: _Plan = ctx.meta["detach"]
    extra = ["--headless"] if plan.headless and not ctx.params.get("headless") else []
    try:
        return background.start_job(engine_of(ctx), plan.kind, command_args(ctx) + extra)
    except WorkBusy as exc:
        raise failure(exc) from None


def _check_work_free(ctx: click.Context, kind: str) -> None:
    if kind in background.LOCKING_KINDS:
        try:
            engine_of(ctx).check_work_free()
        except WorkBusy as exc:
            raise failure(exc) from None


def _prefix(ctx: click.Context) -> str:
    home = ctx.find_root().obj.get("home")
    return f"trsi-tui --home {shlex.quote(str(Path(home).expanduser().resolve()))}" if home else "trsi-tui"


def _reach(ctx: click.Context, job_id: str) -> str:
    prefix = _prefix(ctx)
    return f"`{prefix} jobs attach {job_id}` follows it and `{prefix} jobs stop {job_id}` stops it"


def note_job(ctx: click.Context, detail: str) -> None:
    """What the runner job's record says when it ends (nothing when the command runs as no job)."""
    job = ctx.meta.get("runner_job")
    if job is not None:
        job.note(detail)


def command_args(ctx: click.Context) -> list[str]:
    """The trsi-tui arguments of this invocation, as given (defaults left out), without --detach:
    the command names, then each option the user set."""
    names, c = [], ctx
    while c.parent is not None:
        names.append(c.info_name)
        c = c.parent
    home = c.obj.get("home") if c.obj else None
    args = ["--home", str(Path(home).expanduser().resolve())] if home else []
    args += reversed(names)
    seen: set[str] = set()
    for param in ctx.command.params:
        if param.name in seen or param.name == "detach" or param.name not in ctx.params:
            continue
        if ctx.get_parameter_source(param.name) in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP):
            continue
        seen.add(param.name)
        value = ctx.params[param.name]
        if isinstance(param, click.Argument):
            args += [str(v) for v in value] if param.multiple or param.nargs != 1 else [str(value)]
            continue
        opt = next((o for o in param.opts if o.startswith("--")), param.opts[0])
        if isinstance(param, click.Option) and param.is_flag:
            if value:
                args.append(opt)
            elif param.secondary_opts:
                args.append(param.secondary_opts[0])
        elif param.multiple:
            for v in value:
                args += [opt, str(v)]
        else:
            args += [opt, str(value)]
    return args
