"""The held-out evaluation after every pipeline stage, keyed by (stage, task, seed).

pass@1 over the eval split (or a fixed sample of it) with a task-bootstrap 95% interval. Every
episode is recorded under the stage's scope as it is stored, so an evaluation killed half-way
resumes with the episodes it already has.
"""

from __future__ import annotations

import random

from engine.rollout.runner import EpisodeJob
from engine.stage import KeyedStage, StageContext, task_seed
from engine.stats import Interval, bootstrap_pass_at_1, by_task
from engine.tasks import Task


class PipelineError(RuntimeError):
    pass


class StageEvaluation(KeyedStage):
    error = PipelineError

    def __init__(self, ctx: StageContext, *, stage: str, checkpoint: str) -> None:
        super().__init__(ctx)
        self.stage, self.checkpoint = stage, checkpoint

    def tasks(self) -> list[Task]:
        p = self.config.pipeline
        tasks = self.split_tasks(p.eval_split, label="the eval split")
        if p.eval_tasks and p.eval_tasks < len(tasks):
            tasks = sorted(random.Random(p.seed).sample(tasks, p.eval_tasks), key=lambda t: t.name)
        return tasks

    def run(self) -> tuple[str, Interval, int]:
        """(the run id of the episodes run now, or of the stored evaluation; pass@1; episodes)."""
        p = self.config.pipeline
        scope = f"stage/{self.stage}"
        done = self.finished(scope)
        plan = [(f"{t.name}|{s}", t, s) for s in range(p.eval_seeds) for t in self.tasks()]
        todo = [(key, t, s) for key, t, s in plan if key not in done]
        run_id = ""
        if todo:
            policy = self.ctx.rollout_policy(self.checkpoint)
            jobs = [
                (
                    key,
                    EpisodeJob(
                        t,
                        self.agent_factory(
                            self.checkpoint,
                            policy,
                            p.eval_harness,
                            seed=task_seed((p.seed + s) * 1000, t.name),
                            temperature=p.eval_temperature,
                            max_turns=p.eval_max_turns,
                            max_reply_tokens=self.config.policy.max_reply_tokens,
                        ),
                        attempt=s,
                    ),
                )
                for key, t, s in todo
            ]
            run_id = self.run_keyed(
                scope, jobs, kind=f"eval-{self.stage}", what=f"the pipeline while evaluating {self.stage}"
            )
        done = self.finished(scope)
        episodes = [self.store.runs.episode(done[key].episode_id) for key, _, _ in plan if key in done]
        scored = [e for e in episodes if e.reward is not None]
        if not scored:
            raise PipelineError(f"{self.stage}: no evaluation episode was scored (all failed in the infrastructure)")
        interval = bootstrap_pass_at_1(by_task((e.task, e.success) for e in scored))
        stored = self.store.stages.all().get(self.stage)
        return run_id or (stored.eval_run_id if stored else ""), interval, len(episodes)
