"""SQLite persistence for runs, episodes, checks and agent steps (sqlite-utils, WAL).

The schema carries a version in `meta`; `MIGRATIONS[i]` takes version i to i+1, so an older
database is upgraded in place and a newer one is refused with a clear message rather than
misread. All writes of one episode happen in one transaction: a crash never leaves half an
episode behind.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import sqlite_utils

from engine.agents import AgentStep
from engine.episode import EpisodeResult
from engine.metrics import MetricPoint, StageRecord
from engine.runbooks import LeakReport, ReviewVerdict, Runbook, RunbookDraft


class StoreError(RuntimeError):
    pass


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _v1(db: sqlite_utils.Database) -> None:
    db["runs"].create(
        {"id": str, "kind": str, "created_at": str, "finished_at": str, "status": str, "pid": int,
         "backend": str, "agent": str, "tasks_path": str, "total": int, "config": str, "summary": str},
        pk="id",
    )
    db["episodes"].create(
        {"id": str, "run_id": str, "task": str, "split": str, "agent": str, "backend": str, "attempt": int,
         "status": str, "success": int, "checks_passed": int, "checks_total": int, "reward": float,
         "failure_mode": str, "error": str, "verifier_source": str, "verifier_output": str,
         "started_at": str, "duration_s": float, "phase_s": str},
        pk="id", foreign_keys=[("run_id", "runs", "id")],
    )
    db["episodes"].create_index(["run_id"])
    db["episodes"].create_index(["task"])
    db["checks"].create(
        {"episode_id": str, "idx": int, "name": str, "status": str, "message": str},
        pk=("episode_id", "idx"), foreign_keys=[("episode_id", "episodes", "id")],
    )
    db["steps"].create(
        {"episode_id": str, "idx": int, "command": str, "output": str, "exit_code": int,
         "timed_out": int, "duration_s": float},
        pk=("episode_id", "idx"), foreign_keys=[("episode_id", "episodes", "id")],
    )


def _v2(db: sqlite_utils.Database) -> None:
    db["episodes"].add_column("resource_events", str)


def _v3(db: sqlite_utils.Database) -> None:
    for name, kind in (("action_text", str), ("token_ids", str), ("logprobs", str), ("prompt_tokens", int),
                       ("parse_error", str), ("generation_s", float)):
        db["steps"].add_column(name, kind)
    db["episodes"].add_column("stop_reason", str)
    db["episode_tokens"].create({"episode_id": str, "ids": str, "mask": str, "messages": str, "harness": str,
                                 "model": str}, pk="episode_id", foreign_keys=[("episode_id", "episodes", "id")])


def _v4(db: sqlite_utils.Database) -> None:
    db["runbooks"].create(
        {"id": str, "task": str, "round": int, "source_episode_id": str, "harness": str, "status": str,
         "text": str, "original_text": str, "leak": str, "verdict": str, "decided_by": str, "note": str,
         "created_at": str, "updated_at": str, "author": str, "reviewer_raw": str},
        pk="id",
    )
    db["runbooks"].create_index(["status"])
    db["runbooks"].create_index(["round", "source_episode_id"])
    # RSR: one row per round (its stage cursor), one per finished job, and the SFT samples.
    db["rsr_rounds"].create({"round": int, "model": str, "tasks_path": str, "settings": str, "stage": str,
                             "checkpoint": str, "detail": str, "updated_at": str}, pk="round")
    db["rsr_jobs"].create({"round": int, "stage": str, "key": str, "run_id": str, "episode_id": str,
                           "success": int}, pk=("round", "stage", "key"))
    db["sft_samples"].create({"round": int, "digest": str, "ids": str, "mask": str, "task": str, "harness": str,
                              "source_episode_id": str, "replay_episode_id": str, "runbook_id": str},
                             pk=("round", "digest"))
    db["metrics"].create({"run_id": str, "stage": str, "name": str, "step": int, "value": float},
                         pk=("run_id", "name", "step"))
    db["stages"].create({"name": str, "status": str, "checkpoint": str, "parent": str, "eval_run_id": str,
                         "pass_at_1": float, "ci_low": float, "ci_high": float, "updated_at": str}, pk="name")


def _v5(db: sqlite_utils.Database) -> None:
    # RPR: one row per stage (its settings and where it stands), one per finished rollout.
    db["rpr_runs"].create({"round": int, "model": str, "tasks_path": str, "settings": str, "status": str,
                           "iteration": int, "checkpoint": str, "start_adapter": str, "critic_from": str,
                           "detail": str, "updated_at": str}, pk="round")
    db["rpr_jobs"].create({"round": int, "iteration": int, "key": str, "run_id": str, "episode_id": str,
                           "success": int}, pk=("round", "iteration", "key"))
    # Pipeline evaluations: one row per finished eval episode of a stage.
    db["stage_jobs"].create({"stage": str, "key": str, "run_id": str, "episode_id": str, "success": int},
                            pk=("stage", "key"))
    # Which data, config and parent produced each stage's checkpoint (JSON), and what it is doing.
    db["stages"].add_column("lineage", str)
    db["stages"].add_column("detail", str)


MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [_v1, _v2, _v3, _v4, _v5]
SCHEMA_VERSION = len(MIGRATIONS)


@dataclass(frozen=True)
class RunRecord:
    id: str
    kind: str
    created_at: str
    finished_at: str | None
    status: str
    backend: str
    agent: str
    tasks_path: str
    total: int
    summary: dict

    @property
    def success_rate(self) -> float | None:
        value = self.summary.get("success_rate")
        return float(value) if value is not None else None


@dataclass(frozen=True)
class EpisodeRecord:
    id: str
    run_id: str
    task: str
    split: str | None
    agent: str
    status: str
    success: bool
    checks_passed: int
    checks_total: int
    reward: float | None
    failure_mode: str
    error: str
    duration_s: float
    resource_events: tuple[str, ...] = ()
    stop_reason: str = ""


@dataclass(frozen=True)
class ModelRecord:
    ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    messages: list[dict] = field(default_factory=list)
    harness: str = ""
    model: str = ""


@dataclass(frozen=True)
class CheckRecord:
    name: str
    status: str
    message: str


class Store:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        self.db = sqlite_utils.Database(conn)
        self._lock = threading.RLock()
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{path}: not a usable trsi-tui database: {exc}") from None
        self._mark_dead_runs()

    # -- schema ----------------------------------------------------------------------------
    def schema_version(self) -> int:
        if "meta" not in self.db.table_names():
            return 0
        row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0]) if row else 0

    def _migrate(self) -> None:
        with self._lock:
            if "meta" not in self.db.table_names():
                self.db["meta"].create({"key": str, "value": str}, pk="key")
            current = self.schema_version()
            if current > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: database schema v{current} is newer than this trsi-tui (v{SCHEMA_VERSION}); upgrade trsi-tui"
                )
            for version in range(current, SCHEMA_VERSION):
                with self.db.atomic():
                    MIGRATIONS[version](self.db)
                    self.db["meta"].upsert({"key": "schema_version", "value": str(version + 1)}, pk="key")

    def _mark_dead_runs(self) -> None:
        """Runs left 'running' by a process that no longer exists were interrupted."""
        with self._lock:
            for row in self.db.query("SELECT id, pid FROM runs WHERE status = 'running'"):
                if not _pid_alive(row["pid"]):
                    self.db["runs"].update(row["id"], {"status": "interrupted"})

    # -- writes ----------------------------------------------------------------------------
    def create_run(self, kind: str, *, backend: str, agent: str, tasks_path: str, total: int, config: dict,
                   run_id: str | None = None) -> str:
        run_id = run_id or datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        with self._lock:
            self.db["runs"].insert({
                "id": run_id, "kind": kind, "created_at": _now(), "finished_at": None, "status": "running",
                "pid": os.getpid(), "backend": backend, "agent": agent, "tasks_path": tasks_path,
                "total": total, "config": json.dumps(config), "summary": "{}",
            })
        return run_id

    def finish_run(self, run_id: str, status: str, summary: dict) -> None:
        with self._lock:
            self.db["runs"].update(run_id, {"status": status, "finished_at": _now(), "summary": json.dumps(summary)})

    def record_episode(self, r: EpisodeResult) -> None:
        with self._lock, self.db.atomic():
            self.db["episodes"].insert({
                "id": r.episode_id, "run_id": r.run_id, "task": r.task, "split": r.split, "agent": r.agent,
                "backend": r.backend, "attempt": r.attempt, "status": r.status, "success": int(r.success),
                "checks_passed": r.checks_passed, "checks_total": r.checks_total, "reward": r.reward,
                "failure_mode": r.failure_mode, "error": r.error, "verifier_source": r.verifier_source,
                "verifier_output": r.verifier_output, "started_at": r.started_at,
                "duration_s": r.duration_s, "phase_s": json.dumps(r.phase_s),
                "resource_events": ",".join(r.resource_events), "stop_reason": r.stop_reason,
            })
            if r.token_ids:
                self.db["episode_tokens"].insert({"episode_id": r.episode_id, "ids": json.dumps(list(r.token_ids)),
                                                  "mask": json.dumps(list(r.token_mask)),
                                                  "messages": json.dumps(list(r.messages)), "harness": r.harness,
                                                  "model": r.model})
            self.db["checks"].insert_all(
                {"episode_id": r.episode_id, "idx": i, "name": c.name, "status": c.status, "message": c.message}
                for i, c in enumerate(r.checks)
            )
            self.db["steps"].insert_all(
                {"episode_id": r.episode_id, "idx": i, "command": s.command, "output": s.output,
                 "exit_code": s.exit_code, "timed_out": int(s.timed_out), "duration_s": s.duration_s,
                 "action_text": s.action_text, "token_ids": json.dumps(list(s.token_ids)),
                 "logprobs": json.dumps(list(s.logprobs)), "prompt_tokens": s.prompt_tokens,
                 "parse_error": s.parse_error, "generation_s": s.generation_s}
                for i, s in enumerate(r.steps)
            )

    # -- reads -----------------------------------------------------------------------------
    def runs(self, limit: int = 50) -> list[RunRecord]:
        with self._lock:
            rows = list(self.db.query("SELECT * FROM runs ORDER BY rowid DESC LIMIT ?", [limit]))
        return [_run(r) for r in rows]

    def run(self, run_id: str) -> RunRecord:
        with self._lock:
            rows = list(self.db.query("SELECT * FROM runs WHERE id = ?", [run_id]))
        if not rows:
            raise KeyError(run_id)
        return _run(rows[0])

    def episodes(self, run_id: str | None = None, task: str | None = None) -> list[EpisodeRecord]:
        where, args = [], []
        if run_id:
            where.append("run_id = ?")
            args.append(run_id)
        if task:
            where.append("task = ?")
            args.append(task)
        sql = "SELECT * FROM episodes" + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY started_at, task, attempt"
        with self._lock:
            rows = list(self.db.query(sql, args))
        return [_episode(r) for r in rows]

    def episode(self, episode_id: str) -> EpisodeRecord:
        with self._lock:
            rows = list(self.db.query("SELECT * FROM episodes WHERE id = ?", [episode_id]))
        if not rows:
            raise KeyError(episode_id)
        return _episode(rows[0])

    def latest_episode(self, task: str, agent: str, run_kind: str | None = None) -> EpisodeRecord | None:
        """The most recent stored episode of `task` by `agent` (optionally only in runs of one kind)."""
        sql = ("SELECT episodes.* FROM episodes JOIN runs ON runs.id = episodes.run_id "
               "WHERE episodes.task = ? AND episodes.agent = ?")
        args: list[object] = [task, agent]
        if run_kind:
            sql += " AND runs.kind = ?"
            args.append(run_kind)
        with self._lock:
            rows = list(self.db.query(sql + " ORDER BY episodes.rowid DESC LIMIT 1", args))
        return _episode(rows[0]) if rows else None

    def checks(self, episode_id: str) -> list[CheckRecord]:
        with self._lock:
            rows = list(self.db.query("SELECT * FROM checks WHERE episode_id = ? ORDER BY idx", [episode_id]))
        return [CheckRecord(r["name"], r["status"], r["message"] or "") for r in rows]

    def steps(self, episode_id: str) -> list[AgentStep]:
        """The agent's steps in order (their index is their position)."""
        with self._lock:
            rows = list(self.db.query("SELECT * FROM steps WHERE episode_id = ? ORDER BY idx", [episode_id]))
        return [
            AgentStep(r["command"], r["output"], r["exit_code"], bool(r["timed_out"]), r["duration_s"],
                      r["action_text"] or "", tuple(json.loads(r["token_ids"] or "[]")),
                      tuple(json.loads(r["logprobs"] or "[]")), r["prompt_tokens"] or 0, r["parse_error"] or "",
                      r["generation_s"] or 0.0)
            for r in rows
        ]

    def episode_tokens(self, episode_id: str) -> tuple[list[int], list[int]]:
        """The episode's token buffer and its sampled-token mask (empty for scripted agents)."""
        model = self.episode_model(episode_id)
        return model.ids, model.mask

    def episode_model(self, episode_id: str) -> "ModelRecord":
        """What a model episode was given and produced: opening messages, harness, model, buffer."""
        with self._lock:
            rows = list(self.db.query("SELECT * FROM episode_tokens WHERE episode_id = ?", [episode_id]))
        if not rows:
            return ModelRecord()
        r = rows[0]
        return ModelRecord(json.loads(r["ids"]), json.loads(r["mask"]), json.loads(r.get("messages") or "[]"),
                           r.get("harness") or "", r.get("model") or "")

    # -- runbooks --------------------------------------------------------------------------
    def add_runbook(self, draft: RunbookDraft, *, status: str = "pending", decided_by: str = "") -> str:
        runbook_id = uuid.uuid4().hex[:12]
        now = _now()
        with self._lock:
            self.db["runbooks"].insert({
                "id": runbook_id, "task": draft.task, "round": draft.round,
                "source_episode_id": draft.source_episode_id, "harness": draft.harness, "status": status,
                "text": draft.text, "original_text": draft.text,
                "leak": json.dumps(asdict(draft.leak)) if draft.leak else None,
                "verdict": json.dumps(asdict(draft.verdict)) if draft.verdict else None,
                "decided_by": decided_by, "note": "", "created_at": now, "updated_at": now,
                "author": draft.author, "reviewer_raw": draft.reviewer_raw,
            })
        return runbook_id

    def runbooks(self, status: str | None = None, round: int | None = None) -> list[Runbook]:
        """Drafts in the order they were written, optionally of one status and one RSR round."""
        where, args = [], []
        if status:
            where.append("status = ?")
            args.append(status)
        if round is not None:
            where.append("round = ?")
            args.append(round)
        sql = "SELECT * FROM runbooks" + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY rowid"
        with self._lock:
            rows = list(self.db.query(sql, args))
        return [_runbook(r) for r in rows]

    def runbook(self, runbook_id: str) -> Runbook:
        with self._lock:
            rows = list(self.db.query("SELECT * FROM runbooks WHERE id = ?", [runbook_id]))
        if not rows:
            raise KeyError(runbook_id)
        return _runbook(rows[0])

    def edit_runbook(self, runbook_id: str, text: str) -> Runbook:
        """A person's edit; the original stays stored beside it."""
        self.runbook(runbook_id)
        with self._lock:
            self.db["runbooks"].update(runbook_id, {"text": text, "updated_at": _now()})
        return self.runbook(runbook_id)

    def decide_runbook(self, runbook_id: str, status: str, *, by: str, note: str = "") -> Runbook:
        if status not in ("approved", "rejected", "pending"):
            raise ValueError(f"unknown runbook status {status!r}")
        self.runbook(runbook_id)
        with self._lock:
            self.db["runbooks"].update(runbook_id, {"status": status, "decided_by": by, "note": note,
                                                    "updated_at": _now()})
        return self.runbook(runbook_id)

    # -- RSR rounds ---------------------------------------------------------------------------
    def rsr_round(self, round: int) -> dict | None:
        with self._lock:
            rows = list(self.db.query("SELECT * FROM rsr_rounds WHERE round = ?", [round]))
        return rows[0] if rows else None

    def next_rsr_round(self) -> int:
        with self._lock:
            row = self.db.execute("SELECT MAX(round) FROM rsr_rounds").fetchone()
        return (row[0] or 0) + 1

    def put_rsr_round(self, round: int, **fields: object) -> None:
        with self._lock:
            self.db["rsr_rounds"].upsert({"round": round, **fields, "updated_at": _now()}, pk="round")

    def rsr_job_done(self, round: int, stage: str, key: str, run_id: str, episode_id: str, success: bool) -> None:
        with self._lock:
            self.db["rsr_jobs"].upsert({"round": round, "stage": stage, "key": key, "run_id": run_id,
                                        "episode_id": episode_id, "success": int(success)},
                                       pk=("round", "stage", "key"))

    def rsr_jobs(self, round: int, stage: str) -> dict[str, tuple[str, bool]]:
        """Finished jobs of a stage: key -> (episode id, success)."""
        with self._lock:
            rows = list(self.db.query("SELECT * FROM rsr_jobs WHERE round = ? AND stage = ?", [round, stage]))
        return {r["key"]: (r["episode_id"], bool(r["success"])) for r in rows}

    def add_samples(self, round: int, samples: list) -> int:
        """Store SFT samples; a sample already stored for the round (same tokens) is skipped."""
        rows = [{"round": round, "digest": s.digest, "ids": json.dumps(list(s.ids)), "mask": json.dumps(list(s.mask)),
                 "task": s.provenance.task, "harness": s.provenance.harness,
                 "source_episode_id": s.provenance.source_episode_id,
                 "replay_episode_id": s.provenance.replay_episode_id, "runbook_id": s.provenance.runbook_id}
                for s in samples]
        with self._lock, self.db.atomic():
            before = self.db["sft_samples"].count
            self.db["sft_samples"].insert_all(rows, pk=("round", "digest"), ignore=True)
            return self.db["sft_samples"].count - before

    def samples(self, round: int) -> list:
        from engine.rsr.dataset import Provenance, Sample

        with self._lock:
            rows = list(self.db.query("SELECT * FROM sft_samples WHERE round = ? ORDER BY rowid", [round]))
        return [Sample(tuple(json.loads(r["ids"])), tuple(json.loads(r["mask"])),
                       Provenance(r["task"], r["harness"], r["source_episode_id"], r["replay_episode_id"],
                                  r["runbook_id"])) for r in rows]

    def verifier_output(self, episode_id: str) -> str:
        """What the verifier printed for one episode (RSR's leak scan protects it)."""
        with self._lock:
            rows = list(self.db.query("SELECT verifier_output FROM episodes WHERE id = ?", [episode_id]))
        return (rows[0]["verifier_output"] or "") if rows else ""

    # -- RPR stages ----------------------------------------------------------------------------
    def rpr_run(self, round: int) -> dict | None:
        with self._lock:
            rows = list(self.db.query("SELECT * FROM rpr_runs WHERE round = ?", [round]))
        return rows[0] if rows else None

    def put_rpr_run(self, round: int, **fields: object) -> None:
        with self._lock:
            self.db["rpr_runs"].upsert({"round": round, **fields, "updated_at": _now()}, pk="round")

    def rpr_job_done(self, round: int, iteration: int, key: str, run_id: str, episode_id: str, success: bool) -> None:
        with self._lock:
            self.db["rpr_jobs"].upsert({"round": round, "iteration": iteration, "key": key, "run_id": run_id,
                                        "episode_id": episode_id, "success": int(success)},
                                       pk=("round", "iteration", "key"))

    def rpr_jobs(self, round: int, iteration: int) -> dict[str, str]:
        """Finished rollouts of one RPR iteration: key -> episode id."""
        with self._lock:
            rows = list(self.db.query("SELECT key, episode_id FROM rpr_jobs WHERE round = ? AND iteration = ?",
                                      [round, iteration]))
        return {r["key"]: r["episode_id"] for r in rows}

    def stage_job_done(self, stage: str, key: str, run_id: str, episode_id: str, success: bool) -> None:
        with self._lock:
            self.db["stage_jobs"].upsert({"stage": stage, "key": key, "run_id": run_id, "episode_id": episode_id,
                                          "success": int(success)}, pk=("stage", "key"))

    def stage_jobs(self, stage: str) -> dict[str, str]:
        """Finished evaluation episodes of a pipeline stage: key -> episode id."""
        with self._lock:
            rows = list(self.db.query("SELECT key, episode_id FROM stage_jobs WHERE stage = ?", [stage]))
        return {r["key"]: r["episode_id"] for r in rows}

    # -- metrics and pipeline stages ----------------------------------------------------------
    def log_metrics(self, points: list[MetricPoint]) -> None:
        with self._lock, self.db.atomic():
            self.db["metrics"].upsert_all((asdict(p) for p in points), pk=("run_id", "name", "step"))

    def metrics(self, run_id: str, name: str | None = None) -> list[MetricPoint]:
        sql, args = "SELECT * FROM metrics WHERE run_id = ?", [run_id]
        if name:
            sql += " AND name = ?"
            args.append(name)
        with self._lock:
            rows = list(self.db.query(sql + " ORDER BY name, step", args))
        return [MetricPoint(r["run_id"], r["stage"] or "", r["name"], r["step"], r["value"]) for r in rows]

    def metric_runs(self) -> list[str]:
        with self._lock:
            return [r["run_id"] for r in self.db.query("SELECT DISTINCT run_id FROM metrics ORDER BY rowid")]

    def put_stage(self, stage: StageRecord) -> None:
        with self._lock:
            self.db["stages"].upsert({**asdict(stage), "updated_at": stage.updated_at or _now()}, pk="name")

    def stages(self) -> dict[str, StageRecord]:
        with self._lock:
            rows = list(self.db.query("SELECT * FROM stages"))
        return {r["name"]: StageRecord(**{k: (r[k] if r[k] is not None or k not in ("lineage", "detail") else "")
                                          for k in StageRecord.__dataclass_fields__}) for r in rows}

    def close(self) -> None:
        with self._lock:
            self.db.conn.close()


