"""Evaluation: which episodes an evaluation runs and with which agent, for `trsi-tui eval`
(Engine.evaluate) and for the held-out evaluation after every pipeline stage (StageEvaluation).

Both plan their episodes as `EvalEpisode`s and get each one's agent from `EvalAgents`, so a
stage's evaluation and `trsi-tui eval` with the same model, settings and seeds sample the same
episodes. A stage's evaluation is pass@1 over the eval split (or a fixed sample of it) with a
task-bootstrap 95% interval, keyed by (stage, task, seed): every episode is recorded under the
stage's scope as it is stored, so an evaluation killed half-way resumes with what it has.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from engine.config import AgentSettings
from engine.keys import EvalKey, eval_scope, eval_seed
from engine.resumable import Resumable, WorkContext
from engine.rollout.agent_spec import AgentSpec, SpecAgentFactory, model_agents
from engine.rollout.agents import make_agent
from engine.rollout.runner import EpisodeJob
from engine.stats import Interval, bootstrap_pass_at_1, by_task
from engine.tasks import Task


class PipelineError(RuntimeError):
    pass


@dataclass(frozen=True)
class EvalEpisode:
    """Attempt `attempt` of `task` under sampling seed `sampling_seed` (0, 1, ...)."""

    task: Task
    sampling_seed: int
    attempt: int = 0


def eval_episodes(tasks: list[Task], *, seeds: int, attempts: int) -> list[EvalEpisode]:
    """Every task's `seeds` x `attempts` episodes, task by task."""
    return [EvalEpisode(t, s, a) for t in tasks for s in range(seeds) for a in range(attempts)]


class EvalAgents:
    """The agent of each evaluation episode: a scripted agent (`oracle`, `nop`), or the model
    `model` served by `policy` acting under `settings`, sampling with the episode's eval seed."""

    def __init__(
        self, agent: str, *, model: str = "", policy=None, settings: AgentSettings | None = None, seed: int = 0
    ) -> None:
        if agent == "model":
            if settings is None:
                raise ValueError("a model evaluation needs its agent settings")
        else:
            make_agent(agent)  # fail fast on an unknown agent name
        self.agent, self.model, self.policy, self.settings, self.seed = agent, model, policy, settings, seed

    def __call__(self, episode: EvalEpisode) -> SpecAgentFactory:
        if self.agent != "model":
            return SpecAgentFactory(AgentSpec(self.agent))
        seed = eval_seed(self.seed, episode.sampling_seed, episode.attempt, episode.task.name)
        return model_agents(self.model, self.policy, self.settings, seed=seed)


class StageEvaluation(Resumable):
    error = PipelineError

    def __init__(self, ctx: WorkContext, *, stage: str, checkpoint: str) -> None:
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
        scope = eval_scope(self.stage)
        done = self.finished(scope)
        # Seed by seed: an evaluation stopped half-way has every task of its first seeds.
        episodes = sorted(eval_episodes(self.tasks(), seeds=p.eval_seeds, attempts=1), key=lambda e: e.sampling_seed)
        plan = [(str(EvalKey(e.task.name, e.sampling_seed)), e) for e in episodes]
        todo = [(key, e) for key, e in plan if key not in done]
        run_id = ""
        if todo:
            agents = EvalAgents(
                "model",
                model=self.checkpoint,
                policy=self.ctx.rollout_policy(self.checkpoint),
                settings=AgentSettings.for_stage_eval(self.config),
                seed=p.seed,
            )
            jobs = [(key, EpisodeJob(e.task, agents(e), attempt=e.sampling_seed)) for key, e in todo]
            run_id = self.run_keyed(
                scope, jobs, kind=f"eval-{self.stage}", what=f"the pipeline while evaluating {self.stage}"
            )
        done = self.finished(scope)
        results = [self.store.runs.episode(done[key].episode_id) for key, _ in plan if key in done]
        scored = [e for e in results if e.reward is not None]
        if not scored:
            raise PipelineError(f"{self.stage}: no evaluation episode was scored (all failed in the infrastructure)")
        interval = bootstrap_pass_at_1(by_task((e.task, e.success) for e in scored))
        stored = self.store.stages.all().get(self.stage)
        return run_id or (stored.eval_run_id if stored else ""), interval, len(results)
