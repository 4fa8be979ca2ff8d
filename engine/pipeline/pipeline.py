"""The Terminal-RSI pipeline: Base -> RSR-1 -> RPR-1 -> RSR-2 -> RPR-2, evaluated after every stage.

Each stage starts from the previous stage's checkpoint (a model spec), trains (RSR: rewrite the
actor by SFT on verified runbook-free replays; RPR: PPO with a warmed-up critic, inheriting the
previous RPR's critic), then evaluates on the held-out eval split over several seeds. The stage
table in the store records status, checkpoint, parent, pass@1 with a task-bootstrap 95% interval
and a lineage record (which data, config and parent produced the checkpoint).

With several training seeds (`[pipeline] seeds`, `pipeline run --seeds 0,1,2`), each seed is a
lineage of its own (engine/pipeline/lineage.py), run one after the other; Base is shared.

Everything is keyed in the store: RSR and RPR resume their own stages, and evaluation episodes
are keyed by (stage, task, seed), so killing the pipeline anywhere and running it again loses
and duplicates nothing. A stage whose training produced nothing (an RSR round without a single
verified success) passes its parent's checkpoint on unchanged and says so in its lineage.
"""

from __future__ import annotations

import json
from dataclasses import replace

from engine.events import PipelineProgress
from engine.pipeline.evaluation import PipelineError, StageEvaluation
from engine.pipeline.lineage import Lineage
from engine.resumable import WorkContext
from engine.store.records import PIPELINE_STAGES, StageRecord

__all__ = ["Pipeline", "PipelineError", "SeededPipelines"]


class Pipeline:
    def __init__(self, ctx: WorkContext, *, stop_after: str | None = None, seed: int | None = None) -> None:
        """`ctx.policy_loader(spec)` loads every policy the pipeline serves (tests inject a scripted one).
        `stop_after`: run up to and including this stage, then return (the rest stays pending).
        `seed`: the training seed, whose lineage this runs (default `[pipeline] seed`)."""
        self.lineage = Lineage(ctx.config.pipeline.seed if seed is None else seed)
        # Every stage of the lineage trains and explores with its training seed.
        self.ctx = replace(ctx, seed=self.lineage.seed)
        self.config, self.store, self.bus = ctx.config, ctx.store, ctx.bus
        self.tasks = ctx.tasks
        self.should_stop = ctx.should_stop
        self.stop_after = stop_after
        self._active = None  # the stage in progress, for cancel()

    def cancel(self) -> None:
        if self._active is not None:
            self._active.cancel()

    def _put(self, record: StageRecord) -> None:
        self.store.stages.put(record)
        self.bus.emit(PipelineProgress(record.name, record.status, record.detail))

    def _run(self, stage):
        self._active = stage
        try:
            return stage.run()
        finally:
            self._active = None

    # -- the pipeline --------------------------------------------------------------------------
    def run(self) -> dict[str, StageRecord]:
        """This lineage's stage records, under the plain stage names."""
        parent = ""
        for name in PIPELINE_STAGES:
            key = self.lineage.stage_key(name)
            record = self.store.stages.all().get(key)
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
                current = self.store.stages.all()[key]
                self._put(replace(current, status="pending", detail="stopped; run the pipeline again to resume"))
                raise
            except Exception as exc:
                current = self.store.stages.all().get(key) or StageRecord(key, "failed", parent=parent)
                self._put(replace(current, status="failed", detail=f"{type(exc).__name__}: {exc}"))
                raise
            parent = self.store.stages.all()[key].checkpoint
            if name == self.stop_after:
                break
        return self.lineage.records(self.store.stages.all())

    def run_stage(self, name: str, parent: str, record: StageRecord | None) -> None:
        key = self.lineage.stage_key(name)
        if record is None or not record.checkpoint:
            self._put(StageRecord(key, "running", parent=parent, detail="training"))
            checkpoint, lineage = self.train(name, parent)
            lineage["training_seed"] = self.lineage.seed
            record = StageRecord(
                key, "running", checkpoint=checkpoint, parent=parent, lineage=json.dumps(lineage), detail="evaluating"
            )
            self._put(record)
        else:
            record = replace(record, status="running", detail="evaluating")
            self._put(record)
        run_id, interval, episodes = self.evaluate(key, record.checkpoint)
        self._put(
            replace(
                record,
                status="done",
                eval_run_id=run_id,
                pass_at_1=interval.estimate,
                ci_low=interval.low,
                ci_high=interval.high,
                detail=f"{episodes} eval episodes",
            )
        )

    def train(self, name: str, parent: str) -> tuple[str, dict]:
        if name == "Base":
            model = self.config.pipeline.model
            return model, {"kind": "base", "model": model}
        kind, round_ = name.split("-")
        round_ = self.lineage.round_id(int(round_))
        if kind == "RSR":
            from engine.rsr.round import RsrRound

            report = self._run(RsrRound(self.ctx, round=round_, model=parent))
            samples = self.store.rsr.samples(round_)
            lineage = {
                "kind": "rsr",
                "parent": parent,
                "round": round_,
                "tasks": str(self.tasks),
                "split": self.config.rsr.split,
                "explored": report.explored,
                "successes": report.successes,
                "runbooks": report.runbooks,
                "replays_passed": report.replay_successes,
                "samples": len(samples),
                "sample_digests": sorted(s.digest for s in samples),
                "trained_digests": list(report.trained_digests),
                "config": json.loads(self.config.rsr.model_dump_json()),
                "notes": list(report.notes),
            }
            if not report.checkpoint:
                lineage["unchanged"] = "no verified replay to train on: the parent's checkpoint is carried over"
            return report.checkpoint or parent, lineage
        from engine.rpr.stage import RprStage

        first = self.lineage.round_id(1)
        critic_from = RprStage.latest_checkpoint(self.ctx.checkpoints_dir, round_ - 1) if round_ > first else None
        report = self._run(RprStage(self.ctx, number=round_, model=parent, critic_from=critic_from))
        lineage = {
            "kind": "rpr",
            "parent": parent,
            "round": round_,
            "tasks": str(self.tasks),
            "split": self.config.rpr.split,
            "critic_from": str(critic_from or ""),
            "rollout_episodes": report.episodes,
            "rollout_successes": report.successes,
            "rollout_episode_ids": sorted(
                e for i in range(report.iterations) for e in self.store.rpr.jobs(round_, i).values()
            ),
            "rounds": report.iterations,
            "critic_warmup_rounds": report.warmup_rounds,
            "trainer_checkpoint": report.trainer_checkpoint,
            "config": json.loads(self.config.rpr.model_dump_json()),
        }
        return report.checkpoint or parent, lineage

    def evaluate(self, key: str, checkpoint: str):
        return self._run(StageEvaluation(self.ctx, stage=key, checkpoint=checkpoint))


class SeededPipelines:
    """The pipeline once per training seed, one lineage after the other; each resumes on its own."""

    def __init__(self, ctx: WorkContext, seeds: list[int], *, stop_after: str | None = None) -> None:
        self.ctx, self.seeds, self.stop_after = ctx, list(seeds), stop_after
        self._active: Pipeline | None = None

    def cancel(self) -> None:
        if self._active is not None:
            self._active.cancel()

    def run(self) -> dict[int, dict[str, StageRecord]]:
        """{training seed: its stage records under the plain stage names}."""
        results = {}
        for seed in self.seeds:
            if self.ctx.should_stop():
                raise InterruptedError(f"pipeline stopped before training seed {seed}")
            self._active = Pipeline(self.ctx, stop_after=self.stop_after, seed=seed)
            try:
                results[seed] = self._active.run()
            finally:
                self._active = None
        return results
