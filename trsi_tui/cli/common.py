"""What every command module shares: the consoles, the engine of this invocation, progress lines.

Task names, instructions, check names, failure reasons, verifier and agent output are untrusted
(a task folder or an agent wrote them): every table cell goes through `trsi_tui.safe_text`
(`SafeTable`), and every print or error that carries such text escapes it with `markup` or
`failure`, so no escape sequence or Rich markup from a task ever reaches the terminal.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from engine.api import ConfigError, Engine, StoreError
from engine.events import EpisodeFinished, Event, PipelineProgress, RprProgress, RsrProgress, RunStarted
from sandboxes import available_backends
from trsi_tui.safe_text import markup, plain, printable

# Piped output (CI logs, files) gets a wide console so tables are not cut to 80 columns.
# emoji=False: `:skull:` in a task's name is text, not a glyph.
out = Console(width=None if sys.stdout.isatty() else 160, emoji=False)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160, emoji=False)


TASKS_HELP = (
    "Task suite: a directory, or curriculum[:TRAIN,EVAL] (the curriculum's one-step and multi-step families, "
    "TRAIN and EVAL instances per family, held-out families in eval only, generated into the cache; default: "
    "the config's tasks, else the built-in suite)."
)


class SafeTable(Table):
    """A table whose string cells are untrusted text: shown as `printable` plain text, never read
    as markup. A cell meant to be styled is passed as a Rich Text."""

    def add_row(self, *renderables, **kwargs) -> None:
        super().add_row(*(plain(cell) if isinstance(cell, str) else cell for cell in renderables), **kwargs)


def new_table(title: str, *columns: str) -> SafeTable:
    result = SafeTable(title=markup(title))  # titles carry paths and names too
    for col in columns:
        result.add_column(col, overflow="fold")
    return result


def failure(message: object) -> click.ClickException:
    """A CLI error whose message (often an exception carrying task text) prints no escape sequence."""
    return click.ClickException(printable(str(message)))


HOME_HELP = "Keep config and data in DIR instead of the XDG dirs (also: TRSI_HOME)."


CLUSTER_HELP = (
    "Run the episodes on the Ray cluster at ADDRESS: auto (one started with `ray start`), "
    "ray://HOST:10001, or local (an in-process Ray). Default from the config's [cluster]; needs "
    "the ray extra (docs/cluster.md)."
)
cluster_option = click.option("--cluster", metavar="ADDRESS", default=None, help=CLUSTER_HELP)


def engine_of(ctx: click.Context, cluster: str | None = None) -> Engine:
    """The engine of this invocation; `cluster` (a --cluster ADDRESS) sends its episodes there."""
    obj = ctx.find_root().obj
    if obj.get("engine") is None:
        try:
            obj["engine"] = Engine.open(obj.get("home"))
        except (ConfigError, StoreError) as exc:
            raise failure(exc) from None
    if cluster:
        obj["engine"].use_cluster(cluster)
    return obj["engine"]


def check_backend(backend: str | None) -> None:
    if backend is not None and backend not in available_backends():
        raise click.BadParameter(
            f"{backend!r} is not available; available backends: {', '.join(available_backends())}",
            param_hint="--backend",
        )


def progress_printer():
    done = {"n": 0, "total": "?"}

    def on_event(event: Event) -> None:
        if isinstance(event, RunStarted):  # counts restart with every run (a pipeline runs many)
            done["n"], done["total"] = 0, str(event.total_episodes)
        elif isinstance(event, EpisodeFinished):
            r = event.result
            done["n"] += 1
            mark = "[green]PASS[/]" if r.success else ("[yellow]INFRA[/]" if not r.scored else "[red]FAIL[/]")
            reward = "-" if r.reward is None else f"{r.reward:.2f}"
            err.print(
                f"  {done['n']:>3}/{done['total']} {mark} {markup(r.task)} ({markup(r.agent)}) "
                f"{r.checks_passed}/{r.checks_total} reward={reward} {r.duration_s:.1f}s"
            )

    return on_event


def stage_printer():
    """The pipeline's progress lines: stages as they start, are evaluated and end; RSR and RPR steps."""

    def on_event(event: Event) -> None:
        if isinstance(event, PipelineProgress):
            out.print(f"[bold]{markup(event.stage)}[/] {markup(event.status)}: {markup(event.detail)}")
        elif isinstance(event, RsrProgress):
            out.print(f"  rsr {event.round} {markup(event.stage)}: {markup(event.detail)}")
        elif isinstance(event, RprProgress):
            out.print(f"  rpr {event.round} {markup(event.detail)}")

    return on_event


def run_resumable(engine: Engine, listeners: list, call, *, errors: tuple, stopped: str, hint: str = ""):
    """Run long engine work with progress listeners; known errors become clean CLI errors, and a
    stop (ctrl+c) cancels the work and says how to resume it."""
    unsubscribes = [engine.bus.subscribe(listener) for listener in listeners]
    try:
        return call()
    except errors as exc:
        raise failure(f"{exc}{hint}") from None
    except (KeyboardInterrupt, InterruptedError):
        engine.cancel()
        raise click.ClickException(f"{stopped}; run the same command to resume it") from None
    finally:
        for unsubscribe in unsubscribes:
            unsubscribe()


def write_json(path: str | None, payload: dict) -> None:
    if path:
        Path(path).write_text(json.dumps(payload, indent=2) + "\n")
        err.print(f"wrote {path}")
