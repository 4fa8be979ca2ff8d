"""`--detach` on the commands that run long work (`pipeline run`, `eval`, `rsr run`, `rpr run`).

With `--detach` the command checks its options, then starts itself again as a runner job: a
process of its own, in a new session (closing this terminal ends nothing), output to a log file
under the data dir's logs/jobs/, and returns at once with the job id. The job's process finds its
id in its environment (`JOB_ENV`) and runs the command as usual inside `Engine.as_runner_job`:
registered with its pid, every event journaled for `trsi-tui jobs attach`, SIGTERM (`jobs stop`)
a clean stop, its outcome recorded.

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

import click
from click.core import ParameterSource

from engine.api import JOB_ENV, WorkBusy
from trsi_tui.cli.common import engine_of, failure, out
from trsi_tui.safe_text import markup

DETACH_HELP = (
    "Run in a background process of its own and return at once: it goes on when this terminal "
    "closes. Prints the job id; `trsi-tui jobs attach ID` follows it, `trsi-tui jobs stop ID` stops it."
)
# What work holds the data dir's work lock (one writer at a time): refused before it starts.
LOCKING_KINDS = ("pipeline", "rsr", "rpr")


@dataclass
class _Plan:
    kind: str
    headless: bool  # the command has --headless: the job gets it (it has no terminal for a TUI)
    asked: bool
    handled: bool = False


def detachable(kind: str, *, headless: bool = False):
    """Give a command `--detach` (see `detach_if_asked`) and, in a detached job's process, run
    it as that job."""

    def apply(command):
        @functools.wraps(command)
        def with_detach(*args, detach: bool, **kwargs):
            ctx = click.get_current_context()
            plan = ctx.meta["detach"] = _Plan(kind, headless, detach)
            job_id = os.environ.pop(JOB_ENV, None)  # the job's own children are no jobs
            if job_id is None:
                result = command(*args, **kwargs)
                if plan.asked and not plan.handled:  # `eval --detach compare A B`
                    sub = f"`{ctx.info_name} {ctx.invoked_subcommand}`" if ctx.invoked_subcommand else "this"
                    raise click.UsageError(f"--detach does not apply to {sub}, which runs at once")
                return result
            engine = engine_of(ctx)
            with engine.as_runner_job(job_id, kind, command_args(ctx)) as job:
                ctx.meta["runner_job"] = job
                return command(*args, **kwargs)

        return click.option("--detach", is_flag=True, help=DETACH_HELP)(with_detach)

    return apply


def detach_if_asked(ctx: click.Context) -> None:
    """With --detach: start this command as a runner job, say how to reach it, and end the command.
    Call it once the options are checked, before the work starts."""
    plan: _Plan = ctx.meta["detach"]
    if not plan.asked:
        return
    plan.handled = True
    engine = engine_of(ctx)
    if plan.kind in LOCKING_KINDS:
        try:
            engine.check_work_free()
        except WorkBusy as exc:
            raise failure(exc) from None
    extra = ["--headless"] if plan.headless and not ctx.params.get("headless") else []
    job = engine.start_runner_job(plan.kind, [sys.executable, "-m", "trsi_tui.cli"], command_args(ctx) + extra)
    home = ctx.find_root().obj.get("home")
    prefix = f"trsi-tui --home {shlex.quote(str(Path(home).expanduser().resolve()))}" if home else "trsi-tui"
    out.print(f"started job [bold]{job.id}[/] (process {job.pid}); it goes on when this terminal closes")
    out.print(f"  log:    {markup(str(engine.runner_job_log(job.id)))}")
    out.print(f"  follow: {markup(prefix)} jobs attach {job.id}")
    out.print(f"  stop:   {markup(prefix)} jobs stop {job.id}")
    out.print(f"  list:   {markup(prefix)} jobs list")
    ctx.exit(0)


def note_job(ctx: click.Context, detail: str) -> None:
    """What the runner job's record says when it ends (nothing when the command runs in a terminal)."""
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
