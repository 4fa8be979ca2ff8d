"""Every job key, job scope and sampling seed of the engine, each written once.

A resumable piece of work (engine/resumable.py) records each finished episode under a scope and
a key (the store's jobs table); a resumed run skips the keys it finds. The key formats and the
seeds are therefore part of what is stored: change one and a resumed run repeats its work, or
samples differently from the run it continues. So they live here, side by side, each with its
parser, and nothing else builds or splits a key string.

Seeds: a job's sampling seed is a function of the training seed and of what the job is, never of
when it runs, so a resumed run samples exactly what an uninterrupted one would have.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

# -- seeds --------------------------------------------------------------------------------------


def task_seed(seed: int, task: str) -> int:
    """`seed` made the task's own. Episodes of different tasks sampled with one seed draw the same
    random numbers, and a small model's replies to similar prompts then come out the same: with
    one seed for every task, the bundled model wrote the identical reply to most instances of a
    kind of task, so 16 explore attempts of a kind were worth about 2."""
    return (seed * 1_000_003 + zlib.crc32(task.encode("utf-8"))) % 2**31


def round_seed(seed: int, round: int, offset: int) -> int:
    """A sampling seed for job `offset` of RSR round or RPR stage `round` run with training seed
    `seed`: distinct per (seed, round, offset) and stable across resumes."""
    return (seed * 7919 + round * 104729 + offset) % 2**31


# Offsets that keep the seeds of different kinds of job of one round apart.
RUNBOOK_OFFSET = 50_000
WARMUP_OFFSET = 500_000
PROBE_OFFSET = 900_000


def explore_seed(seed: int, round: int, harness_index: int, attempt: int, task: str) -> int:
    """RSR explore attempt `attempt` of `task` under the round's `harness_index`-th harness."""
    return task_seed(round_seed(seed, round, harness_index * 131 + attempt), task)


def runbook_seed(seed: int, round: int, index: int) -> int:
    """The planner's and the reviewer's seed for the runbook of the round's `index`-th explore success."""
    return round_seed(seed, round, RUNBOOK_OFFSET + index)


def replay_seed(seed: int, round: int, runbook_id: str, replay: int) -> int:
    """Replay `replay` of runbook `runbook_id`."""
    return task_seed(round_seed(seed, round, 7 * replay + 1), runbook_id)


def rollout_seed(seed: int, number: int, warmup: bool, index: int, slot: int, episode: int) -> int:
    """RPR stage `number`'s rollout `episode` of the task in `slot` of its `index`-th warm-up or joint
    round. The two phases count their rounds apart, so an arm with a warm-up and one without sample
    the same seeds in their joint rounds."""
    return round_seed(seed, number, (WARMUP_OFFSET if warmup else 0) + index * 1009 + slot * 31 + episode)


def probe_seed(seed: int, number: int, slot: int, episode: int) -> int:
    """RPR stage `number`'s probe rollout `episode` of the task in `slot`: the same for every probe."""
    return round_seed(seed, number, PROBE_OFFSET + slot * 31 + episode)


def fresh_instance_seed(seed: int, number: int, iteration: int | None, slot: int) -> int:
    """The curriculum seed of the fresh task instance in `slot` that RPR stage `number` (training
    seed `seed`) draws for its round `iteration`, or for its probe (`iteration` None): never one of
    the suite's own seeds (train 0, eval 1), distinct per (seed, stage, round, slot), so that no
    round sees a task of another and none is a suite task."""
    which = "probe" if iteration is None else str(iteration)
    return 2 + zlib.crc32(f"fresh/{seed}/{number}/{which}/{slot}".encode()) % (2**31 - 2)


def eval_seed(seed: int, sampling_seed: int, attempt: int, task: str) -> int:
    """Evaluation episode `attempt` of `task` under sampling seed `sampling_seed` (0, 1, ... of an
    evaluation with several seeds), for a run with base seed `seed`. A pipeline stage's evaluation
    and `trsi-tui eval` with the same seeds sample the same episodes."""
    return task_seed((seed + sampling_seed) * 1000 + attempt, task)


