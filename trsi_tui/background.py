"""Work as a runner job: the trsi-tui command that runs a request, started in a process of its own.

The TUI starts long work this way when `[tui] detach` is on (the default): the request becomes
the command a user would type (`eval ...`, `rsr run ...`, `pipeline run --preset home ...`), which
runs as a detached job exactly as `--detach` runs it (`trsi_tui.cli.detach` starts its jobs here
too); the TUI then attaches to the job (`attach.JobWatcher`), and quitting the TUI leaves it
running. The job's record keeps the command, so `trsi-tui jobs list` shows what to type to
resume it.
"""

from __future__ import annotations

import sys

from engine.api import Engine, EvalRequest, PipelineRequest, RsrRequest, RunnerJob

# How a runner job runs trsi-tui: this interpreter, so a job runs the same installation.
PROGRAM = [sys.executable, "-m", "trsi_tui.cli"]
# What work holds the data dir's work lock (one writer at a time): refused before it starts.
LOCKING_KINDS = ("pipeline", "rsr", "rpr")


def start_job(engine: Engine, kind: str, args: list[str]) -> RunnerJob:
    """`trsi-tui ARGS` as a detached runner job of `kind`, returned at once; WorkBusy, before
    anything starts, when another process holds the work lock this kind of work needs."""
    if kind in LOCKING_KINDS:
        engine.check_work_free()
    return engine.start_runner_job(kind, PROGRAM, args)


def _option(name: str, value: object) -> list[str]:
    return [] if value is None else [name, str(value)]


def eval_args(req: EvalRequest) -> list[str]:
    """`trsi-tui eval ...` as it runs `req` (what `Engine.run_request` runs)."""
    args = ["eval", "--agent", req.agent, *_option("--tasks", req.tasks), *_option("--split", req.split)]
    for name in req.only:
        args += ["--task", name]
    args += _option("--model", req.model) + _option("--harness", req.harness)
    args += _option("--backend", req.backend) + _option("--concurrency", req.concurrency)
    if req.seeds != 1:
        args += ["--seeds", str(req.seeds)]
    if req.attempts != 1:
        args += ["--attempts", str(req.attempts)]
    return args


def rsr_args(req: RsrRequest) -> list[str]:
    """`trsi-tui rsr run ...` as it runs `req` (what `Engine.run_rsr` runs)."""
    args = ["rsr", "run", "--round", str(req.round), "--model", req.model, *_option("--tasks", req.tasks)]
    args += _option("--approval", req.approval) + _option("--attempts", req.attempts)
    args += _option("--backend", req.backend) + _option("--concurrency", req.concurrency)
    if req.seed:
        args += ["--seed", str(req.seed)]
    for harness in req.harnesses:
        args += ["--harness", harness]
    return args + _option("--split", req.split)


def pipeline_args(req: PipelineRequest) -> list[str]:
    """`trsi-tui pipeline run ...` as it runs `req` with the home's config (as the TUI's P does),
    headless: a job has no terminal for a TUI."""
    args = ["pipeline", "run", "--preset", "home", *_option("--tasks", req.tasks)]
    args += _option("--backend", req.backend) + _option("--concurrency", req.concurrency)
    args += _option("--stop-after", req.stop_after)
    if req.seeds:
        args += ["--seeds", ",".join(str(s) for s in req.seeds)]
    return args + ["--headless"]