def _run(r: dict) -> RunRecord:
    return RunRecord(
        r["id"], r["kind"], r["created_at"], r["finished_at"], r["status"], r["backend"] or "",
        r["agent"] or "", r["tasks_path"] or "", r["total"] or 0, json.loads(r["summary"] or "{}"),
    )


def _episode(r: dict) -> EpisodeRecord:
    return EpisodeRecord(
        r["id"], r["run_id"], r["task"], r["split"], r["agent"], r["status"], bool(r["success"]),
        r["checks_passed"], r["checks_total"], r["reward"], r["failure_mode"] or "", r["error"] or "",
        r["duration_s"], tuple(x for x in (r["resource_events"] or "").split(",") if x), r["stop_reason"] or "",
    )


def _runbook(r: dict) -> Runbook:
    leak = json.loads(r["leak"]) if r["leak"] else None
    verdict = json.loads(r["verdict"]) if r["verdict"] else None
    return Runbook(
        r["id"], r["task"], r["round"], r["source_episode_id"] or "", r["harness"] or "", r["status"], r["text"],
        r["original_text"], LeakReport(leak["score"], tuple(leak["matches"])) if leak else None,
        ReviewVerdict(**{**verdict, "reasons": tuple(verdict["reasons"])}) if verdict else None,
        r["decided_by"] or "", r["note"] or "", r["created_at"], r["updated_at"], r.get("author") or "",
        r.get("reviewer_raw") or "",
    )


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