# -- scopes -------------------------------------------------------------------------------------
# One scope per batch of jobs that resume together.

RSR_PHASES = ("nop", "explore", "prefix", "replay")


def rsr_scope(round: int, phase: str) -> str:
    """The jobs of one phase of RSR round `round` (one of RSR_PHASES)."""
    return f"rsr/{round}/{phase}"


RSR_EXPLORE_SCOPE_LIKE = "rsr/%/explore"  # every round's explore jobs, for SQL LIKE


def rsr_round_of_scope(scope: str) -> int:
    """The round number in an RSR scope."""
    return int(scope.split("/")[1])


def rpr_round_scope(number: int, iteration: int) -> str:
    """The rollouts of PPO round `iteration` (0-based, warm-up rounds first) of RPR stage `number`."""
    return f"rpr/{number}/{iteration}"


def rpr_probe_scope(number: int, index: int) -> str:
    """The probe of RPR stage `number` after `index` joint rounds."""
    return f"rpr/{number}/probe{index}"


def eval_scope(stage: str) -> str:
    """The evaluation of pipeline stage `stage` (e.g. "RSR-1", or "s1/RSR-1" for training seed 1)."""
    return f"stage/{stage}"


# -- keys ---------------------------------------------------------------------------------------

AIDED = "aided"  # the last field of an explore key whose attempt was shown worked examples


@dataclass(frozen=True)
class ExploreKey:
    """One explore attempt: `task|harness|attempt`, with `|aided` when it was shown worked examples."""

    task: str
    harness: str
    attempt: int
    aided: bool = False

    def __str__(self) -> str:
        return f"{self.task}|{self.harness}|{self.attempt}" + (f"|{AIDED}" if self.aided else "")

    @classmethod
    def parse(cls, key: str) -> "ExploreKey":
        task, harness, attempt, *rest = key.split("|")
        return cls(task, harness, int(attempt), rest == [AIDED])


@dataclass(frozen=True)
class ReplayKey:
    """Replay `replay` of runbook `runbook_id`: `runbook_id|replay`."""

    runbook_id: str
    replay: int

    def __str__(self) -> str:
        return f"{self.runbook_id}|{self.replay}"

    @classmethod
    def parse(cls, key: str) -> "ReplayKey":
        runbook_id, replay = key.split("|")
        return cls(runbook_id, int(replay))


@dataclass(frozen=True)
class PrefixKey:
    """The first `steps` commands of an explore success, re-run in a fresh sandbox: `explore-key|steps`."""

    explore: str  # the explore job's key, as stored
    steps: int

    def __str__(self) -> str:
        return f"{self.explore}|{self.steps}"

    @classmethod
    def parse(cls, key: str) -> "PrefixKey":
        explore, _, steps = key.rpartition("|")
        return cls(explore, int(steps))


@dataclass(frozen=True)
class RolloutKey:
    """RPR rollout `episode` of `task` in `slot` of its `index`-th warm-up or joint round:
    `warmup0|task|slot|episode` or `joint0|...`."""

    warmup: bool
    index: int
    task: str
    slot: int
    episode: int

    def __str__(self) -> str:
        return f"{'warmup' if self.warmup else 'joint'}{self.index}|{self.task}|{self.slot}|{self.episode}"


@dataclass(frozen=True)
class ProbeKey:
    """Probe rollout `episode` of `task` in `slot`: `probe|task|slot|episode`."""

    task: str
    slot: int
    episode: int

    def __str__(self) -> str:
        return f"probe|{self.task}|{self.slot}|{self.episode}"


@dataclass(frozen=True)
class EvalKey:
    """A pipeline evaluation's episode of `task` under sampling seed `sampling_seed`: `task|seed`."""

    task: str
    sampling_seed: int

    def __str__(self) -> str:
        return f"{self.task}|{self.sampling_seed}"

    @classmethod
    def parse(cls, key: str) -> "EvalKey":
        task, _, sampling_seed = key.rpartition("|")
        return cls(task, int(sampling_seed))
