"""One RPR stage: critic warm-up rounds, then joint PPO rounds, checkpointed after every round.

    iteration i < critic_warmup_rounds: fresh rollouts of the actor; the critic alone is fit
                                        (the actor's weights do not move)
    later iterations:                   fresh rollouts; actor and critic train together

A round is: rollouts through the same episode loop as evaluation (the actor served by
llama.cpp from its GGUF export, or by transformers), each finished episode linked to its key
in the store the moment it is stored; then one PPO update (engine/rpr/ppo.py); then a
checkpoint directory holding both adapters, the value head, optimizer and scheduler state, RNG
state, the rollout cursor and the global step, written under a temporary name and renamed, and
only then named in `latest`. A stage killed anywhere resumes from `latest`, reusing every
rollout the store already holds for the interrupted round.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from engine.config import RprConfig
from engine.events import RprProgress, TrainingStep
from engine.policy.spec import served_spec, trainable_weights
from engine.rollout.harnesses import HARNESSES
from engine.rollout.runner import EpisodeJob
from engine.rpr import checkpoints
from engine.rpr.rollouts import Rollout, load_rollout
from engine.rpr.sampling import Evidence, choose_tasks, informative
from engine.stage import KeyedStage, StageContext, round_seed
from engine.store.records import MetricPoint
from engine.store.rpr import probe_scope, round_scope
from engine.tasks import Task
from engine.tasks.similarity import TaskSimilarity


class RprError(RuntimeError):
    pass


@dataclass(frozen=True)
class RprReport:
    round: int
    iterations: int
    warmup_rounds: int
    episodes: int
    successes: int
    checkpoint: str
    trainer_checkpoint: str  # the latest iteration directory: adapters, value head, optimizer state
    history: tuple[dict, ...]


def sampler_warning(ratio: float) -> str:
    """A loud note when the trainer's log-probs of the sampled tokens stray from the sampler's:
    PPO's updates are then off-policy by more than its clipping assumes (docs/rpr.md)."""
    if math.isnan(ratio) or 0.8 <= ratio <= 1.25:
        return ""
    return (
        f"; WARNING: trainer and sampler disagree on the sampled tokens (mean ratio {ratio:.3g}); "
        "with the bundled model train in fp32 ([rpr] load_4bit = false)"
    )


