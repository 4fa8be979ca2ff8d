"""Pipeline stages over training seeds: mean pass@1 with a 95% interval, and the paired gain over the parent.

Every lineage is evaluated on the same eval tasks with the same sampling seeds, so a stage's
episodes pair up with its parent's (same task, same sampling seed) in the same lineage. Base is
shared by every lineage, so its row has one value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from engine.keys import EvalKey, eval_scope
from engine.pipeline.lineage import Lineage
from engine.stats import Interval, bootstrap_over_seeds
from engine.store import Store
from engine.store.records import PIPELINE_STAGES


@dataclass(frozen=True)
class StageOverSeeds:
    stage: str
    seeds: tuple[int, ...]  # the training seeds whose evaluation of this stage is done
    per_seed: tuple[float, ...]  # each seed's pass@1, in the order of `seeds`
    mean: Interval | None  # over seeds and tasks; None while no seed has finished the stage
    parent: str
    gain: Interval | None  # pass@1(stage) - pass@1(parent), paired by task and sampling seed


def task_outcomes(store: Store, stage_key: str) -> dict[str, dict[str, bool]]:
    """task -> {sampling seed: success} of a stage's scored evaluation episodes."""
    jobs = store.jobs.finished(eval_scope(stage_key))
    episodes = {e.id: e for e in store.runs.episodes_by_id([j.episode_id for j in jobs.values()])}
    out: dict[str, dict[str, bool]] = {}
    for key, job in jobs.items():
        episode = episodes.get(job.episode_id)
        if episode is None or episode.reward is None:
            continue  # an infrastructure failure: no outcome, as in the stage's own pass@1
        k = EvalKey.parse(key)
        out.setdefault(k.task, {})[str(k.sampling_seed)] = bool(episode.success)
    return out


def _rates(outcomes: dict[str, dict[str, bool]]) -> dict[str, float]:
    return {task: sum(v.values()) / len(v) for task, v in outcomes.items() if v}


def _paired_gain(child: dict[str, dict[str, bool]], parent: dict[str, dict[str, bool]]) -> dict[str, float]:
    gains = {}
    for task in set(child) & set(parent):
        shared = sorted(set(child[task]) & set(parent[task]))
        if shared:
            gains[task] = sum(child[task][s] - parent[task][s] for s in shared) / len(shared)
    return gains


Outcomes = dict[str, dict[str, bool]]  # task -> {sampling seed: success}


def summarize(
    store: Store, seeds: list[int], keep: Callable[[str], bool] | None = None, read: dict[str, Outcomes] | None = None
) -> list[StageOverSeeds]:
    """Every stage over `seeds`; with `keep`, over the eval tasks it keeps (by name) alone, such as
    one tier of the curriculum (engine/pipeline/families.py). `read` caches what was read, for
    several calls over one store."""
    stored = store.stages.all()
    read = {} if read is None else read

    def outcomes_of(key: str) -> Outcomes:
        """Each stage's episodes are read once: a stage is also the next one's parent, and Base every lineage's."""
        if key not in read:
            read[key] = task_outcomes(store, key)
        found = read[key]
        return found if keep is None else {task: v for task, v in found.items() if keep(task)}

    rows = []
    for i, name in enumerate(PIPELINE_STAGES):
        parent = PIPELINE_STAGES[i - 1] if i else ""
        done, rates, gains = [], [], []
        for seed in seeds:
            lineage = Lineage(seed)
            record = stored.get(lineage.stage_key(name))
            if record is None or record.status != "done":
                continue
            outcomes = outcomes_of(lineage.stage_key(name))
            if not outcomes:
                continue
            if done and name == "Base":
                continue  # shared: one lineage's evaluation is every lineage's
            done.append(seed)
            rates.append(_rates(outcomes))
            if parent:
                gains.append(_paired_gain(outcomes, outcomes_of(lineage.stage_key(parent))))
        per_seed = tuple(sum(r.values()) / len(r) for r in rates)
        mean = bootstrap_over_seeds(rates) if rates else None
        gain = bootstrap_over_seeds(gains) if gains and all(gains) else None
        rows.append(StageOverSeeds(name, tuple(done), per_seed, mean, parent, gain))
    return rows
