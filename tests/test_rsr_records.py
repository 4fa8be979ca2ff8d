"""An RSR round's named store operations (engine/rsr/records.py), on a store written by hand."""

from __future__ import annotations

from pathlib import Path

from engine.keys import ExploreKey, PrefixKey, ReplayKey
from engine.rsr.explore import pass_estimates
from engine.rsr.records import RoundRecords
from engine.store import Store
from engine.store.records import LeakReport, ReviewVerdict, RunbookDraft
from tests.tui_data import _checks, _episode


def test_a_rounds_records_read_back_in_the_order_the_phases_rely_on(tmp_path: Path):
    store = Store(tmp_path / "db.sqlite")
    run_id = store.runs.create("rsr-explore", backend="local", agent="model", tasks_path="", total=3, config={})
    episodes = [
        _episode(run_id, 0, "t", "model", success=True, checks=_checks(("a", True))),
        _episode(run_id, 1, "t", "model", success=False, checks=_checks(("a", False)), reward=0.25),
        _episode(run_id, 2, "s", "model", success=False, checks=(), status="infra_error"),  # no reward
    ]
    for e in episodes:
        store.runs.record_episode(e)
    ep = [e.episode_id for e in episodes]
    for key, episode, ok in [
        ("t|h|1|aided", ep[0], True),
        ("t|h|0", ep[1], False),
        ("s|h|0", ep[2], False),
        ("a|h|0", "never-stored", True),
    ]:
        store.jobs.done("rsr/1/explore", key, run_id, episode, ok)
    store.jobs.done("rsr/2/explore", "t|h|0", run_id, ep[0], True)  # another round's: not this one's
    records = RoundRecords(store, 1)

    attempts = records.explore_attempts()
    assert [a.job_key for a in attempts] == ["t|h|1|aided", "t|h|0", "s|h|0", "a|h|0"]  # as stored
    assert attempts[0].key == ExploreKey("t", "h", 1, aided=True)
    assert [a.reward for a in attempts] == [1.0, 0.25, 0.0, 0.0]  # no reward, or no episode: 0
    assert [a.job_key for a in records.successes()] == ["a|h|0", "t|h|1|aided"]  # by key
    estimates = pass_estimates(attempts, {"t": None, "s": None, "b": None})
    assert (estimates["t"].attempts, estimates["t"].successes) == (1, 0)  # the aided success is left out
    assert estimates["b"].attempts == 0 and estimates["a"].successes == 1

    store.jobs.done("rsr/1/nop", "t", run_id, ep[1], False)
    store.jobs.done("rsr/1/nop", "s", run_id, ep[2], False)
    assert records.nop_rewards() == {"t": 0.25}  # a nop episode without a reward sets no floor

    store.jobs.done("rsr/1/replay", "rb|1", run_id, ep[0], True)
    store.jobs.done("rsr/1/replay", "rb|0", run_id, ep[1], False)
    assert [(o.key, o.success) for o in records.replay_outcomes()] == [
        (ReplayKey("rb", 0), False),
        (ReplayKey("rb", 1), True),
    ]
    store.jobs.done("rsr/1/prefix", "t|h|1|aided|1", run_id, ep[1], False)
    store.jobs.done("rsr/1/prefix", "t|h|1|aided|2", run_id, ep[0], True)
    assert records.passing_prefixes() == [PrefixKey("t|h|1|aided", 2)]

    verdict = ReviewVerdict(True, True, False, True, ("ok",))
    for status in ("approved", "rejected", "approved"):
        draft = RunbookDraft("t", 1, ep[0], "# Goal", "h", LeakReport(0.0), verdict)
        records.add_runbook(draft, status=status, decided_by="auto")
    store.runbooks.add(RunbookDraft("t", 2, ep[0], "# Goal", "h", LeakReport(0.0), verdict), status="pending")
    assert records.runbook_counts() == {"approved": 2, "rejected": 1}
    assert len(records.runbooks(status="approved")) == 2

    assert records.record() is None and records.checkpoint() == ""
    records.open(model="bundled:m", tasks_path="suite", settings="{}")
    records.progress("replay", "2 replay(s) to run")
    assert (records.record().stage, records.record().detail) == ("replay", "2 replay(s) to run")
    records.set_checkpoint("bundled:m+lora=x.gguf")
    assert records.checkpoint() == "bundled:m+lora=x.gguf" and records.record().model == "bundled:m"
