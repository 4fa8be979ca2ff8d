"""Planning: which tasks, keys and seeds a round or a probe rolls out.

Reads the suite's tasks (in the stage's seeded order), the stage's scored rollouts of earlier
rounds and the RSR round of the same number's explore outcomes (store.rpr.scored_before,
store.rsr.explore_outcomes). Writes nothing, but for the fresh instances a curriculum stage draws
(engine/rpr/fresh.py: rounds and the probe then take new instances of the families at the
frontier instead of the suite's tasks). Returns a `RoundPlan` (a round's keyed jobs and
what the evidence expects of its tasks) or a probe's `Plan`.

Every key and seed comes from engine/keys.py and depends only on what the job is, so a resumed
round plans exactly the jobs an uninterrupted one would have.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.config import RprConfig
from engine.keys import ProbeKey, RolloutKey, probe_seed, rollout_seed, rpr_probe_scope, rpr_round_scope
from engine.rpr.fresh import FreshInstances, family_of_name
from engine.rpr.sampling import Evidence, choose_tasks
from engine.store import Store
from engine.tasks import Task
from engine.tasks.similarity import TaskSimilarity


@dataclass(frozen=True)
class Round:
    """PPO round `iteration` (0-based, the `warmup_rounds` critic warm-up rounds first) of `total`."""

    iteration: int
    total: int
    warmup_rounds: int

    @property
    def warmup(self) -> bool:
        return self.iteration < self.warmup_rounds

    @property
    def phase(self) -> str:
        return "warmup" if self.warmup else "joint"

    @property
    def index(self) -> int:
        """The round's number within its phase: warm-up and joint rounds count apart."""
        return self.iteration if self.warmup else self.iteration - self.warmup_rounds

    @property
    def step(self) -> int:
        """The step the round's metrics are logged at (also the checkpoint cursor after it)."""
        return self.iteration + 1

    @property
    def label(self) -> str:
        return f"round {self.iteration + 1}/{self.total} ({self.phase})"


@dataclass(frozen=True)
class Job:
    key: str
    task: Task
    seed: int


@dataclass(frozen=True)
class Plan:
    """Keyed jobs that resume together under `scope`, run as one run of `kind`."""

    scope: str
    jobs: tuple[Job, ...]
    attempt: int
    kind: str
    what: str  # names the work in the InterruptedError of a stop


@dataclass(frozen=True)
class RoundPlan:
    plan: Plan
    tasks: tuple[Task, ...]
    # What the evidence before the round expects of the chosen tasks: a round that beats it shows
    # the actor doing better than it did, whichever tasks the round happened to take.
    expected_success: float


PRIOR_PER_FAMILY = 8


