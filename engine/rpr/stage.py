"""One RPR stage: critic warm-up rounds, then joint PPO rounds, checkpointed after every round.

    iteration i < critic_warmup_rounds: fresh rollouts of the actor; the critic alone is fit
                                        (the actor's weights do not move)
    later iterations:                   fresh rollouts; actor and critic train together

The stage only sequences its phases, each a module of its own:

    resume.py       the stage's record; the trainer from `latest`, or a fresh one
    for each round:
      probe.py        (joint rounds) the actor on the stage's fixed probe jobs
      plan.py         which tasks, keys and seeds the round rolls out (fresh.py: new
                      curriculum instances of the families at the frontier)
      rollout_runs.py its missing rollouts run, every one read back from the store
      update.py       one PPO update, the round's metrics and progress line
      checkpoints.py  adapters, value head and trainer state, then `latest`
    a final probe; the record marked done.

Rollouts go through the same episode loop as evaluation (the actor served by llama.cpp from its
GGUF export, or by transformers), each finished episode linked to its key in the store the
moment it is stored. A stage killed anywhere resumes from `latest`, reusing every rollout the
store already holds for the interrupted round.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, replace
from pathlib import Path

from engine.config import AgentSettings, RprConfig
from engine.events import RprProgress, TrainingStep
from engine.policy.spec import trainable_weights
from engine.resumable import Resumable, WorkContext
from engine.rollout.harnesses import HARNESSES
from engine.rpr import checkpoints, probe
from engine.rpr.fresh import FreshInstances, curriculum_families
from engine.rpr.plan import Planner, Round
from engine.rpr.resume import RprError, StageSpec, TrainerState, load_trainer, open_record
from engine.rpr.rollout_runs import RolloutRunner
from engine.rpr.update import ppo_line, sampler_warning, train_round
from engine.store.records import MetricPoint
from engine.tasks import Task

__all__ = ["RprError", "RprReport", "RprStage", "sampler_warning"]


@dataclass(frozen=True)
class RprReport:
    number: int
    iterations: int
    warmup_rounds: int
    episodes: int
    successes: int
    checkpoint: str
    trainer_checkpoint: str  # the latest iteration directory: adapters, value head, optimizer state
    history: tuple[dict, ...]


class RprStage(Resumable):
    error = RprError

    def __init__(
        self,
        ctx: WorkContext,
        *,
        number: int,
        model: str,
        settings: RprConfig | None = None,
        critic_from: Path | None = None,
    ) -> None:
        """`critic_from`: a previous RPR checkpoint whose critic (adapter + value head) is inherited."""
        super().__init__(ctx)
        self.number, self.model, self.tasks_path = number, model, ctx.tasks
        self.settings = settings or ctx.config.rpr
        agent = AgentSettings.for_rpr(self.settings, ctx.config.policy)
        self.dir = self.stage_dir(ctx.checkpoints_dir, number)
        self.concurrency, self.seed = ctx.concurrency, ctx.seed
        self.critic_from = Path(critic_from) if critic_from else None
        self.planner = Planner(self.store, number=number, seed=self.seed, settings=self.settings)
        self.rollouts = RolloutRunner(self.store, self.run_keyed, ctx.rollout_policy, agent)
        if self.settings.harness not in HARNESSES:
            raise RprError(f"unknown harness {self.settings.harness!r}; available: {', '.join(sorted(HARNESSES))}")
        trainable_weights(model)  # a spec without transformers weights fails here, before any rollout

    @staticmethod
    def stage_dir(checkpoints_dir: Path, number: int) -> Path:
        return Path(checkpoints_dir) / f"rpr-{number}"

    @classmethod
    def latest_checkpoint(cls, checkpoints_dir: Path, number: int) -> Path | None:
        """The newest complete checkpoint of RPR stage `number` (the next stage inherits its critic)."""
        return checkpoints.latest(cls.stage_dir(checkpoints_dir, number))

    @property
    def run_id(self) -> str:
        return f"rpr-{self.number}"

    @property
    def stage_name(self) -> str:
        return f"RPR-{self.number}"

    @property
    def total(self) -> int:
        return self.settings.critic_warmup_rounds + self.settings.rounds

    def latest(self) -> Path | None:
        return self.latest_checkpoint(self.ctx.checkpoints_dir, self.number)

    def _save(self, ac, optimizers, schedulers, rng: random.Random, **kwargs) -> Path:
        return checkpoints.save(self.dir, ac, optimizers, schedulers, rng, **kwargs)

    def _tasks(self) -> list[Task]:
        chosen = self.split_tasks(self.settings.split)
        random.Random(self.seed).shuffle(chosen)
        return chosen

    # -- the stage ---------------------------------------------------------------------------
    def run(self) -> RprReport:
        tasks = self._tasks()
        families = curriculum_families(tasks) if self.settings.fresh_instances else []
        if families:
            self.planner.fresh = FreshInstances(self.dir / "tasks", families, seed=self.seed, number=self.number)
        base, start_adapter = trainable_weights(self.model)
        spec = StageSpec(self.number, self.model, self.tasks_path, self.settings, start_adapter, self.critic_from)
        if open_record(self.store, spec):
            return self.report()
        checkpoints.clear_partial(self.dir)
        state = load_trainer(spec=spec, base=base, latest=self.latest(), seed=self.seed)
        self._check_stop()  # loading the trainer takes a while; a stop during it ends the stage here
        lineage = checkpoints.lineage(
            stage=self.stage_name,
            model=self.model,
            base=base,
            critic_from=self.critic_from,
            tasks=self.tasks_path,
            settings=self.settings,
        )
        for iteration in range(state.cursor, self.total):
            state = self._round(
                tasks, Round(iteration, self.total, self.settings.critic_warmup_rounds), state, base, lineage
            )
        if self.settings.rounds:
            self._probe(tasks, self.settings.rounds, state.served)
        self.store.rpr.put_run(
            self.number, status="done", checkpoint=state.served, detail=f"{self.total} round(s) done"
        )
        self.bus.emit(RprProgress(self.number, self.total, self.total, "done", f"checkpoint {state.served}"))
        return self.report()

    def _round(self, tasks: list[Task], rnd: Round, state: TrainerState, base: str, lineage: dict) -> TrainerState:
        """One round: (probe), plan, rollouts, update, checkpoint; the trainer state after it."""
        self._check_stop()  # a stop during the previous round's checkpoint
        if not rnd.warmup:
            self._probe(tasks, rnd.index, state.served)
        self._progress(rnd.iteration, rnd.phase, f"{rnd.label}: rollouts with {state.served}")
        planned = self.planner.round(tasks, rnd)
        batch = self.rollouts.run(planned.plan, state.served)
        self._check_stop()
        self._progress(rnd.iteration, rnd.phase, ppo_line(rnd, len(batch.keyed)))
        outcome = train_round(
            state,
            batch,
            rnd,
            expected_success=planned.expected_success,
            settings=self.settings,
            should_stop=self.should_stop,
        )
        served = checkpoints.served_actor(self.dir, rnd.iteration, self.model) if outcome.moved else state.served
        state = replace(
            state, cursor=rnd.step, global_step=state.global_step + outcome.stats.optimizer_steps, served=served
        )
        # Logged before the checkpoint: a kill in between reruns the round, whose points then
        # overwrite these (keyed by step), instead of losing the round's metrics.
        self._log(rnd.step, outcome.metrics())
        saved_at = time.monotonic()
        self._save(
            state.ac,
            state.optimizers,
            state.schedulers,
            state.rng,
            iteration=rnd.iteration,
            global_step=state.global_step,
            served=served,
            lineage=lineage,
            export_base=base if outcome.moved and self.model.startswith("bundled:") else None,
        )
        self._log(rnd.step, {"time/checkpoint_s": time.monotonic() - saved_at})
        self.store.rpr.put_run(self.number, iteration=rnd.step)
        self._progress(rnd.iteration, rnd.phase, outcome.progress())
        return state

    def _probe(self, tasks: list[Task], index: int, served: str) -> None:
        """Roll out the probe with the actor after `index` joint rounds (run now, or found stored)
        where one is due; log its metrics and show its line when anything scored."""
        plan = self.planner.probe(tasks, index)
        if plan is None:
            return
        batch = self.rollouts.run(plan, served)
        self._check_stop()
        s = self.settings
        result = probe.score(batch, index=index, tasks=len(self.planner.probe_set(tasks)), episodes=s.probe_episodes)
        if result is None:
            return
        # Logged at the step of the round it follows: the probe before joint round 1 is the actor
        # at the end of the warm-up.
        step = s.critic_warmup_rounds + index
        self._log(step, result.metrics())
        first = [p.value for p in self.store.metrics.points(self.run_id, "rpr/probe_success")][:1]
        self._progress(step, "joint", result.progress(first[0] if first else None))

    def _check_stop(self) -> None:
        if self.should_stop():
            raise InterruptedError(f"RPR stage {self.number} stopped")

    def _progress(self, iteration: int, phase: str, detail: str) -> None:
        self.store.rpr.put_run(self.number, detail=detail)
        self.bus.emit(RprProgress(self.number, iteration, self.total, phase, detail))

    def _log(self, step: int, values: dict[str, float]) -> None:
        points = [
            MetricPoint(self.run_id, self.stage_name, name, step, float(v))
            for name, v in values.items()
            if v is not None and not math.isnan(v)
        ]
        self.store.metrics.log(points)
        for p in points:
            self.bus.emit(TrainingStep(p.run_id, p.stage, p.name, p.step, p.value))

    def report(self) -> RprReport:
        record = self.store.rpr.run(self.number)
        done = record.iteration if record is not None else 0
        counts = self.store.rpr.round_counts(self.number, done)
        by_step: dict[int, dict] = {}
        for p in self.store.metrics.points(self.run_id):
            by_step.setdefault(p.step, {"round": p.step})[p.name] = p.value
        latest = self.latest()
        return RprReport(
            self.number,
            done,
            self.settings.critic_warmup_rounds,
            sum(c.episodes for c in counts),
            sum(c.successes for c in counts),
            record.checkpoint if record is not None else "",
            str(latest or ""),
            tuple(by_step[k] for k in sorted(by_step)),
        )
