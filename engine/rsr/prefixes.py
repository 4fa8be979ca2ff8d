"""Verified prefixes: the fewest leading commands of an explore success that still pass every check.

An explore success often goes on acting after the work is done; those turns teach nothing, and
a worked example or a runbook drawn from them only adds noise. So its commands are re-run, each
leading prefix in a fresh sandbox by a `CommandsAgent` (keyed jobs, scope rsr/N/prefix), and the
shortest that passes is what the explore phase shows as an example, the runbooks phase distills
and the dataset phase trains on. The jobs are keyed, so whichever phase asks first runs them and
the others find them stored.

Reads: the round's prefix jobs. Writes: prefix episodes and their job records.
Returns: explore key -> the kept steps (or the shortest passing prefix length).
"""

from __future__ import annotations

from engine.keys import ExploreKey, PrefixKey
from engine.results import AgentStep
from engine.rollout.agent_spec import AgentSpec, SpecAgentFactory
from engine.rollout.runner import EpisodeJob
from engine.rsr.work import RoundWork
from engine.tasks import Task

Steps = dict[str, list[AgentStep]]  # explore job key (as stored) -> the episode's steps


class VerifiedPrefixes:
    """The prefix re-runs of one round over its tasks, for every phase that needs them."""

    def __init__(self, work: RoundWork, tasks: dict[str, Task]) -> None:
        self.work, self.tasks = work, tasks

    def cut(self, steps: Steps) -> Steps:
        """Each success's steps up to its shortest passing prefix, with `trim_to_verified_prefix`
        (all of them without it, or when none shorter passes)."""
        keep = self.shortest(steps) if self.work.settings.trim_to_verified_prefix else {}
        return {key: found[: keep.get(key, len(found))] for key, found in steps.items()}

    def shortest(self, steps: Steps) -> dict[str, int]:
        """explore key -> the fewest leading steps whose commands, re-run in a fresh sandbox, pass
        every check; a success that needs all its steps is absent. Runs the prefixes not yet stored."""
        done = self.work.records.finished("prefix")
        jobs = []
        for key, found in steps.items():
            for k in range(1, len(found)):
                if str(PrefixKey(key, k)) not in done:
                    commands = tuple(s.command for s in found[:k] if s.command)
                    agent = SpecAgentFactory(AgentSpec("commands", commands=commands))
                    jobs.append((str(PrefixKey(key, k)), EpisodeJob(self.tasks[ExploreKey.parse(key).task], agent)))
        if jobs:
            # Reported as the dataset phase whichever phase asks: it is the dataset's trimming.
            self.work.progress("dataset", f"re-running {len(jobs)} command prefix(es) of explore successes")
            self.work.run_jobs("prefix", jobs)
        shortest: dict[str, int] = {}
        for prefix in self.work.records.passing_prefixes():
            if prefix.explore in steps:
                shortest[prefix.explore] = min(shortest.get(prefix.explore, len(steps[prefix.explore])), prefix.steps)
        return shortest
