"""The `trsi-tui` command: no subcommand opens the TUI; subcommands run headless."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from engine.api import Engine
from engine.config import DEFAULT_CONFIG_TOML, ConfigError
from engine.events import EpisodeFinished, Event, RunStarted
from engine.paths import resolve_paths
from engine.rollout.agents import SCRIPTED_AGENTS
from engine.rollout.harnesses import HARNESSES
from engine.store import StoreError
from sandboxes import SandboxError, available_backends

# Piped output (CI logs, files) gets a wide console so tables are not cut to 80 columns.
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title)
    for col in columns:
        table.add_column(col, overflow="fold")
    return table

HOME_HELP = "Keep config and data in DIR instead of the XDG dirs (also: TRSI_HOME)."


def _engine(ctx: click.Context) -> Engine:
    obj = ctx.find_root().obj
    if obj.get("engine") is None:
        try:
            obj["engine"] = Engine.open(obj.get("home"))
        except (ConfigError, StoreError) as exc:
            raise click.ClickException(str(exc)) from None
    return obj["engine"]


def _check_backend(backend: str | None) -> None:
    if backend is not None and backend not in available_backends():
        raise click.BadParameter(
            f"{backend!r} is not available; available backends: {', '.join(available_backends())}",
            param_hint="--backend",
        )


def _progress():
    done = {"n": 0, "total": "?"}

    def on_event(event: Event) -> None:
        if isinstance(event, RunStarted):  # counts restart with every run (a pipeline runs many)
            done["n"], done["total"] = 0, str(event.total_episodes)
        elif isinstance(event, EpisodeFinished):
            r = event.result
            done["n"] += 1
            mark = "[green]PASS[/]" if r.success else ("[yellow]INFRA[/]" if not r.scored else "[red]FAIL[/]")
            reward = "-" if r.reward is None else f"{r.reward:.2f}"
            err.print(f"  {done['n']:>3}/{done['total']} {mark} {r.task} ({r.agent}) "
                      f"{r.checks_passed}/{r.checks_total} reward={reward} {r.duration_s:.1f}s")

    return on_event


def _run_resumable(engine: Engine, listeners: list, call, *, errors: tuple, stopped: str, hint: str = ""):
    """Run long engine work with progress listeners; known errors become clean CLI errors, and a
    stop (ctrl+c) cancels the work and says how to resume it."""
    unsubscribes = [engine.bus.subscribe(listener) for listener in listeners]
    try:
        return call()
    except errors as exc:
        raise click.ClickException(f"{exc}{hint}") from None
    except (KeyboardInterrupt, InterruptedError):
        engine.cancel()
        raise click.ClickException(f"{stopped}; run the same command to resume it") from None
    finally:
        for unsubscribe in unsubscribes:
            unsubscribe()


def _write_json(path: str | None, payload: dict) -> None:
    if path:
        Path(path).write_text(json.dumps(payload, indent=2) + "\n")
        err.print(f"wrote {path}")


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", metavar="DIR", default=None, help=HOME_HELP)
@click.version_option(package_name="trsi-tui")
@click.pass_context
def cli(ctx: click.Context, home: str | None) -> None:
    """trsi-tui: train terminal agents by recursive self-improvement.

    Run without a command to open the workstation TUI. Commands run headless.
    """
    ctx.ensure_object(dict)
    ctx.obj["home"] = home
    if home:
        # Everything below resolves paths the same way, sandbox build caches included.
        os.environ["TRSI_HOME"] = str(Path(home).expanduser().resolve())
    if ctx.invoked_subcommand is None:
        from trsi_tui.app import create_app

        create_app(_engine(ctx)).run()


# -- tasks ------------------------------------------------------------------------------------
@cli.group()
def tasks() -> None:
    """Inspect and validate task suites (Harbor layout + environment/setup.sh)."""


@tasks.command("list")
@click.argument("path", required=False)
@click.pass_context
def tasks_list(ctx: click.Context, path: str | None) -> None:
    """List the tasks under PATH (default: the configured or built-in suite)."""
    suite = _engine(ctx).load_suite(path)
    table = _table(f"{len(suite.tasks)} tasks in {suite.root}",
                   "task", "split", "difficulty", "category", "agent timeout", "instruction")
    for t in suite.tasks:
        first = t.instruction.splitlines()[0]
        table.add_row(t.name, t.split or "-", t.difficulty or "-", str(t.metadata.get("category", "-")),
                      f"{t.agent_timeout_sec:g}s", first[:70] + ("..." if len(first) > 70 else ""))
    out.print(table)
    for e in suite.errors:
        err.print(f"[red]malformed task[/] {e.path}: {e.reason}")
    ctx.exit(1 if suite.errors else 0)


@tasks.command("check")
@click.argument("paths", nargs=-1)
@click.option("--backend", default=None, help="Sandbox backend: local (bubblewrap) or docker (default from config: local).")
@click.option("--concurrency", "-j", type=click.IntRange(1, 64), default=None, help="Episodes at once.")
@click.option("--json", "json_path", metavar="FILE", default=None, help="Write the results as JSON.")
@click.pass_context
def tasks_check(ctx: click.Context, paths: tuple[str, ...], backend: str | None, concurrency: int | None,
                json_path: str | None) -> None:
    """Validate tasks: the oracle must pass every check, nop must not succeed.

    PATHS are task directories or suites (default: the configured or built-in suite).
    Exits 0 only if every task is valid.
    """
    _check_backend(backend)
    engine = _engine(ctx)
    unsubscribe = engine.bus.subscribe(_progress())
    try:
        run_id, checks = engine.check_tasks(list(paths), backend=backend, concurrency=concurrency)
    except SandboxError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        unsubscribe()
    table = _table(f"tasks check (run {run_id})", "task", "valid", "oracle", "nop", "reason")
    for c in checks:
        o = f"{c.oracle.checks_passed}/{c.oracle.checks_total}" if c.oracle else "-"
        n = f"{c.nop.checks_passed}/{c.nop.checks_total}" if c.nop else "-"
        table.add_row(c.task, "[green]yes[/]" if c.valid else "[red]NO[/]", o, n, c.reason)
    out.print(table)
    valid = sum(c.valid for c in checks)
    out.print(f"{valid}/{len(checks)} tasks valid")
    _write_json(json_path, {"run_id": run_id, "valid": valid == len(checks) and bool(checks),
                            "tasks": [c.summary() for c in checks]})
    ctx.exit(0 if checks and valid == len(checks) else 1)


@tasks.command("import")
@click.argument("src", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("dest", type=click.Path(file_okay=False, path_type=Path))
def tasks_import(src: Path, dest: Path) -> None:
    """Convert classic Terminal-Bench tasks (task.yaml) and copy Harbor tasks under SRC into
    DEST in the native layout, one directory per task. Existing tasks in DEST are not touched."""
    from engine.tasks.importer import import_tasks

    dest.mkdir(parents=True, exist_ok=True)
    done, errors = import_tasks(src, dest)
    table = _table(f"imported {len(done)} tasks into {dest}", "task", "format", "from", "to")
    for t in done:
        table.add_row(t.name, t.format, str(t.source), str(t.dest))
    out.print(table)
    for path, reason in errors:
        err.print(f"[red]not imported[/] {path}: {reason}")
    if errors:
        raise SystemExit(1)


# -- eval -------------------------------------------------------------------------------------
@cli.group("eval", invoke_without_command=True)
@click.option("--tasks", "tasks_path", metavar="PATH", default=None, help="Task suite (default: built-in).")
@click.option("--agent", type=click.Choice([*sorted(SCRIPTED_AGENTS), "model"]), default=None,
              help="oracle runs solution/solve.sh; nop does nothing; model lets --model act through --harness.")
@click.option("--model", "model_spec", metavar="SPEC", default=None,
              help="With --agent model: bundled:smollm2-135m (the bundled SmolLM2-135M-Instruct) or gguf:PATH, "
                   "each optionally +lora=FILE (a GGUF LoRA adapter, as `rsr run` exports), "
                   "hf:PATH_OR_ID[+adapter=PATH][+4bit] (transformers), or openai:URL#MODEL "
                   "(an OpenAI-compatible server).")
@click.option("--harness", type=click.Choice(sorted(HARNESSES)), default="xml-bash",
              show_default=True, help="How the model is prompted and how its replies become commands.")
@click.option("--temperature", type=click.FloatRange(0.0, 5.0), default=0.7, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="Sampling seed (per attempt: seed*1000+attempt).")
@click.option("--max-turns", type=click.IntRange(1, 200), default=20, show_default=True)
@click.option("--backend", default=None, help="Sandbox backend: local (bubblewrap) or docker (default from config: local).")
@click.option("--split", type=click.Choice(["train", "eval"]), default=None, help="Only this split.")
@click.option("--task", "only", metavar="NAME", multiple=True, help="Only this task (repeatable).")
@click.option("--attempts", type=click.IntRange(1, 100), default=1, show_default=True,
              help="Episodes per task and seed.")
@click.option("--seeds", type=click.IntRange(1, 100), default=1, show_default=True,
              help="Sampling seeds per task (seed, seed+1, ...); pass@1 is the mean over attempts and seeds.")
@click.option("--concurrency", "-j", type=click.IntRange(1, 64), default=None, help="Episodes at once.")
@click.option("--json", "json_path", metavar="FILE", default=None,
              help="Write {results: [...], summary: {success_rate, ...}} as JSON.")
@click.pass_context
def eval_cmd(ctx: click.Context, tasks_path: str | None, agent: str, model_spec: str | None, harness: str,
             temperature: float, seed: int, max_turns: int, backend: str | None, split: str | None,
             only: tuple[str, ...], attempts: int, seeds: int, concurrency: int | None,
             json_path: str | None) -> None:
    """Run an agent on every task in real sandboxes and report pass rates; all stored in SQLite.

    The summary gives pass@1 (tasks weigh equally) with a 95% task-bootstrap interval and the
    unbiased pass@k. `trsi-tui eval compare RUN_A RUN_B` compares two stored runs.
    """
    from engine.policy import PolicyError

    if ctx.invoked_subcommand is not None:
        return
    if agent is None:
        raise click.UsageError("Missing option '--agent' (oracle, nop or model).")
    _check_backend(backend)
    engine = _engine(ctx)
    unsubscribe = engine.bus.subscribe(_progress())
    try:
        report, suite = engine.evaluate(tasks_path, agent=agent, backend=backend, concurrency=concurrency,
                                        attempts=attempts, split=split, model=model_spec, harness=harness,
                                        temperature=temperature, seed=seed, seeds=seeds, max_turns=max_turns,
                                        only=only)
    except (SandboxError, PolicyError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        unsubscribe()
    for e in suite.errors:
        err.print(f"[red]skipped malformed task[/] {e.path}: {e.reason}")
    table = _table(f"eval {agent} (run {report.run_id})",
                   "task", "split", "status", "success", "checks", "reward", "time")
    for r in report.results:
        table.add_row(r.task, r.split or "-", r.status, "yes" if r.success else "no",
                      f"{r.checks_passed}/{r.checks_total}", "-" if r.reward is None else f"{r.reward:.2f}",
                      f"{r.duration_s:.1f}s")
    out.print(table)
    by_task: dict[str, list] = {}
    for r in report.results:
        by_task.setdefault(r.task, []).append(r)
    if any(len(v) > 1 for v in by_task.values()):
        per_task = _table("per task", "task", "episodes", "successes", "pass@1", "infra errors")
        for task, eps in by_task.items():
            scored = [e for e in eps if e.scored]
            rate = "-" if not scored else f"{sum(e.success for e in scored) / len(scored):.2f}"
            per_task.add_row(task, str(len(eps)), str(sum(e.success for e in eps)), rate,
                             str(len(eps) - len(scored)))
        out.print(per_task)
    s = report.summary
    rate = "n/a" if s["success_rate"] is None else f"{s['success_rate']:.1%}"
    out.print(f"success rate {rate} ({s['successes']}/{s['scored']} scored episodes; "
              f"{s['infra_errors']} infrastructure errors)")
    if s["pass_at_1"] is not None:
        lo, hi = s["ci95"]
        ks = ", ".join(f"pass@{k} {v:.3f}" for k, v in s["pass_at_k"].items())
        out.print(f"pass@1 {s['pass_at_1']:.3f} (95% CI {lo:.3f}-{hi:.3f}, task bootstrap); {ks}")
    _write_json(json_path, report.to_json())


@eval_cmd.command("compare")
@click.argument("run_a")
@click.argument("run_b")
@click.pass_context
def eval_compare(ctx: click.Context, run_a: str, run_b: str) -> None:
    """Difference in pass@1 (RUN_B - RUN_A) on the tasks both runs share, with a paired 95% interval."""
    from engine.stats import by_task, compare, pass_at_1

    store = _engine(ctx).store
    groups = []
    for run_id in (run_a, run_b):
        try:
            store.runs.get(run_id)
        except KeyError:
            raise click.ClickException(f"no stored run {run_id!r} (see `trsi-tui runs`)") from None
        groups.append(by_task((e.task, e.success) for e in store.runs.episodes(run_id) if e.reward is not None))
    try:
        diff = compare(*groups)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    shared = sorted(set(groups[0]) & set(groups[1]))
    a = pass_at_1({t: groups[0][t] for t in shared})
    b = pass_at_1({t: groups[1][t] for t in shared})
    out.print(f"{len(shared)} shared tasks: pass@1 {a:.3f} ({run_a}) -> {b:.3f} ({run_b})")
    out.print(f"difference {diff.estimate:+.3f} (95% CI {diff.low:+.3f} to {diff.high:+.3f}, paired task bootstrap)")


# -- rsr --------------------------------------------------------------------------------------
@cli.group()
def rsr() -> None:
    """Recursive Self-Rewrite: train the actor on its own verified, leak-checked successes."""


@rsr.command("run")
@click.option("--round", "round_", type=click.IntRange(1, 1000), required=True,
              help="Round number; running a round again resumes it where it stopped.")
@click.option("--model", "model_spec", metavar="SPEC", required=True,
              help="The actor: bundled:smollm2-135m[+lora=FILE] or hf:PATH[+adapter=DIR] (SFT needs "
                   "transformers weights; see `eval --help` for every spec).")
@click.option("--tasks", "tasks_path", metavar="PATH", default=None, help="Task suite (default: built-in).")
@click.option("--approval", type=click.Choice(["auto", "manual"]), default=None,
              help="auto: approve what the leak scan and the reviewer both pass; manual: wait for a person "
                   "to decide each draft in the TUI's Runbooks screen (default from config: auto).")
@click.option("--attempts", type=click.IntRange(1, 64), default=None,
              help="Explore attempts per task and harness (default from config: 4).")
@click.option("--harness", "harnesses", multiple=True,
              type=click.Choice(sorted(HARNESSES)),
              help="Explore harness (repeatable; default from config: xml-bash and terminus-json).")
@click.option("--split", default=None, help="Task split to explore (default from config: train).")
@click.option("--backend", default=None, help="Sandbox backend: local or docker (default from config).")
@click.option("--concurrency", "-j", type=click.IntRange(1, 64), default=None, help="Episodes at once.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "json_path", metavar="FILE", default=None, help="Write the round's report as JSON.")
@click.pass_context
def rsr_run(ctx: click.Context, round_: int, model_spec: str, tasks_path: str | None, approval: str | None,
            attempts: int | None, harnesses: tuple[str, ...], split: str | None, backend: str | None,
            concurrency: int | None, seed: int, json_path: str | None) -> None:
    """Run or resume one RSR round: explore -> runbooks -> review -> approval -> replay -> dataset -> SFT.

    Every artifact is stored in SQLite as it is made, so a round stopped at any point resumes
    with the same command. The checkpoint is a LoRA adapter (transformers) plus its GGUF export,
    printed as a model spec that `eval --agent model --model SPEC` takes.
    """
    from dataclasses import asdict

    from engine.events import RsrProgress, RunbookDrafted
    from engine.policy import PolicyError
    from engine.rsr.round import RsrError

    _check_backend(backend)
    engine = _engine(ctx)

    def show(event) -> None:
        if isinstance(event, RsrProgress):
            out.print(f"[bold]rsr {event.round} {event.stage}[/]: {event.detail}")
        elif isinstance(event, RunbookDrafted):
            out.print(f"  runbook {event.runbook_id} for {event.task}: {event.status}")

    report = _run_resumable(
        engine, [show], lambda: engine.rsr_round(round_, model=model_spec, tasks=tasks_path, backend=backend,
                                                 concurrency=concurrency, seed=seed, approval=approval,
                                                 attempts=attempts, harnesses=list(harnesses) or None, split=split),
        errors=(SandboxError, PolicyError, RsrError, ValueError), stopped=f"round {round_} stopped")
    table = _table(f"RSR round {round_}", "explored", "passed", "runbooks", "replays", "replays passed",
                   "samples", "checkpoint")
    table.add_row(str(report.explored), str(report.successes),
                  ", ".join(f"{v} {k}" for k, v in report.runbooks.items()) or "0", str(report.replays),
                  str(report.replay_successes), str(report.samples), report.checkpoint or "none")
    out.print(table)
    for note in report.notes:
        out.print(f"note: {note}")
    _write_json(json_path, {**asdict(report), "notes": list(report.notes)})


# -- RPR ---------------------------------------------------------------------------------------
@cli.group()
def rpr() -> None:
    """Recursive Policy-Refine: PPO with actor and critic, the critic warmed up first."""


def _fmt(value) -> str:
    return "-" if value is None or value != value else f"{value:.3f}"


@rpr.command("run")
@click.option("--round", "round_", type=click.IntRange(1, 1000), required=True,
              help="Stage number; the same number resumes a stopped stage.")
@click.option("--model", "model_spec", metavar="SPEC", required=True,
              help="The actor to refine: bundled:NAME[+lora=FILE] (e.g. an RSR checkpoint) or hf:PATH[+adapter=DIR].")
@click.option("--tasks", "tasks_path", metavar="PATH", default=None, help="Task suite (default: built-in).")
@click.option("--rounds", type=click.IntRange(0, 1000), default=None,
              help="Rounds in which actor and critic train together (default from config: 4).")
@click.option("--critic-warmup", type=click.IntRange(0, 1000), default=None,
              help="Critic-only rounds first, actor frozen (default from config: 4; 0 skips the warm-up).")
@click.option("--critic-from", metavar="DIR", default=None,
              help="Inherit the critic (adapter + value head) of an RPR checkpoint directory.")
@click.option("--harness", type=click.Choice(sorted(HARNESSES)), default=None,
              help="Rollout harness (default from config: xml-bash).")
@click.option("--backend", default=None, help="Sandbox backend: local or docker (default from config).")
@click.option("--concurrency", "-j", type=click.IntRange(1, 64), default=None, help="Episodes at once.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "json_path", metavar="FILE", default=None, help="Write the report as JSON.")
@click.pass_context
def rpr_run(ctx: click.Context, round_: int, model_spec: str, tasks_path: str | None, rounds: int | None,
            critic_warmup: int | None, critic_from: str | None, harness: str | None, backend: str | None,
            concurrency: int | None, seed: int, json_path: str | None) -> None:
    """Run or resume one RPR stage: critic warm-up rounds, then joint PPO rounds.

    Every round collects fresh rollouts of the current actor, updates, and checkpoints both
    adapters, the value head, optimizer, scheduler and RNG state; a stopped stage resumes from
    its last checkpoint with the same command. Metrics (reward, KL, value loss, explained
    variance) go to the store and the TUI's curves.
    """
    from dataclasses import asdict

    from engine.events import RprProgress
    from engine.policy import PolicyError
    from engine.rpr.stage import RprError

    _check_backend(backend)
    engine = _engine(ctx)

    def show(event) -> None:
        if isinstance(event, RprProgress):
            out.print(f"[bold]rpr {event.round}[/] {event.detail}")

    report = _run_resumable(
        engine, [show], lambda: engine.rpr_stage(round_, model=model_spec, tasks=tasks_path, backend=backend,
                                                 concurrency=concurrency, seed=seed, critic_from=critic_from,
                                                 rounds=rounds, critic_warmup_rounds=critic_warmup, harness=harness),
        errors=(SandboxError, PolicyError, RprError, ValueError), stopped=f"RPR stage {round_} stopped")
    table = _table(f"RPR stage {round_}", "round", "phase", "reward", "success", "value loss", "expl. var.",
                   "KL", "entropy")
    for row in report.history:
        table.add_row(str(row["round"]), "warm-up" if row.get("rpr/warmup") else "joint", _fmt(row.get("rpr/reward")),
                      _fmt(row.get("rpr/success")), _fmt(row.get("ppo/value_loss")),
                      _fmt(row.get("ppo/explained_variance")), _fmt(row.get("ppo/kl")), _fmt(row.get("ppo/entropy")))
    out.print(table)
    out.print(f"actor: {report.checkpoint or 'unchanged'}")
    out.print(f"trainer checkpoint (critic, value head, optimizer state): {report.trainer_checkpoint}")
    _write_json(json_path, {**asdict(report), "history": list(report.history)})


# -- pipeline ------------------------------------------------------------------------------------
@cli.group()
def pipeline() -> None:
    """The whole loop: Base -> RSR-1 -> RPR-1 -> RSR-2 -> RPR-2, evaluated after every stage."""


@pipeline.command("run")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="A config file for the whole pipeline (sections [rsr], [rpr], [pipeline], ...). "
                   "Without it, the preset.")
@click.option("--preset", type=click.Choice(["demo"]), default="demo", show_default=True,
              help="Embedded configuration used when --config is not given. demo: the bundled model on the "
                   "built-in suite, under an hour on 2 CPU cores.")
@click.option("--tasks", "tasks_path", metavar="PATH", default=None, help="Task suite (default: built-in).")
@click.option("--backend", default=None, help="Sandbox backend: local or docker (default from the config).")
@click.option("--concurrency", "-j", type=click.IntRange(1, 64), default=None, help="Episodes at once.")
@click.option("--headless", is_flag=True, help="Print progress lines instead of opening the TUI's dashboard "
                                               "(the default when stdout is not a terminal).")
@click.option("--stop-after", type=click.Choice(["Base", "RSR-1", "RPR-1", "RSR-2", "RPR-2"]), default=None,
              help="Run up to this stage, then stop (run again without it to go on).")
@click.option("--json", "json_path", metavar="FILE", default=None, help="Write the stage table as JSON.")
@click.pass_context
def pipeline_run(ctx: click.Context, config_file: Path | None, preset: str, tasks_path: str | None,
                 backend: str | None, concurrency: int | None, headless: bool, stop_after: str | None,
                 json_path: str | None) -> None:
    """Run or resume the pipeline; each stage starts from the previous stage's checkpoint.

    The stage table (checkpoint, pass@1 with a 95% interval over the eval seeds, lineage) is
    kept in the store: stop it anywhere (q in the TUI, ctrl+c headless) and run the same
    command again to resume without losing or repeating work.
    """
    from dataclasses import asdict

    from engine.config import load_config, load_preset
    from engine.events import PipelineProgress, RprProgress, RsrProgress
    from engine.policy import PolicyError
    from engine.rpr.stage import RprError
    from engine.rsr.round import RsrError

    _check_backend(backend)
    engine = _engine(ctx)
    try:
        chosen = load_config(config_file) if config_file else load_preset(preset)
        engine.config = chosen.model_copy(update={"tui": engine.config.tui})  # keep the home's keymap
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    if not headless and sys.stdout.isatty() and sys.stdin.isatty():
        from trsi_tui.app import create_app

        create_app(engine, start_pipeline=dict(tasks=tasks_path, backend=backend, concurrency=concurrency,
                                               stop_after=stop_after)).run()
        return

    def show(event) -> None:
        if isinstance(event, PipelineProgress):
            out.print(f"[bold]{event.stage}[/] {event.status}: {event.detail}")
        elif isinstance(event, RsrProgress):
            out.print(f"  rsr {event.round} {event.stage}: {event.detail}")
        elif isinstance(event, RprProgress):
            out.print(f"  rpr {event.round} {event.detail}")

    stages = _run_resumable(
        engine, [show, _progress()],
        lambda: engine.pipeline(tasks=tasks_path, backend=backend, concurrency=concurrency, stop_after=stop_after),
        errors=(SandboxError, PolicyError, RsrError, RprError, ValueError, RuntimeError), stopped="pipeline stopped",
        hint="\nfix it and run the same command to resume")
    out.print(stage_table(stages))
    _write_json(json_path, {name: asdict(rec) for name, rec in stages.items()})


@pipeline.command("status")
@click.option("--json", "json_path", metavar="FILE", default=None, help="Write the stage table as JSON.")
@click.pass_context
def pipeline_status(ctx: click.Context, json_path: str | None) -> None:
    """The stored stage table: status, checkpoint, pass@1 with its 95% interval."""
    from dataclasses import asdict

    stages = _engine(ctx).store.stages.all()
    out.print(stage_table(stages))
    _write_json(json_path, {name: asdict(rec) for name, rec in stages.items()})


def stage_table(stages) -> Table:
    from engine.store.records import PIPELINE_STAGES

    table = _table("Pipeline", "stage", "status", "pass@1 [95% CI]", "checkpoint", "detail")
    for name in PIPELINE_STAGES:
        rec = stages.get(name)
        if rec is None:
            table.add_row(name, "pending", "-", "", "")
        else:
            table.add_row(name, rec.status, rec.pass_text, rec.checkpoint, rec.detail or "")
    return table


# -- export -----------------------------------------------------------------------------------
@cli.command("export")
@click.option("--run", "run_id", required=True, help="A stored run id (see `trsi-tui runs`).")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "atif"]), default="jsonl", show_default=True,
              help="jsonl: one episode per line with messages, token ids, loss mask, checks, reward; "
                   "atif: one ATIF-v1.4 trajectory per line.")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def export_cmd(ctx: click.Context, run_id: str, fmt: str, file: Path) -> None:
    """Write a run's episodes to FILE for other tools."""
    from engine.store.export import export_run

    store = _engine(ctx).store
    try:
        store.runs.get(run_id)
    except KeyError:
        raise click.ClickException(f"no stored run {run_id!r} (see `trsi-tui runs`)") from None
    out.print(f"wrote {export_run(store, run_id, fmt, file)} episodes to {file}")