class Planner:
    """The plans of one stage. Keeps the task similarity and the probe's task set once computed."""

    def __init__(self, store: Store, *, number: int, seed: int, settings: RprConfig) -> None:
        self.store, self.number, self.seed, self.settings = store, number, seed, settings
        self._similarity: TaskSimilarity | None = None
        self._probe: list[Task] | None = None
        # On a curriculum suite with `fresh_instances`: rounds and probe draw new instances.
        self.fresh: FreshInstances | None = None

    def family_evidence(self, tasks: list[Task], iteration: int) -> Evidence:
        """What is stored before `iteration`, by family: this stage's rollouts of fresh instances
        and, as a prior, the last `PRIOR_PER_FAMILY` explore attempts of the RSR round of the same
        number on each family's suite tasks (so that a family's prior weighs as a few rollouts,
        however many instances it has)."""
        seen: dict[str, list[tuple[bool, float]]] = {}
        for o in self.store.rpr.scored_before(self.number, iteration):
            seen.setdefault(family_of_name(o.task), []).append((o.success, o.reward))
        family = {t.name: str(t.metadata.get("family") or family_of_name(t.name)) for t in tasks}
        prior: dict[str, list[tuple[bool, float]]] = {}
        for name, outcomes in self.store.rsr.explore_outcomes(self.number).items():
            prior.setdefault(family.get(name, family_of_name(name)), []).extend(outcomes)
        return Evidence(seen, {f: found[-PRIOR_PER_FAMILY:] for f, found in prior.items()})

    def fresh_tasks(
        self, tasks: list[Task], iteration: int, k: int, *, probe: bool = False
    ) -> tuple[list[Task], Evidence]:
        """`k` fresh instances from the families whose rewards are expected to vary most before
        `iteration` (a family settled by `frontier_evidence` of its own rollouts, all successes or
        all zeros, comes last), cycling over them when there are fewer than `k`."""
        assert self.fresh is not None
        evidence = self.family_evidence(tasks, iteration)
        families = self.fresh.families
        ranked = choose_tasks(
            families, evidence, len(families), settled_after=self.settings.frontier_evidence, name=str
        )
        width = min(k, len(ranked))
        chosen = [ranked[m % width] for m in range(k)]
        return self.fresh.draw(chosen, None if probe else iteration), evidence

    def evidence(self, tasks: list[Task], iteration: int) -> Evidence:
        """What is stored before `iteration`: this stage's rollouts and, as a prior, the explore
        attempts of the RSR round of the same number (the parent in a pipeline's lineage; aided
        attempts too: a task that round solved with examples is one its SFT trained on)."""
        seen: dict[str, list[tuple[bool, float]]] = {}
        for o in self.store.rpr.scored_before(self.number, iteration):
            seen.setdefault(o.task, []).append((o.success, o.reward))
        if self._similarity is None:
            self._similarity = TaskSimilarity({t.name: t.instruction for t in tasks})
        return Evidence(seen, self.store.rsr.explore_outcomes(self.number), self._similarity)

    def frontier(self, tasks: list[Task], iteration: int, k: int) -> tuple[list[Task], Evidence]:
        """The `k` tasks whose rewards are expected to vary most (sampling.choose_tasks), decided
        from what is stored before `iteration`, so that a resumed round plans the same tasks."""
        evidence = self.evidence(tasks, iteration)
        return choose_tasks(tasks, evidence, k, settled_after=self.settings.frontier_evidence), evidence

    def round(self, tasks: list[Task], rnd: Round) -> RoundPlan:
        if self.fresh is not None:
            chosen, evidence = self.fresh_tasks(tasks, rnd.iteration, self.settings.tasks_per_round)
            expected = sum(evidence.expected_success(family_of_name(t.name)) for t in chosen) / len(chosen)
        else:
            chosen, evidence = self.frontier(tasks, rnd.iteration, self.settings.tasks_per_round)
            expected = sum(evidence.expected_success(t.name) for t in chosen) / len(chosen)
        plan = Plan(
            rpr_round_scope(self.number, rnd.iteration),
            self.round_jobs(chosen, rnd),
            rnd.iteration,
            "rpr-rollout",
            f"RPR stage {self.number} during the rollouts of round {rnd.iteration + 1}",
        )
        return RoundPlan(plan, tuple(chosen), expected)

    def round_jobs(self, tasks: list[Task], rnd: Round) -> tuple[Job, ...]:
        """Every rollout of one round over its chosen `tasks`. Tasks and seeds are indexed by the
        round's own phase counter, so an arm with warm-up and one without see the same tasks and
        seeds in their joint rounds."""
        per = self.settings.tasks_per_round
        jobs = []
        for m in range(per):
            task = tasks[(rnd.index * per + m) % len(tasks)]
            for k in range(self.settings.episodes_per_task):
                seed = rollout_seed(self.seed, self.number, rnd.warmup, rnd.index, m, k)
                jobs.append(Job(str(RolloutKey(rnd.warmup, rnd.index, task.name, m, k)), task, seed))
        return tuple(jobs)

    def probe_set(self, tasks: list[Task]) -> list[Task]:
        """The probe's tasks: the `probe_tasks` train tasks whose rewards the evidence at the end of
        the warm-up (its rollouts of the unchanged actor, and the prior) expects to vary most, so
        that the probe measures where the actor can still get better. Fixed for the stage."""
        if self._probe is None:
            s = self.settings
            k = s.probe_tasks or s.tasks_per_round
            if self.fresh is not None:
                self._probe, _ = self.fresh_tasks(tasks, s.critic_warmup_rounds, k, probe=True)
            else:
                self._probe, _ = self.frontier(tasks, s.critic_warmup_rounds, k)
        return self._probe

    def probe_jobs(self, tasks: list[Task]) -> tuple[Job, ...]:
        """The same jobs for every probe of the stage, so that two probes' rollouts differ only by
        the actor (and the sampler's batching)."""
        return tuple(
            Job(str(ProbeKey(task.name, m, k)), task, probe_seed(self.seed, self.number, m, k))
            for m, task in enumerate(self.probe_set(tasks))
            for k in range(self.settings.probe_episodes)
        )

    def probe(self, tasks: list[Task], index: int) -> Plan | None:
        """The probe of the actor after `index` joint rounds; None where none is due: the probe is
        off, or `index` is neither a multiple of `probe_every` nor the last round."""
        s = self.settings
        if not s.probe_tasks or not tasks or (index % s.probe_every and index != s.rounds):
            return None
        return Plan(
            rpr_probe_scope(self.number, index),
            self.probe_jobs(tasks),
            s.critic_warmup_rounds + index,
            "rpr-probe",
            f"RPR stage {self.number} during the probe after joint round {index}",
        )
