"""What a front end asks the engine to run: one frozen request per kind of work.

A form or a command line fills one in; `Engine.run_request`, `run_rsr`, `run_rpr` and
`run_pipeline` run it. A field left None takes the config's value, so a request says only
what the user chose.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EvalRequest:
    """What the TUI's start-run form (or any caller) asks `Engine.evaluate` to run."""

    agent: str = "oracle"
    tasks: str | None = None
    split: str | None = None
    only: tuple[str, ...] = ()
    model: str | None = None
    harness: str | None = None  # none: the config's [pipeline] eval_harness
    backend: str | None = None
    concurrency: int | None = None
    seeds: int = 1
    attempts: int = 1


@dataclass(frozen=True)
class RsrRequest:
    """One RSR round (`Engine.run_rsr`): the TUI's RSR form, or `trsi-tui rsr run`."""

    round: int
    model: str
    tasks: str | None = None
    approval: str | None = None
    attempts: int | None = None
    backend: str | None = None
    concurrency: int | None = None
    seed: int = 0
    harnesses: tuple[str, ...] = ()  # none: the config's
    split: str | None = None


@dataclass(frozen=True)
class RprRequest:
    """One RPR stage (`Engine.run_rpr`): `trsi-tui rpr run`. `number` is the stage number (RPR-N);
    `rounds` its joint PPO rounds."""

    number: int
    model: str
    critic_from: str | None = None
    rounds: int | None = None
    critic_warmup_rounds: int | None = None
    harness: str | None = None
    tasks: str | None = None
    backend: str | None = None
    concurrency: int | None = None
    seed: int = 0


@dataclass(frozen=True)
class PipelineRequest:
    """The whole pipeline (`Engine.run_pipeline`), once per training seed (none: the config's)."""

    tasks: str | None = None
    backend: str | None = None
    concurrency: int | None = None
    stop_after: str | None = None
    seeds: tuple[int, ...] = ()