# -- sandbox ----------------------------------------------------------------------------------
@cli.group()
def sandbox() -> None:
    """Sandbox backends: build the Docker base images, rebuild failed task images, clean up."""


@sandbox.command("build-base")
@click.option("--mirror", default="http://deb.debian.org/debian", show_default=True, help="Debian mirror.")
@click.option("--flavour", type=click.Choice(["base", "python"]), default="base", show_default=True,
              help="base: trsi-tui/base:bookworm (the default image). python: trsi-tui/python:bookworm, "
                   "with pip, venv, `python` and `pip` on PATH; an alias target for python:3.x-slim.")
@click.option("--ca-bundle", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="PEM file of extra certificate authorities to trust inside the image (a proxy that "
                   "re-signs TLS); pip, requests, curl and OpenSSL are pointed at the combined store.")
@click.option("--force", is_flag=True, help="Rebuild even if the image exists.")
def sandbox_build_base(mirror: str, flavour: str, ca_bundle: Path | None, force: bool) -> None:
    """Build a Docker base image offline: debootstrap Debian, then `docker import`.

    Tasks without an environment/Dockerfile run in the base flavour on the docker backend; map
    image names that cannot be pulled to either flavour under [sandbox.docker.aliases]. Needs
    root, debootstrap, a running Docker engine and a reachable Debian mirror (about a minute).
    """
    from sandboxes.docker_images import FLAVOURS, build_base_image, image_exists, read_ca_bundle

    image = FLAVOURS[flavour].image
    try:
        if ca_bundle is not None:
            read_ca_bundle(ca_bundle)  # a bad file is an error before minutes of debootstrap
        if image_exists(image) and not force:
            out.print(f"{image} already exists (use --force to rebuild)")
            return
        out.print(f"built {build_base_image(mirror, log=err.print, flavour=flavour, ca_bundle=ca_bundle)}")
    except (SandboxError, OSError, subprocess.CalledProcessError) as exc:
        raise click.ClickException(str(exc)) from None


