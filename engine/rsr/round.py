"""One RSR round, phase by phase, resumable: every artifact is in SQLite before the next one starts.

    explore -> runbooks -> approval -> replay -> dataset -> sft -> done

Each phase is a module of its own that takes what it works with (a `RoundWork`,
engine/rsr/work.py) and returns what it found:

    explore.py    nop floors, explore waves, the example pool, pass estimates
    distill.py    runbooks drafted, leak-scanned, reviewed and stored; the approval wait
    replay.py     replays of the approved runbooks
    samples.py    samples from passing replays (and explore successes), the balanced subset
    train.py      SFT, the GGUF export, the served spec

They reach the store only through the round's named operations (engine/rsr/records.py) and
share one service for the verified-prefix re-runs (engine/rsr/prefixes.py). Each phase skips
what the store already holds (finished jobs are keyed, runbooks are keyed by source episode,
samples by their token digest), so a round killed anywhere and started again neither loses nor
duplicates work. With manual approval the round waits until a person has decided every pending
draft of the round (in the TUI's runbook queue), also across restarts.
"""

from __future__ import annotations

import threading
from pathlib import Path

from engine.config import RsrConfig
from engine.resumable import Resumable, WorkContext
from engine.rollout.harnesses import HARNESSES
from engine.rsr import distill, explore, replay, samples, train
from engine.rsr.frontier import PassEstimate
from engine.rsr.prefixes import VerifiedPrefixes
from engine.rsr.records import RoundRecords
from engine.rsr.report import RoundReport, funnel, round_report
from engine.rsr.work import RoundWork
from engine.tasks import Task

# The phases in order; the round's row in the store names the one it is in (column `stage`).
PHASES = ("explore", "runbooks", "approval", "replay", "dataset", "sft", "done")
APPROVAL_POLL_S = 1.0


class RsrError(RuntimeError):
    pass


class RsrRound(Resumable):
    error = RsrError

    def __init__(
        self, ctx: WorkContext, *, round: int, model: str, settings: RsrConfig | None = None, policy=None
    ) -> None:
        """`policy`: an already loaded policy for `model` (the context loads it otherwise)."""
        super().__init__(ctx)
        self.round, self.model, self.tasks_path = round, model, ctx.tasks
        self.settings = settings or ctx.config.rsr
        self.checkpoint_dir = self.checkpoint_dir_for(ctx.checkpoints_dir, round)
        self.seed = ctx.seed
        self.records = RoundRecords(self.store, round)
        self._policy = policy
        self._trained: tuple[str, ...] = ()  # digests of the samples SFT trained on, once chosen
        self._policy_lock = threading.Lock()
        from engine.policy import parse_model_spec

        kind = parse_model_spec(model).kind  # a bad spec fails here, not after an hour of exploring
        if kind not in ("bundled", "hf"):
            raise RsrError(
                f"RSR trains the actor, so it needs transformers weights: {model!r} is a {kind}: spec; "
                "use bundled:NAME or hf:PATH"
            )
        unknown = [h for h in self.settings.harnesses if h not in HARNESSES]
        if unknown:
            raise RsrError(f"unknown harness(es) {', '.join(unknown)}; available: {', '.join(sorted(HARNESSES))}")

    @staticmethod
    def checkpoint_dir_for(checkpoints_dir: Path, round: int) -> Path:
        return Path(checkpoints_dir) / f"rsr-{round}"

    @property
    def policy(self):
        with self._policy_lock:  # episode threads ask at once: load one policy, not one each
            if self._policy is None:
                self._policy = self.ctx.load_policy(self.model)
            return self._policy

    def _tasks(self) -> dict[str, Task]:
        return {t.name: t for t in self.split_tasks(self.settings.split)}

    def _work(self) -> RoundWork:
        # Built when the round runs, not in the constructor: settings and policy may be set until then.
        return RoundWork(
            round=self.round,
            seed=self.seed,
            model=self.model,
            settings=self.settings,
            config=self.config,
            records=self.records,
            bus=self.bus,
            run_keyed=self.run_keyed,
            load_policy=lambda: self.policy,
            should_stop=self.should_stop,
            concurrency=self.ctx.concurrency,
            checkpoint_dir=self.checkpoint_dir,
        )

    def run(self) -> RoundReport:
        tasks = self._tasks()
        self._open()
        work = self._work()
        prefixes = VerifiedPrefixes(work, tasks)
        _ = self.policy  # load it here, on the calling thread, before episode threads need it
        explore.explore(work, prefixes, tasks)
        distill.write_runbooks(work, prefixes, tasks)
        distill.await_approval(work, APPROVAL_POLL_S)
        replay.replay(work, tasks)
        dataset = samples.build_dataset(work, prefixes, tasks)
        chosen = samples.balanced(self.settings, tasks, dataset.samples)
        self._trained = tuple(sorted(s.digest for s in chosen.chosen))
        trained = train.train(work, chosen.chosen)
        notes = [n for n in (chosen.note, *trained.notes) if n]
        counts = funnel(self.store, self.round)
        work.progress(
            "done",
            "funnel: "
            + " -> ".join(f"{n} {step}" for step, n in counts.items())
            + f"; checkpoint {trained.checkpoint or 'none'}",
        )
        return round_report(self.records, self.settings, trained.checkpoint, notes, self._trained)

    def _open(self) -> None:
        """Store the round's row, or check that a resumed round runs the model it started with."""
        record = self.records.record()
        if record is None:
            self.records.open(
                model=self.model, tasks_path=str(self.tasks_path), settings=self.settings.model_dump_json()
            )
        elif record.model != self.model:
            raise RsrError(
                f"round {self.round} was started with model {record.model!r}, not {self.model!r}; "
                "resume it with the same model or pick another round number"
            )

    def pass_estimates(self, tasks: dict[str, Task]) -> dict[str, PassEstimate]:
        """Each task's unaided pass rate for this round's model (engine/rsr/explore.py)."""
        return explore.pass_estimates(self.records.explore_attempts(), tasks)
