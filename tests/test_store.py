"""The SQLite store: schema versioning, WAL, round trips, interrupted runs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engine.agents import AgentStep
from engine.episode import EpisodeResult
from engine.store import SCHEMA_VERSION, Store, StoreError
from engine.verifier_results import CheckResult


def _result(run_id: str, episode_id: str = "e1", **kw) -> EpisodeResult:
    base = dict(
        episode_id=episode_id, run_id=run_id, task="count-lines-1", split="train", agent="oracle",
        backend="local", attempt=0, status="completed", success=True, checks_passed=2, checks_total=2,
        reward=1.0, checks=(CheckResult("a", "passed"), CheckResult("b", "passed")),
        steps=(AgentStep("bash /solution/solve.sh", "ok\n", 0, False, 0.01),), started_at="2026-01-01T00:00:00",
    )
    base.update(kw)
    return EpisodeResult(**base)


def test_fresh_database_has_current_schema_and_wal(tmp_path: Path):
    store = Store(tmp_path / "db.sqlite")
    assert store.schema_version() == SCHEMA_VERSION
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_episode_round_trip(store: Store):
    run_id = store.create_run("eval", backend="local", agent="oracle", tasks_path="x", total=1, config={})
    store.record_episode(_result(run_id))
    store.record_episode(_result(run_id, "e2", success=False, reward=None, status="verifier_error",
                                 checks_passed=0, checks_total=0, checks=(), error="no results"))
    store.finish_run(run_id, "finished", {"success_rate": 1.0, "episodes": 2})
    eps = store.episodes(run_id)
    assert [(e.id, e.success, e.reward) for e in eps] == [("e1", True, 1.0), ("e2", False, None)]
    assert [c.name for c in store.checks("e1")] == ["a", "b"]
    assert store.steps("e1")[0].command == "bash /solution/solve.sh"
    assert store.run(run_id).status == "finished" and store.run(run_id).success_rate == 1.0


def test_reopening_keeps_data_and_does_not_remigrate(tmp_path: Path):
    path = tmp_path / "db.sqlite"
    s = Store(path)
    run_id = s.create_run("eval", backend="local", agent="nop", tasks_path="x", total=1, config={})
    s.record_episode(_result(run_id))
    s.finish_run(run_id, "finished", {})
    s.close()
    again = Store(path)
    assert len(again.episodes(run_id)) == 1


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
    run_id = s.create_run("eval", backend="local", agent="oracle", tasks_path="x", total=3, config={})
    s.db["runs"].update(run_id, {"pid": 2**22 + 12345})  # a pid that is not running
    s.close()
    assert Store(path).run(run_id).status == "interrupted"


def test_a_failed_episode_write_leaves_nothing_half_stored(store: Store):
    run_id = store.create_run("eval", backend="local", agent="oracle", tasks_path="x", total=1, config={})
    store.record_episode(_result(run_id, "dup"))
    with pytest.raises(Exception):
        # Same episode id again: the episode insert fails, and its checks must not be added either.
        store.record_episode(_result(run_id, "dup", checks=(CheckResult("c", "passed"),) * 5))
    assert len(store.checks("dup")) == 2


def test_an_older_database_is_migrated_in_place(tmp_path: Path):
    import sqlite_utils

    from engine.store import MIGRATIONS

    path = tmp_path / "old.sqlite"
    db = sqlite_utils.Database(path)
    db["meta"].create({"key": str, "value": str}, pk="key")
    MIGRATIONS[0](db)  # a database as schema v1 left it, with data
    db["meta"].insert({"key": "schema_version", "value": "1"})
    db["runs"].insert({"id": "old-run", "kind": "eval", "status": "finished", "summary": "{}"})
    db["episodes"].insert({"id": "old-ep", "run_id": "old-run", "task": "t", "success": 1, "checks_passed": 1,
                           "checks_total": 1, "reward": 1.0, "started_at": "x", "duration_s": 1.0})
    db.conn.close()
    store = Store(path)
    assert store.schema_version() == SCHEMA_VERSION
    (ep,) = store.episodes("old-run")
    assert ep.success and ep.resource_events == ()
    store.record_episode(_result("old-run", "new-ep", resource_events=("oom_kill",)))
    by_id = {e.id: e for e in store.episodes("old-run")}
    assert by_id["new-ep"].resource_events == ("oom_kill",) and by_id["old-ep"].resource_events == ()


def test_runbook_queue_round_trip_keeps_the_original_beside_an_edit(tmp_path: Path):
    from engine.runbooks import LeakReport, ReviewVerdict, RunbookDraft

    store = Store(tmp_path / "db.sqlite")
    draft = RunbookDraft(
        task="count-lines", round=1, source_episode_id="ep-1", text="# Goal\n1. run `wc -l`", harness="xml-bash",
        leak=LeakReport(0.0), verdict=ReviewVerdict(True, True, False, True, ("steps are concrete",)),
    )
    rid = store.add_runbook(draft)
    assert [r.id for r in store.runbooks(status="pending")] == [rid]
    edited = store.edit_runbook(rid, "# Goal\n1. run `wc -l < file`")
    assert edited.edited and edited.original_text == draft.text and edited.status == "pending"
    store.decide_runbook(rid, "approved", by="human", note="fine")
    reopened = Store(tmp_path / "db.sqlite").runbook(rid)
    assert (reopened.status, reopened.decided_by, reopened.note) == ("approved", "human", "fine")
    assert reopened.verdict.reasons == ("steps are concrete",) and reopened.leak.score == 0.0
    assert store.runbooks(status="pending") == []
    with pytest.raises(ValueError):
        store.decide_runbook(rid, "maybe", by="human")


def test_metrics_and_stage_records_round_trip(tmp_path: Path):
    from engine.metrics import MetricPoint, StageRecord

    store = Store(tmp_path / "db.sqlite")
    store.log_metrics([MetricPoint("r1", "RSR-1", "sft/loss", i, 2.0 - i / 10) for i in range(5)])
    store.log_metrics([MetricPoint("r1", "RSR-1", "sft/loss", 4, 1.5)])  # a resumed step overwrites, never duplicates
    points = store.metrics("r1", "sft/loss")
    assert [p.step for p in points] == [0, 1, 2, 3, 4] and points[-1].value == 1.5
    store.put_stage(StageRecord("Base", "done", eval_run_id="e1", pass_at_1=0.1, ci_low=0.0, ci_high=0.25))
    assert store.stages()["Base"].pass_text == "0.100 [0.000, 0.250]"