@sandbox.command("rebuild")
@click.argument("tasks", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.pass_context
def sandbox_rebuild(ctx: click.Context, tasks: tuple[Path, ...]) -> None:
    """Forget a failed image build of each TASK and build its environment/Dockerfile again now.

    A failed build is remembered for the task's build context, so later episodes fail at once
    with the build log instead of rebuilding; this is how to try again (after fixing a mirror,
    a proxy or the Dockerfile itself: a changed Dockerfile is rebuilt anyway).
    """
    from engine.paths import resolve_paths
    from sandboxes.docker_images import build_task_image, forget_build_failure

    aliases = _engine(ctx).config.sandbox.docker.aliases
    failures = resolve_paths(ctx.find_root().obj.get("home")).build_failures_dir
    failed = 0
    for task in tasks:
        context = task / "environment"
        if not (context / "Dockerfile").is_file():
            err.print(f"{task}: no environment/Dockerfile (it runs in the base image)")
            continue
        forget_build_failure(context, aliases, failures)
        try:
            out.print(f"{task}: built {build_task_image(context, aliases, failures)}")
        except SandboxError as exc:
            failed += 1
            err.print(f"{task}: {exc}")
    if failed:
        raise SystemExit(1)


@sandbox.command("cleanup")
def sandbox_cleanup() -> None:
    """Remove Docker sandbox containers left behind by a process that died, and containers left
    by failed or killed task-image builds."""
    from sandboxes.docker_images import remove_build_leftovers
    from sandboxes.docker_sandbox import remove_orphans

    try:
        out.print(f"removed {remove_orphans()} orphaned containers and {remove_build_leftovers()} "
                  "left by image builds")
    except SandboxError as exc:
        raise click.ClickException(str(exc)) from None


# -- runs / config ----------------------------------------------------------------------------
@cli.command("runs")
@click.option("--limit", type=int, default=20, show_default=True)
@click.pass_context
def runs_cmd(ctx: click.Context, limit: int) -> None:
    """List stored runs, newest first."""
    table = _table("runs", "id", "kind", "agent", "status", "episodes", "success rate")
    for r in _engine(ctx).store.runs.list(limit):
        rate = "-" if r.success_rate is None else f"{r.success_rate:.1%}"
        table.add_row(r.id, r.kind, r.agent, r.status, str(r.summary.get("episodes", r.total)), rate)
    out.print(table)


@cli.group()
def config() -> None:
    """Show or create the configuration file."""


@config.command("path")
@click.pass_context
def config_path(ctx: click.Context) -> None:
    """Print where the config file and the database live."""
    paths = resolve_paths(ctx.find_root().obj.get("home"))
    out.print(f"config   {paths.config_file}\ndatabase {paths.database}")


@config.command("show")
@click.pass_context
def config_show(ctx: click.Context) -> None:
    """Print the effective configuration as JSON."""
    out.print_json(json.dumps(_engine(ctx).config.model_dump()))


@config.command("init")
@click.option("--force", is_flag=True, help="Overwrite an existing file.")
@click.pass_context
def config_init(ctx: click.Context, force: bool) -> None:
    """Write a commented config file with the defaults."""
    paths = resolve_paths(ctx.find_root().obj.get("home")).ensure()
    if paths.config_file.exists() and not force:
        raise click.ClickException(f"{paths.config_file} exists (use --force to overwrite)")
    paths.config_file.write_text(DEFAULT_CONFIG_TOML)
    out.print(f"wrote {paths.config_file}")


def main() -> None:
    try:
        cli(obj={})
    except KeyboardInterrupt:
        err.print("interrupted: sandboxes stopped, finished episodes are stored")
        sys.exit(130)
