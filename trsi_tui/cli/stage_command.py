"""What the stage commands (`rsr run`, `rpr run`) share: their common options, and running the
stage with its progress lines, clean errors and a resumable stop."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, TypeVar

import click

from engine.api import ClusterError, Engine, PolicyError, RprError, RsrError, WorkBusy
from engine.events import Event
from sandboxes import SandboxError
from trsi_tui.cli.common import TASKS_HELP, check_backend, cluster_option, engine_of, run_resumable
from trsi_tui.cli.detach import detach_if_asked

T = TypeVar("T")

# What a stage can fail with that the user can fix (a model spec, a backend, a cluster, a
# setting): a one-line error, not a traceback.
STAGE_ERRORS = (SandboxError, PolicyError, RsrError, RprError, ValueError, ClusterError, WorkBusy)


@dataclass(frozen=True)
class StageOptions:
    """The options every stage command takes (see `stage_options`)."""

    tasks: str | None
    backend: str | None
    concurrency: int | None
    seed: int
    json_path: str | None
    cluster: str | None


def stage_options(what: str):
    """Add the options every stage command takes (suite, backend, concurrency, seed, JSON report
    of `what`, cluster); the command receives them together, as its `stage` argument."""
    options = [
        click.option("--tasks", metavar="PATH", default=None, help=TASKS_HELP),
        click.option("--backend", default=None, help="Sandbox backend: local or docker (default from config)."),
        click.option("--concurrency", "-j", type=click.IntRange(1, 64), default=None, help="Episodes at once."),
        click.option("--seed", type=int, default=0, show_default=True),
        click.option("--json", "json_path", metavar="FILE", default=None, help=f"Write {what} as JSON."),
        cluster_option,
    ]

    def apply(command):
        @functools.wraps(command)
        def with_stage(*args, tasks, backend, concurrency, seed, json_path, cluster, **kwargs):
            stage = StageOptions(tasks, backend, concurrency, seed, json_path, cluster)
            return command(*args, stage=stage, **kwargs)

        for option in reversed(options):
            with_stage = option(with_stage)
        return with_stage

    return apply


def run_stage(
    ctx: click.Context, stage: StageOptions, work: Callable[[Engine], T], *, show: Callable[[Event], None], stopped: str
) -> T:
    """`work(engine)` on this invocation's engine (on the cluster `--cluster` names), printing its
    progress events with `show` (with --detach: started as a runner job instead). A known error
    ends the command with its message; ctrl+c stops the stage and says that `stopped` work resumes
    with the same command."""
    check_backend(stage.backend)
    detach_if_asked(ctx)
    engine = engine_of(ctx, stage.cluster)
    return run_resumable(engine, [show], lambda: work(engine), errors=STAGE_ERRORS, stopped=stopped)


class AliasOption(click.Option):
    """An option that shares its parameter with another (a new flag and its old, hidden name):
    when this one is not given, it keeps what the other one set instead of overwriting it, and a
    required one is satisfied by the other."""

    def process_value(self, ctx: click.Context, value):
        given = ctx.params.get(self.name)
        if self.value_is_missing(value) and given is not None and not self.value_is_missing(given):
            return given
        return super().process_value(ctx, value)