class RprStage(KeyedStage):
    error = RprError

    def __init__(
        self,
        ctx: StageContext,
        *,
        round: int,
        model: str,
        settings: RprConfig | None = None,
        critic_from: Path | None = None,
    ) -> None:
        """`critic_from`: a previous RPR checkpoint whose critic (adapter + value head) is inherited."""
        super().__init__(ctx)
        self.round, self.model, self.tasks_path = round, model, ctx.tasks
        self.settings = settings or ctx.config.rpr
        self.dir = self.stage_dir(ctx.checkpoints_dir, round)
        self.concurrency, self.seed = ctx.concurrency, ctx.seed
        self.critic_from = Path(critic_from) if critic_from else None
        self._policy, self._policy_spec = None, ""
        self._similarity: TaskSimilarity | None = None
        self._expected: dict[int, float] = {}  # iteration -> the chosen tasks' expected pass rate
        self._probe: list[Task] | None = None  # the probe's tasks, chosen at the end of the warm-up
        if self.settings.harness not in HARNESSES:
            raise RprError(f"unknown harness {self.settings.harness!r}; available: {', '.join(sorted(HARNESSES))}")
        trainable_weights(model)  # a spec without transformers weights fails here, before any rollout

    @staticmethod
    def stage_dir(checkpoints_dir: Path, round: int) -> Path:
        return Path(checkpoints_dir) / f"rpr-{round}"

    @classmethod
    def latest_checkpoint(cls, checkpoints_dir: Path, round: int) -> Path | None:
        """The newest complete checkpoint of RPR stage `round` (the next stage inherits its critic)."""
        return checkpoints.latest(cls.stage_dir(checkpoints_dir, round))

    @property
    def run_id(self) -> str:
        return f"rpr-{self.round}"

    @property
    def stage_name(self) -> str:
        return f"RPR-{self.round}"

    @property
    def total(self) -> int:
        return self.settings.critic_warmup_rounds + self.settings.rounds

    # -- checkpoints -------------------------------------------------------------------------
    def latest(self) -> Path | None:
        return self.latest_checkpoint(self.ctx.checkpoints_dir, self.round)

    def _save(self, ac, optimizers, schedulers, rng: random.Random, **kwargs) -> Path:
        return checkpoints.save(self.dir, ac, optimizers, schedulers, rng, **kwargs)

    # -- rollouts ----------------------------------------------------------------------------
    def _tasks(self) -> list[Task]:
        chosen = self.split_tasks(self.settings.split)
        random.Random(self.seed).shuffle(chosen)
        return chosen

    def round_plan(self, tasks: list[Task], iteration: int) -> list[tuple[str, Task, int]]:
        """(key, task, seed) for every rollout of one iteration.

        Warm-up round w and joint round j index tasks and seeds by their own phase counters, so an
        arm with warm-up and one without see the same tasks and seeds in their joint rounds.
        """
        warm = self.settings.critic_warmup_rounds
        phase, index = ("warmup", iteration) if iteration < warm else ("joint", iteration - warm)
        per = self.settings.tasks_per_round
        plan = []
        for m in range(per):
            task = tasks[(index * per + m) % len(tasks)]
            for k in range(self.settings.episodes_per_task):
                salt = 0 if phase == "joint" else 500_000
                seed = round_seed(self.seed, self.round, salt + index * 1009 + m * 31 + k)
                plan.append((f"{phase}{index}|{task.name}|{m}|{k}", task, seed))
        return plan

    def _rollout_policy(self, spec: str):
        """The rollout policy for `spec`, reloaded only when the served actor changed (called on the
        stage's own thread, before episode threads start)."""
        if self._policy_spec != spec:
            self._policy = self.ctx.rollout_policy(spec)
            self._policy_spec = spec
        return self._policy

    def frontier(self, tasks: list[Task], iteration: int, *, k: int | None = None) -> list[Task]:
        """The `tasks_per_round` (or `k`) tasks this round samples (engine/rpr/sampling.py: choose_tasks):
        those whose rewards are expected to vary most, from this stage's rollouts of them and of
        similar tasks and, as a prior, from the explore attempts of the RSR round of the same number
        (the parent in a pipeline's lineage; aided attempts too: a task that round solved with
        examples is one its SFT trained on). Decided from what is stored before `iteration`, so a
        resumed round plans the same tasks."""
        episode_ids = [e for i in range(iteration) for e in self.store.rpr.jobs(self.round, i).values()]
        seen: dict[str, list[tuple[bool, float]]] = {}
        for e in self.store.runs.episodes_by_id(episode_ids):
            if e.reward is not None:
                seen.setdefault(e.task, []).append((e.success, e.reward))
        if self._similarity is None:
            self._similarity = TaskSimilarity({t.name: t.instruction for t in tasks})
        evidence = Evidence(seen, self.store.rsr.explore_outcomes(self.round), self._similarity)
        chosen = choose_tasks(
            tasks, evidence, k or self.settings.tasks_per_round, settled_after=self.settings.frontier_evidence
        )
        if k is None:
            # What the evidence before the round expects of the chosen tasks: a round that beats it
            # shows the actor doing better than it did, whichever tasks the round happened to take.
            self._expected[iteration] = sum(evidence.expected_success(t.name) for t in chosen) / len(chosen)
        return chosen

    def rollouts(self, tasks: list[Task], iteration: int, spec: str) -> tuple[list[tuple[str, Rollout]], float]:
        """The round's rollouts with their keys (run now or found stored), and the seconds it took."""
        return self._run_plan(
            self.round_plan(tasks, iteration),
            round_scope(self.round, iteration),
            spec,
            attempt=iteration,
            kind="rpr-rollout",
            what=f"RPR stage {self.round} during the rollouts of round {iteration + 1}",
        )

    def probe_set(self, tasks: list[Task]) -> list[Task]:
        """The probe's tasks: the `probe_tasks` train tasks whose rewards the evidence at the end of
        the warm-up (its rollouts of the unchanged actor, and the prior) expects to vary most, so
        that the probe measures where the actor can still get better. Fixed for the stage."""
        if self._probe is None:
            self._probe = self.frontier(tasks, self.settings.critic_warmup_rounds, k=self.settings.probe_tasks)
        return self._probe

    def probe_plan(self, tasks: list[Task]) -> list[tuple[str, Task, int]]:
        """(key, task, seed) of one probe: the same for every probe of the stage, so two probes'
        rollouts differ only by the actor (and the sampler's batching)."""
        return [
            (f"probe|{task.name}|{m}|{k}", task, round_seed(self.seed, self.round, 900_000 + m * 31 + k))
            for m, task in enumerate(self.probe_set(tasks))
            for k in range(self.settings.probe_episodes)
        ]

    def probe(self, tasks: list[Task], index: int, spec: str) -> tuple[float, float] | None:
        """Roll out the probe with the actor after `index` joint rounds (run now, or found stored);
        log and return its (success rate, mean reward), None when the probe is off or nothing scored."""
        s = self.settings
        if not s.probe_tasks or not tasks or (index % s.probe_every and index != s.rounds):
            return None
        keyed, _ = self._run_plan(
            self.probe_plan(tasks),
            probe_scope(self.round, index),
            spec,
            attempt=s.critic_warmup_rounds + index,
            kind="rpr-probe",
            what=f"RPR stage {self.round} during the probe after joint round {index}",
        )
        if self.should_stop():
            raise InterruptedError(f"RPR stage {self.round} stopped")
        scored = [r for _, r in keyed if r.reward is not None]
        if not scored:
            return None
        success = sum(r.success for r in scored) / len(scored)
        reward = sum(r.reward for r in scored) / len(scored)
        # Logged at the step of the round it follows: the probe before joint round 1 is the actor
        # at the end of the warm-up.
        self._log(s.critic_warmup_rounds + index, {"rpr/probe_success": success, "rpr/probe_reward": reward})
        return success, reward

    def _run_plan(
        self, plan, scope: str, spec: str, *, attempt: int, kind: str, what: str
    ) -> tuple[list[tuple[str, Rollout]], float]:
        """Run the (key, task, seed) jobs of `plan` not yet finished under `scope`; return every
        planned rollout found stored afterwards, in plan order, and the seconds it took."""
        done = self.store.rpr.finished(scope)
        todo = [(key, task, seed) for key, task, seed in plan if key not in done]
        started = time.monotonic()
        if todo:
            policy = self._rollout_policy(spec)
            s = self.settings
            jobs = [
                (
                    key,
                    EpisodeJob(
                        task,
                        self.agent_factory(
                            spec,
                            policy,
                            s.harness,
                            temperature=s.temperature,
                            seed=seed,
                            max_turns=s.max_turns,
                            max_reply_tokens=self.config.policy.max_reply_tokens,
                        ),
                        attempt=attempt,
                    ),
                )
                for key, task, seed in todo
            ]
            self.run_keyed(scope, jobs, kind=kind, what=what)
        done = self.store.rpr.finished(scope)
        return [
            (key, load_rollout(self.store, done[key])) for key, _, _ in plan if key in done
        ], time.monotonic() - started

    # -- the stage ---------------------------------------------------------------------------
    def _progress(self, iteration: int, phase: str, detail: str) -> None:
        self.store.rpr.put_run(self.round, detail=detail)
        self.bus.emit(RprProgress(self.round, iteration, self.total, phase, detail))

    def _log(self, step: int, values: dict[str, float]) -> None:
        points = [
            MetricPoint(self.run_id, self.stage_name, name, step, float(v))
            for name, v in values.items()
            if v is not None and not math.isnan(v)
        ]
        self.store.metrics.log(points)
        for p in points:
            self.bus.emit(TrainingStep(p.run_id, p.stage, p.name, p.step, p.value))

    def run(self) -> RprReport:
        import torch

        from engine.rpr.actor_critic import ActorCritic
        from engine.rpr.ppo import make_optimizers, ppo_update
        from engine.training.loader import LoraShape

        s = self.settings
        tasks = self._tasks()
        base, start_adapter = trainable_weights(self.model)
        record = self.store.rpr.run(self.round)
        if record is None:
            self.store.rpr.put_run(
                self.round,
                model=self.model,
                tasks_path=str(self.tasks_path),
                settings=s.model_dump_json(),
                status="running",
                iteration=0,
                checkpoint="",
                start_adapter=start_adapter or "",
                critic_from=str(self.critic_from or ""),
                detail="",
            )
        elif record.model != self.model:
            raise RprError(
                f"RPR stage {self.round} was started with model {record.model!r}, not {self.model!r}; "
                "resume it with the same model or pick another round number"
            )
        elif record.status == "done" and record.checkpoint:
            return self.report()
        self.dir.mkdir(parents=True, exist_ok=True)
        for tmp in self.dir.glob("*.tmp"):  # a save that was killed half-way
            shutil.rmtree(tmp, ignore_errors=True) if tmp.is_dir() else tmp.unlink()

        latest = self.latest()
        critic_src = latest or self.critic_from
        torch.manual_seed(self.seed)  # fresh adapters start from the same random A matrices every time
        ac = ActorCritic.load(
            base,
            actor_adapter=Path(latest / "actor") if latest else (Path(start_adapter) if start_adapter else None),
            critic_adapter=critic_src / "critic" if critic_src else None,
            value_head=critic_src / "value_head.pt" if critic_src else None,
            reference=s.reference,
            reference_adapter=Path(start_adapter) if start_adapter else None,
            lora=LoraShape(s.rank, s.alpha),
            load_4bit=s.load_4bit,
            temperature=s.temperature,
            precision=s.precision,
        )
        optimizers, schedulers = make_optimizers(ac, s)
        rng = random.Random(self.seed)
        cursor, global_step, served = 0, 0, self.model
        if latest is not None:
            state = torch.load(latest / checkpoints.STATE_FILE, map_location="cpu", weights_only=False)
            for obj, saved in zip([*optimizers, *schedulers], [*state["optimizers"], *state["schedulers"]]):
                obj.load_state_dict(saved)
            torch.set_rng_state(state["torch_rng"])
            rng.setstate(state["python_rng"])
            cursor, global_step = state["cursor"], state["global_step"]
            served = json.loads((latest / checkpoints.METADATA).read_text())["actor_spec"]
        lineage = {
            "kind": "rpr",
            "stage": self.stage_name,
            "parent": self.model,
            "base_model": base,
            "critic_from": str(self.critic_from or ""),
            "tasks": str(self.tasks_path),
            "split": s.split,
            "config": json.loads(s.model_dump_json()),
        }

        for iteration in range(cursor, self.total):
            warmup = iteration < s.critic_warmup_rounds
            phase = "warmup" if warmup else "joint"
            if not warmup:
                self._show_probe(iteration, self.probe(tasks, iteration - s.critic_warmup_rounds, served))
            self._progress(iteration, phase, f"round {iteration + 1}/{self.total} ({phase}): rollouts with {served}")
            keyed, rollout_s = self.rollouts(self.frontier(tasks, iteration), iteration, served)
            rollouts = [r for _, r in keyed]
            if self.should_stop():
                raise InterruptedError(f"RPR stage {self.round} stopped")
            trained = informative(keyed) if not warmup and s.drop_uniform_groups else rollouts
            self._progress(
                iteration,
                phase,
                f"round {iteration + 1}/{self.total} ({phase}): PPO on "
                f"{len(rollouts)} episode(s)" + (", actor frozen" if warmup else ""),
            )
            stats = ppo_update(
                ac, trained, s, optimizers, schedulers, train_actor=not warmup, rng=rng, should_stop=self.should_stop
            )
            global_step += stats.optimizer_steps
            moved = not warmup and stats.optimizer_steps > 0
            if moved:
                # Served from the checkpoint's final directory (written as .tmp, then renamed).
                actor_dir = self.dir / f"iter-{iteration + 1:03d}" / "actor"
                served = served_spec(
                    self.model, actor_dir, actor_dir.with_suffix(".gguf") if self.model.startswith("bundled:") else None
                )
            scored = [r for r in rollouts if r.reward is not None]
            # Every scored rollout of the round, whether or not its group was trained on.
            reward = sum(r.reward for r in scored) / len(scored) if scored else math.nan
            success = sum(r.success for r in scored) / len(scored) if scored else math.nan
            episode_s = sum(r.duration_s for r in rollouts) or 1.0
            generation = sum(r.generation_s for r in rollouts)
            # Logged before the checkpoint: a kill in between reruns the round, whose points then
            # overwrite these (keyed by step), instead of losing the round's metrics.
            self._log(
                iteration + 1,
                {
                    "rpr/warmup": 1.0 if warmup else 0.0,
                    "rpr/reward": reward,
                    "rpr/success": success,
                    "rpr/expected_success": self._expected.get(iteration, math.nan),
                    "rpr/trained_episodes": len(trained),
                    "ppo/value_loss": stats.value_loss,
                    "ppo/explained_variance": stats.explained_variance,
                    "ppo/policy_loss": stats.policy_loss,
                    "ppo/kl": stats.kl,
                    "ppo/entropy": stats.entropy,
                    "ppo/clip_fraction": stats.clip_fraction,
                    "ppo/sampler_ratio": stats.sampler_ratio,
                    "ppo/sampler_log_ratio_max": stats.sampler_log_ratio_max,
                    # 1 when the sampler's log-probs stood in for PPO's old ones (no recompute pass).
                    "ppo/old_from_sampler": 1.0 if stats.old_logprobs_from == "sampler" else 0.0,
                    "ppo/forward_passes": stats.forward_passes,
                    "ppo/episodes": stats.episodes,
                    "ppo/skipped_infra": stats.skipped_infra,
                    "ppo/skipped_long": stats.skipped_long,
                    "ppo/tokens": stats.tokens,
                    "time/rollout_s": rollout_s,
                    "time/train_s": stats.seconds,
                    "time/generation_share": generation / episode_s,
                },
            )
            saved_at = time.monotonic()
            self._save(
                ac,
                optimizers,
                schedulers,
                rng,
                iteration=iteration,
                global_step=global_step,
                served=served,
                lineage=lineage,
                export_base=base if moved and self.model.startswith("bundled:") else None,
            )
            self._log(iteration + 1, {"time/checkpoint_s": time.monotonic() - saved_at})
            self.store.rpr.put_run(self.round, iteration=iteration + 1)
            if trained:
                ev = _number(stats.explained_variance, 3)
                fit = f"value loss {_number(stats.value_loss, 4)}, explained variance {ev}"
            else:  # every group's rewards were equal: nothing to learn from, and no loss to report
                fit = "no update (every task's rollouts earned the same reward)"
            self._progress(
                iteration,
                phase,
                f"round {iteration + 1}/{self.total} ({phase}): reward {_number(reward, 3)}, success "
                f"{_number(success, 2)} (expected "
                f"{_number(self._expected.get(iteration, math.nan), 2)}), {fit}" + sampler_warning(stats.sampler_ratio),
            )
        if s.rounds:
            self._show_probe(self.total, self.probe(tasks, s.rounds, served))
        self.store.rpr.put_run(self.round, status="done", checkpoint=served, detail=f"{self.total} round(s) done")
        self.bus.emit(RprProgress(self.round, self.total, self.total, "done", f"checkpoint {served}"))
        return self.report()

    def _show_probe(self, iteration: int, result: tuple[float, float] | None) -> None:
        if result is None:
            return
        index = iteration - self.settings.critic_warmup_rounds
        first = [p.value for p in self.store.metrics.points(self.run_id, "rpr/probe_success")][:1]
        since = f" (before joint round 1: {first[0]:.2f})" if index and first else ""
        self._progress(
            iteration,
            "joint",
            f"probe after {index} joint round(s): success {result[0]:.2f}, reward {result[1]:.3f} on "
            f"{len(self._probe or [])} fixed train task(s) x {self.settings.probe_episodes}{since}",
        )

    def report(self) -> RprReport:
        record = self.store.rpr.run(self.round)
        done = record.iteration if record is not None else 0
        episodes = successes = 0
        for iteration in range(done):
            jobs = self.store.rpr.jobs(self.round, iteration)
            outcomes = [self.store.runs.episode(e).success for e in jobs.values()]
            episodes += len(outcomes)
            successes += sum(outcomes)
        points = self.store.metrics.points(self.run_id)
        by_step: dict[int, dict] = {}
        for p in points:
            by_step.setdefault(p.step, {"round": p.step})[p.name] = p.value
        history = [by_step[k] for k in sorted(by_step)]
        latest = self.latest()
        return RprReport(
            self.round,
            done,
            self.settings.critic_warmup_rounds,
            episodes,
            successes,
            record.checkpoint if record is not None else "",
            str(latest or ""),
            tuple(history),
        )


def _number(value: float, digits: int) -> str:
    """A metric for a progress line; "-" where it is undefined (an explained variance when every
    return is equal, a loss with nothing trained), rather than "nan"."""
    return "-" if math.isnan(value) else f"{value:.{digits}f}"
