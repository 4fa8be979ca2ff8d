"""What an RSR round reports: its counts, and the funnel from explore successes to samples.

The funnel says how many survive each step: explore successes -> runbooks drafted -> passed the
leak scan -> approved -> replays passed -> samples. Where a model too small for a step made the
round fall back (the template wrote the runbook, the deterministic checks decided instead of an
unreadable verdict), the notes say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.config import RsrConfig
from engine.keys import ExploreKey
from engine.rsr.records import RoundRecords
from engine.store import Store


@dataclass(frozen=True)
class RoundReport:
    round: int
    stage: str
    explored: int
    successes: int
    runbooks: dict[str, int]
    replays: int
    replay_successes: int
    samples: int
    checkpoint: str
    notes: tuple[str, ...] = field(default=())
    # How many survive each step: explore successes -> runbooks drafted -> passed the leak scan
    # -> approved -> replays passed -> samples (FUNNEL names the steps).
    funnel: dict[str, int] = field(default_factory=dict)
    # The digests of the samples SFT trained on: the balanced subset of `samples`.
    trained_digests: tuple[str, ...] = ()


FUNNEL = ("explore successes", "runbooks drafted", "passed the leak scan", "approved", "replays passed", "samples")


def funnel(store: Store, round: int) -> dict[str, int]:
    explore = store.rsr.jobs(round, "explore")
    replay = store.rsr.jobs(round, "replay")
    runbooks = store.runbooks.list(round=round)
    counts = (
        sum(ok for _, ok in explore.values()),
        len(runbooks),
        sum(1 for rb in runbooks if rb.leak is None or not rb.leak.leaked),
        sum(1 for rb in runbooks if rb.status == "approved"),
        sum(ok for _, ok in replay.values()),
        len(store.rsr.samples(round)),
    )
    return dict(zip(FUNNEL, counts))


def funnel_notes(store: Store, round: int, settings: RsrConfig) -> list[str]:
    """What a model too small for a step made the round do instead, said plainly."""
    runbooks = store.runbooks.list(round=round)
    notes = []
    explore = store.rsr.jobs(round, "explore")
    aided = [ok for key, (_, ok) in explore.items() if ExploreKey.parse(key).aided]
    if aided:
        unaided = [ok for key, (_, ok) in explore.items() if not ExploreKey.parse(key).aided]
        notes.append(
            f"{sum(aided)} of {sum(ok for _, ok in explore.values())} explore successes came from the "
            f"{len(aided)} attempt(s) shown worked examples (the round's own successes on similar tasks): "
            f"{sum(aided) / len(aided):.1%} passed, against {sum(unaided)} of {len(unaided)} unaided"
        )
    template = sum(1 for rb in runbooks if rb.author == "template")
    if template:
        notes.append(
            f"{template} of {len(runbooks)} runbook(s) were built from the commands by the template "
            "(the model's own draft was unusable)"
        )
    unparsed = sum(
        1
        for rb in runbooks
        if rb.verdict is not None and any("was not a JSON verdict" in r for r in rb.verdict.reasons)
    )
    if unparsed:
        notes.append(
            f"the reviewer's verdict was unreadable for {unparsed} runbook(s); "
            f"reviewer_unparseable = {settings.reviewer_unparseable!r} decided"
        )
    from_explore = sum(1 for sample in store.rsr.samples(round) if not sample.provenance.runbook_id)
    if from_explore:
        trimmed = sum(1 for _, ok in store.rsr.jobs(round, "prefix").values() if ok)
        notes.append(
            f"{from_explore} sample(s) are explore successes whose task no replay reproduced "
            f"(explore_fallback); {trimmed} command prefix(es) re-run in fresh sandboxes passed every check"
        )
    return notes


def round_report(
    records: RoundRecords, settings: RsrConfig, checkpoint: str, notes: list[str], trained: tuple[str, ...]
) -> RoundReport:
    """The finished round's report: its counts, its funnel, and the notes of its phases followed
    by the funnel's own (each once)."""
    store, round = records.store, records.round
    explore = records.finished("explore")
    replay = records.finished("replay")
    notes = [*notes, *(n for n in funnel_notes(store, round, settings) if n not in notes)]
    return RoundReport(
        round,
        "done",
        len(explore),
        sum(ok for _, ok in explore.values()),
        records.runbook_counts(),
        len(replay),
        sum(ok for _, ok in replay.values()),
        len(records.samples()),
        checkpoint,
        tuple(notes),
        funnel(store, round),
        trained,
    )
