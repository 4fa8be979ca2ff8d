"""The SQLite store: schema versioning, WAL, round trips, interrupted runs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engine.results import AgentStep, CheckResult, EpisodeResult
from engine.store import SCHEMA_VERSION, Store, StoreError


def _result(run_id: str, episode_id: str = "e1", **kw) -> EpisodeResult:
    base = dict(
        episode_id=episode_id,
        run_id=run_id,
        task="count-lines-1",
        split="train",
        agent="oracle",
        backend="local",
        attempt=0,
        status="completed",
        success=True,
        checks_passed=2,
        checks_total=2,
        reward=1.0,
        checks=(CheckResult("a", "passed"), CheckResult("b", "passed")),
        steps=(AgentStep("bash /solution/solve.sh", "ok\n", 0, False, 0.01),),
        started_at="2026-01-01T00:00:00",
    )
    base.update(kw)
    return EpisodeResult(**base)


def test_fresh_database_has_current_schema_and_wal(tmp_path: Path):
    store = Store(tmp_path / "db.sqlite")
    assert store.schema_version() == SCHEMA_VERSION
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_episode_round_trip(store: Store):
    run_id = store.runs.create("eval", backend="local", agent="oracle", tasks_path="x", total=1, config={})
    store.runs.record_episode(_result(run_id))
    store.runs.record_episode(
        _result(
            run_id,
            "e2",
            success=False,
            reward=None,
            status="verifier_error",
            checks_passed=0,
            checks_total=0,
            checks=(),
            error="no results",
        )
    )
    store.runs.finish(run_id, "finished", {"success_rate": 1.0, "episodes": 2})
    eps = store.runs.episodes(run_id)
    assert [(e.id, e.success, e.reward) for e in eps] == [("e1", True, 1.0), ("e2", False, None)]
    assert [c.name for c in store.runs.checks("e1")] == ["a", "b"]
    assert store.runs.steps("e1")[0].command == "bash /solution/solve.sh"
    assert store.runs.get(run_id).status == "finished" and store.runs.get(run_id).success_rate == 1.0


def test_reopening_keeps_data_and_does_not_remigrate(tmp_path: Path):
    path = tmp_path / "db.sqlite"
    s = Store(path)
    run_id = s.runs.create("eval", backend="local", agent="nop", tasks_path="x", total=1, config={})
    s.runs.record_episode(_result(run_id))
    s.runs.finish(run_id, "finished", {})
    s.close()
    again = Store(path)
    assert len(again.runs.episodes(run_id)) == 1


def test_a_newer_schema_is_refused(tmp_path: Path):
    path = tmp_path / "db.sqlite"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer than this trsi-tui"):
        Store(path)


def test_not_a_database_is_a_clear_error(tmp_path: Path):
    path = tmp_path / "db.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a usable trsi-tui database"):
        Store(path)


def test_runs_of_dead_processes_are_marked_interrupted(tmp_path: Path):
    path = tmp_path / "db.sqlite"
    s = Store(path)
    run_id = s.runs.create("eval", backend="local", agent="oracle", tasks_path="x", total=3, config={})
    s.db["runs"].update(run_id, {"pid": 2**22 + 12345})  # a pid that is not running
    s.close()
    assert Store(path).runs.get(run_id).status == "interrupted"


def test_a_stage_whose_process_is_gone_shows_as_interrupted_not_running(tmp_path: Path):
    """`pipeline status` after a runner was killed (SIGKILL, a closed terminal) must not say "running"."""
    from engine.store.records import StageRecord

    path = tmp_path / "db.sqlite"
    s = Store(path)
    s.stages.put(StageRecord("RPR-1", "running", parent="RSR-1", detail="round 3/12 (joint)"))
    s.stages.put(StageRecord("RSR-1", "done", checkpoint="ckpt"))
    s.close()
    # Reopened while this process (the one running it) lives: still running.
    assert Store(path).stages.all()["RPR-1"].status == "running"
    s = Store(path)
    s.db["stages"].update("RPR-1", {"pid": 2**22 + 12345})  # a pid that is not running
    s.close()
    stages = Store(path).stages.all()
    assert stages["RPR-1"].status == "interrupted"
    assert "run the pipeline again" in stages["RPR-1"].detail
    assert stages["RSR-1"].status == "done"


def test_a_failed_episode_write_leaves_nothing_half_stored(store: Store):
    run_id = store.runs.create("eval", backend="local", agent="oracle", tasks_path="x", total=1, config={})
    store.runs.record_episode(_result(run_id, "dup"))
    with pytest.raises(Exception):
        # Same episode id again: the episode insert fails, and its checks must not be added either.
        store.runs.record_episode(_result(run_id, "dup", checks=(CheckResult("c", "passed"),) * 5))
    assert len(store.runs.checks("dup")) == 2


def test_an_older_database_is_migrated_in_place(tmp_path: Path):
    import sqlite_utils

    from engine.store import MIGRATIONS

    path = tmp_path / "old.sqlite"
    db = sqlite_utils.Database(path)
    db["meta"].create({"key": str, "value": str}, pk="key")
    MIGRATIONS[0](db)  # a database as schema v1 left it, with data
    db["meta"].insert({"key": "schema_version", "value": "1"})
    db["runs"].insert({"id": "old-run", "kind": "eval", "status": "finished", "summary": "{}"})
    db["episodes"].insert(
        {
            "id": "old-ep",
            "run_id": "old-run",
            "task": "t",
            "success": 1,
            "checks_passed": 1,
            "checks_total": 1,
            "reward": 1.0,
            "started_at": "x",
            "duration_s": 1.0,
        }
    )
    db.conn.close()
    store = Store(path)
    assert store.schema_version() == SCHEMA_VERSION
    (ep,) = store.runs.episodes("old-run")
    assert ep.success and ep.resource_events == ()
    store.runs.record_episode(_result("old-run", "new-ep", resource_events=("oom_kill",)))
    by_id = {e.id: e for e in store.runs.episodes("old-run")}
    assert by_id["new-ep"].resource_events == ("oom_kill",) and by_id["old-ep"].resource_events == ()


def test_runbook_queue_round_trip_keeps_the_original_beside_an_edit(tmp_path: Path):
    from engine.store.records import LeakReport, ReviewVerdict, RunbookDraft

    store = Store(tmp_path / "db.sqlite")
    draft = RunbookDraft(
        task="count-lines",
        round=1,
        source_episode_id="ep-1",
        text="# Goal\n1. run `wc -l`",
        harness="xml-bash",
        leak=LeakReport(0.0),
        verdict=ReviewVerdict(True, True, False, True, ("steps are concrete",)),
    )
    rid = store.runbooks.add(draft)
    assert [r.id for r in store.runbooks.list(status="pending")] == [rid]
    edited = store.runbooks.edit(rid, "# Goal\n1. run `wc -l < file`")
    assert edited.edited and edited.original_text == draft.text and edited.status == "pending"
    store.runbooks.decide(rid, "approved", by="human", note="fine")
    reopened = Store(tmp_path / "db.sqlite").runbooks.get(rid)
    assert (reopened.status, reopened.decided_by, reopened.note) == ("approved", "human", "fine")
    assert reopened.verdict.reasons == ("steps are concrete",) and reopened.leak.score == 0.0
    assert store.runbooks.list(status="pending") == []
    with pytest.raises(ValueError):
        store.runbooks.decide(rid, "maybe", by="human")


def test_metrics_and_stage_records_round_trip(tmp_path: Path):
    from engine.store.records import MetricPoint, StageRecord

    store = Store(tmp_path / "db.sqlite")
    store.metrics.log([MetricPoint("r1", "RSR-1", "sft/loss", i, 2.0 - i / 10) for i in range(5)])
    store.metrics.log([MetricPoint("r1", "RSR-1", "sft/loss", 4, 1.5)])  # a resumed step overwrites, never duplicates
    points = store.metrics.points("r1", "sft/loss")
    assert [p.step for p in points] == [0, 1, 2, 3, 4] and points[-1].value == 1.5
    store.stages.put(StageRecord("Base", "done", eval_run_id="e1", pass_at_1=0.1, ci_low=0.0, ci_high=0.25))
    assert store.stages.all()["Base"].pass_text == "0.100 [0.000, 0.250]"


def test_a_database_written_by_schema_v5_migrates_and_keeps_everything(tmp_path: Path):
    """tests/fixtures/store/schema-v5.sqlite was written by the store before the keyed-jobs merge."""
    import shutil

    path = tmp_path / "old.sqlite"
    shutil.copy(Path(__file__).parent / "fixtures" / "store" / "schema-v5.sqlite", path)
    store = Store(path)
    assert store.schema_version() == SCHEMA_VERSION
    tables = set(store.db.table_names())
    assert "jobs" in tables and not tables & {"rsr_jobs", "rpr_jobs", "stage_jobs"}
    episode = store.runs.episodes()[0]
    assert len(store.runs.list()) == 2 and len(store.runs.episodes()) == 11
    assert store.rsr.jobs(1, "explore") == {"count-lines-1/xml-bash/0": (episode.id, True)}
    assert store.rsr.jobs(1, "replay") == {"rb-1/0": (episode.id, False)}
    assert store.rpr.jobs(1, 1) == {"copy-file-1/0": episode.id} and store.rpr.jobs(1, 2) == {
        "copy-file-1/0": episode.id
    }
    assert {k: j.episode_id for k, j in store.jobs.finished("stage/Base").items()} == {"count-lines-3/0": episode.id}
    assert store.rsr.round(1).stage == "replay" and store.rpr.run(1).iteration == 2
    assert [s.ids for s in store.rsr.samples(1)] == [(1, 2, 3)]
    assert len(store.runbooks.list()) == 3 and store.stages.all()["Base"].pass_at_1 == 0.5
    assert len(store.metrics.points("20261129-130000-sft001", "sft/loss")) == 40
    # New work goes to the merged table and reads back through the same calls.
    store.jobs.done("rsr/1/explore", "k2", episode.run_id, episode.id, False)
    assert len(store.rsr.jobs(1, "explore")) == 2
