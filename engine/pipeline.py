"""The Terminal-RSI pipeline: Base -> RSR-1 -> RPR-1 -> RSR-2 -> RPR-2, evaluated after every stage.

Each stage starts from the previous stage's checkpoint (a model spec), trains (RSR: rewrite the
actor by SFT on verified runbook-free replays; RPR: PPO with a warmed-up critic, inheriting the
previous RPR's critic), then evaluates on the held-out eval split over several seeds. The stage
table in the store records status, checkpoint, parent, pass@1 with a task-bootstrap 95% interval
and a lineage record (which data, config and parent produced the checkpoint).

Everything is keyed in the store: RSR and RPR resume their own stages, and evaluation episodes
are keyed by (stage, task, seed), so killing the pipeline anywhere and running it again loses
and duplicates nothing. A stage whose training produced nothing (an RSR round without a single
verified success) passes its parent's checkpoint on unchanged and says so in its lineage.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Callable

from engine.config import Config
from engine.events import EventBus, PipelineProgress
from engine.harnesses import get_harness
from engine.metrics import PIPELINE_STAGES, StageRecord
from engine.model_agent import ModelAgent
from engine.runner import EpisodeJob, KeyedRunner
from engine.stats import bootstrap_pass_at_1, by_task
from engine.store import Store
from engine.tasks import load_suite


class PipelineError(RuntimeError):
    pass


class Pipeline:
    def __init__(self, *, config: Config, store: Store, bus: EventBus, tasks: Path, backend: str,
                 checkpoints_dir: Path, concurrency: int = 2, should_stop: Callable[[], bool] | None = None,
                 policy_loader: Callable[[str], object] | None = None, stop_after: str | None = None) -> None:
        """`policy_loader(spec)`: loads every policy the pipeline serves (tests inject a scripted one).
        `stop_after`: run up to and including this stage, then return (the rest stays pending)."""
        self.config, self.store, self.bus = config, store, bus
        self.tasks, self.backend, self.checkpoints_dir = Path(tasks), backend, Path(checkpoints_dir)
        self.concurrency = concurrency
        self.should_stop = should_stop or (lambda: False)
        self.policy_loader = policy_loader
        self.stop_after = stop_after
        self._active = None  # the runner or stage in progress, for cancel()

    def cancel(self) -> None:
        if self._active is not None:
            self._active.cancel()

    def _put(self, record: StageRecord) -> None:
        self.store.put_stage(record)
        self.bus.emit(PipelineProgress(record.name, record.status, record.detail))

    def _load_policy(self, spec: str):
        if self.policy_loader is not None:
            return self.policy_loader(spec)
        from engine.policy import load_policy

        return load_policy(spec, instances=self.concurrency)

    # -- the pipeline --------------------------------------------------------------------------
    def run(self) -> dict[str, StageRecord]:
        parent = ""
        for name in PIPELINE_STAGES:
            record = self.store.stages().get(name)
            if record is not None and record.status == "done":
                parent = record.checkpoint
                if name == self.stop_after:
                    break
                continue
            if self.should_stop():
                raise InterruptedError(f"pipeline stopped before {name}")
            try:
                self.run_stage(name, parent, record)
            except InterruptedError:
                current = self.store.stages()[name]
                self._put(replace(current, status="pending", detail="stopped; run the pipeline again to resume"))
                raise
            except Exception as exc:
                current = self.store.stages().get(name) or StageRecord(name, "failed", parent=parent)
                self._put(replace(current, status="failed", detail=f"{type(exc).__name__}: {exc}"))
                raise
            parent = self.store.stages()[name].checkpoint
            if name == self.stop_after:
                break
        return self.store.stages()

    def run_stage(self, name: str, parent: str, record: StageRecord | None) -> None:
        if record is None or not record.checkpoint:
            self._put(StageRecord(name, "running", parent=parent, detail="training"))
            checkpoint, lineage = self.train(name, parent)
            record = StageRecord(name, "running", checkpoint=checkpoint, parent=parent,
                                 lineage=json.dumps(lineage), detail="evaluating")
            self._put(record)
        else:
            record = replace(record, status="running", detail="evaluating")
            self._put(record)
        run_id, interval, episodes = self.evaluate(name, record.checkpoint)
        self._put(replace(record, status="done", eval_run_id=run_id, pass_at_1=interval.estimate,
                          ci_low=interval.low, ci_high=interval.high,
                          detail=f"{episodes} eval episodes"))

    def train(self, name: str, parent: str) -> tuple[str, dict]:
        if name == "Base":
            model = self.config.pipeline.model
            return model, {"kind": "base", "model": model}
        kind, round_ = name.split("-")
        round_ = int(round_)
        if kind == "RSR":
            from engine.rsr.round import RsrRound

            stage = RsrRound(round=round_, model=parent, tasks=self.tasks, config=self.config, store=self.store,
                             bus=self.bus, backend=self.backend, checkpoints_dir=self.checkpoints_dir,
                             concurrency=self.concurrency, seed=self.config.pipeline.seed, should_stop=self.should_stop,
                             policy=self._load_policy(parent) if self.policy_loader else None)
            self._active = stage
            report = stage.run()
            self._active = None
            samples = self.store.samples(round_)
            lineage = {"kind": "rsr", "parent": parent, "round": round_, "tasks": str(self.tasks),
                       "split": self.config.rsr.split, "explored": report.explored, "successes": report.successes,
                       "runbooks": report.runbooks, "replays_passed": report.replay_successes,
                       "samples": len(samples), "sample_digests": sorted(s.digest for s in samples),
                       "config": json.loads(self.config.rsr.model_dump_json()), "notes": list(report.notes)}
            if not report.checkpoint:
                lineage["unchanged"] = "no verified replay to train on: the parent's checkpoint is carried over"
            return report.checkpoint or parent, lineage
        from engine.rpr.stage import RprStage

        critic_from = None
        if round_ > 1:
            pointer = self.checkpoints_dir / f"rpr-{round_ - 1}" / "latest"
            if pointer.is_file():
                critic_from = pointer.parent / pointer.read_text().strip()
        stage = RprStage(round=round_, model=parent, tasks=self.tasks, config=self.config, store=self.store,
                         bus=self.bus, backend=self.backend, checkpoints_dir=self.checkpoints_dir,
                         concurrency=self.concurrency, seed=self.config.pipeline.seed, critic_from=critic_from,
                         should_stop=self.should_stop, policy_loader=self.policy_loader)
        self._active = stage
        report = stage.run()
        self._active = None
        lineage = {"kind": "rpr", "parent": parent, "round": round_, "tasks": str(self.tasks),
                   "split": self.config.rpr.split, "critic_from": str(critic_from or ""),
                   "rollout_episodes": report.episodes, "rollout_successes": report.successes,
                   "rollout_episode_ids": sorted(e for i in range(report.iterations)
                                                 for e in self.store.rpr_jobs(round_, i).values()),
                   "rounds": report.iterations, "critic_warmup_rounds": report.warmup_rounds,
                   "trainer_checkpoint": report.trainer_checkpoint, "config": json.loads(self.config.rpr.model_dump_json())}
        return report.checkpoint or parent, lineage

    # -- evaluation ----------------------------------------------------------------------------
    def eval_tasks(self):
        p = self.config.pipeline
        suite = load_suite(self.tasks)
        tasks = sorted(suite.split(p.eval_split), key=lambda t: t.name)
        if not tasks:
            raise PipelineError(f"no tasks in the eval split {p.eval_split!r} of {self.tasks}")
        if p.eval_tasks and p.eval_tasks < len(tasks):
            tasks = sorted(random.Random(p.seed).sample(tasks, p.eval_tasks), key=lambda t: t.name)
        return tasks

    def evaluate(self, name: str, checkpoint: str):
        p = self.config.pipeline
        tasks = self.eval_tasks()
        done = self.store.stage_jobs(name)
        plan = [(f"{t.name}|{s}", t, s) for s in range(p.eval_seeds) for t in tasks]
        todo = [(key, t, s) for key, t, s in plan if key not in done]
        run_id = ""
        if todo:
            policy = self._load_policy(checkpoint)

            def job(task, s: int) -> EpisodeJob:
                return EpisodeJob(task, lambda: ModelAgent(policy, get_harness(p.eval_harness), seed=(p.seed + s) * 1000,
                                                           temperature=p.eval_temperature, max_turns=p.eval_max_turns),
                                  attempt=s)

            runner = KeyedRunner(config=self.config, backend=self.backend, store=self.store, bus=self.bus,
                                 should_stop=self.should_stop)
            self._active = runner
            run_id = runner.run([(key, job(t, s)) for key, t, s in todo],
                                record=lambda key, r: self.store.stage_job_done(name, key, r.run_id, r.episode_id,
                                                                                r.success),
                                kind=f"eval-{name}", tasks_path=str(self.tasks), concurrency=self.concurrency,
                                what=f"the pipeline while evaluating {name}")
            self._active = None
        done = self.store.stage_jobs(name)
        episodes = [self.store.episode(done[key]) for key, _, _ in plan if key in done]
        scored = [e for e in episodes if e.reward is not None]
        if not scored:
            raise PipelineError(f"{name}: no evaluation episode was scored (all failed in the infrastructure)")
        interval = bootstrap_pass_at_1(by_task((e.task, e.success) for e in scored))
        stored = self.store.stages().get(name)
        return run_id or (stored.eval_run_id if stored else ""), interval, len(episodes)
