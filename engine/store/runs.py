"""Runs and their episodes: checks, agent steps, token buffers. One episode is one transaction."""

from __future__ import annotations

import json
import os
import uuid
from datetime import datetime, timezone

from engine.results import AgentStep, EpisodeResult
from engine.store.records import CheckRecord, EpisodeOutcome, EpisodeRecord, ModelRecord, RunRecord
from engine.store.schema import Database, now, pid_alive, storable


class RunRepository:
    def __init__(self, database: Database) -> None:
        self._d = database

    def mark_dead(self) -> None:
        """Runs left 'running' by a process that no longer exists were interrupted."""
        with self._d.lock:
            for row in self._d.rows("SELECT id, pid FROM runs WHERE status = 'running'"):  # whole, before writing
                if not pid_alive(row["pid"]):
                    self._d.db["runs"].update(row["id"], {"status": "interrupted"})

    # -- writes ----------------------------------------------------------------------------
    def create(
        self,
        kind: str,
        *,
        backend: str,
        agent: str,
        tasks_path: str,
        total: int,
        config: dict,
        run_id: str | None = None,
    ) -> str:
        run_id = run_id or datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
        with self._d.lock:
            self._d.db["runs"].insert(
                storable(
                    {
                        "id": run_id,
                        "kind": kind,
                        "created_at": now(),
                        "finished_at": None,
                        "status": "running",
                        "pid": os.getpid(),
                        "backend": backend,
                        "agent": agent,
                        "tasks_path": tasks_path,
                        "total": total,
                        "config": json.dumps(config),
                        "summary": "{}",
                    }
                )
            )
        return run_id

    def finish(self, run_id: str, status: str, summary: dict) -> None:
        with self._d.lock:
            self._d.db["runs"].update(run_id, {"status": status, "finished_at": now(), "summary": json.dumps(summary)})

    def record_episode(self, r: EpisodeResult) -> None:
        with self._d.lock, self._d.db.atomic():
            self._d.db["episodes"].insert(
                storable(
                    {
                        "id": r.episode_id,
                        "run_id": r.run_id,
                        "task": r.task,
                        "split": r.split,
                        "agent": r.agent,
                        "backend": r.backend,
                        "attempt": r.attempt,
                        "status": r.status,
                        "success": int(r.success),
                        "checks_passed": r.checks_passed,
                        "checks_total": r.checks_total,
                        "reward": r.reward,
                        "failure_mode": r.failure_mode,
                        "error": r.error,
                        "verifier_source": r.verifier_source,
                        "verifier_output": r.verifier_output,
                        "started_at": r.started_at,
                        "duration_s": r.duration_s,
                        "phase_s": json.dumps(r.phase_s),
                        "resource_events": ",".join(r.resource_events),
                        "stop_reason": r.stop_reason,
                    }
                )
            )
            if r.token_ids:
                self._d.db["episode_tokens"].insert(
                    {
                        "episode_id": r.episode_id,
                        "ids": json.dumps(list(r.token_ids)),
                        "mask": json.dumps(list(r.token_mask)),
                        "messages": json.dumps(list(r.messages)),
                        "harness": r.harness,
                        "model": r.model,
                    }
                )
            self._d.db["checks"].insert_all(
                storable(
                    {"episode_id": r.episode_id, "idx": i, "name": c.name, "status": c.status, "message": c.message}
                )
                for i, c in enumerate(r.checks)
            )
            self._d.db["steps"].insert_all(
                storable(
                    {
                        "episode_id": r.episode_id,
                        "idx": i,
                        "command": s.command,
                        "output": s.output,
                        "exit_code": s.exit_code,
                        "timed_out": int(s.timed_out),
                        "duration_s": s.duration_s,
                        "action_text": s.action_text,
                        "token_ids": json.dumps(list(s.token_ids)),
                        "logprobs": json.dumps(list(s.logprobs)),
                        "prompt_tokens": s.prompt_tokens,
                        "parse_error": s.parse_error,
                        "generation_s": s.generation_s,
                    }
                )
                for i, s in enumerate(r.steps)
            )

    # -- reads -----------------------------------------------------------------------------
    def list(self, limit: int = 50) -> list[RunRecord]:
        return [_run(r) for r in self._d.rows("SELECT * FROM runs ORDER BY rowid DESC LIMIT ?", [limit])]

    def get(self, run_id: str) -> RunRecord:
        rows = self._d.rows("SELECT * FROM runs WHERE id = ?", [run_id])
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
        sql = (
            "SELECT * FROM episodes"
            + (f" WHERE {' AND '.join(where)}" if where else "")
            + " ORDER BY started_at, task, attempt"
        )
        return [_episode(r) for r in self._d.rows(sql, args)]

    def episode(self, episode_id: str) -> EpisodeRecord:
        rows = self._d.rows("SELECT * FROM episodes WHERE id = ?", [episode_id])
        if not rows:
            raise KeyError(episode_id)
        return _episode(rows[0])

    def episodes_by_id(self, episode_ids: list[str]) -> list[EpisodeRecord]:
        """The stored episodes among `episode_ids` (in no particular order)."""
        found: list[EpisodeRecord] = []
        for start in range(0, len(episode_ids), 500):  # SQLite caps the number of bound parameters
            chunk = episode_ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found += [_episode(r) for r in self._d.rows(f"SELECT * FROM episodes WHERE id IN ({marks})", chunk)]
        return found

    def latest_episode(self, task: str, agent: str, run_kind: str | None = None) -> EpisodeRecord | None:
        """The most recent stored episode of `task` by `agent` (optionally only in runs of one kind)."""
        sql = (
            "SELECT episodes.* FROM episodes JOIN runs ON runs.id = episodes.run_id "
            "WHERE episodes.task = ? AND episodes.agent = ?"
        )
        args: list[object] = [task, agent]
        if run_kind:
            sql += " AND runs.kind = ?"
            args.append(run_kind)
        rows = self._d.rows(sql + " ORDER BY episodes.rowid DESC LIMIT 1", args)
        return _episode(rows[0]) if rows else None

    def checks(self, episode_id: str) -> list[CheckRecord]:
        rows = self._d.rows("SELECT * FROM checks WHERE episode_id = ? ORDER BY idx", [episode_id])
        return [CheckRecord(r["name"], r["status"], r["message"] or "") for r in rows]

    def steps(self, episode_id: str) -> list[AgentStep]:
        """The agent's steps in order (their index is their position)."""
        rows = self._d.rows("SELECT * FROM steps WHERE episode_id = ? ORDER BY idx", [episode_id])
        return [
            AgentStep(
                r["command"],
                r["output"],
                r["exit_code"],
                bool(r["timed_out"]),
                r["duration_s"],
                r["action_text"] or "",
                tuple(json.loads(r["token_ids"] or "[]")),
                tuple(json.loads(r["logprobs"] or "[]")),
                r["prompt_tokens"] or 0,
                r["parse_error"] or "",
                r["generation_s"] or 0.0,
            )
            for r in rows
        ]

    def episode_tokens(self, episode_id: str) -> tuple[list[int], list[int]]:
        """The episode's token buffer and its sampled-token mask (empty for scripted agents)."""
        model = self.episode_model(episode_id)
        return model.ids, model.mask

    def episode_model(self, episode_id: str) -> ModelRecord:
        """What a model episode was given and produced: opening messages, harness, model, buffer."""
        rows = self._d.rows("SELECT * FROM episode_tokens WHERE episode_id = ?", [episode_id])
        if not rows:
            return ModelRecord()
        r = rows[0]
        return ModelRecord(
            json.loads(r["ids"]),
            json.loads(r["mask"]),
            json.loads(r.get("messages") or "[]"),
            r.get("harness") or "",
            r.get("model") or "",
        )

    def outcomes(self, run_id: str, after: int = 0) -> list[EpisodeOutcome]:
        """The run's episode outcomes in the order they were stored, from just after `after`."""
        rows = self._d.rows(
            "SELECT rowid, success, reward FROM episodes WHERE run_id = ? AND rowid > ? ORDER BY rowid", [run_id, after]
        )
        return [EpisodeOutcome(r["rowid"], bool(r["success"]), r["reward"]) for r in rows]

    def verifier_output(self, episode_id: str) -> str:
        """What the verifier printed for one episode (RSR's leak scan protects it)."""
        rows = self._d.rows("SELECT verifier_output FROM episodes WHERE id = ?", [episode_id])
        return (rows[0]["verifier_output"] or "") if rows else ""


def _run(r: dict) -> RunRecord:
    return RunRecord(
        r["id"],
        r["kind"],
        r["created_at"],
        r["finished_at"],
        r["status"],
        r["backend"] or "",
        r["agent"] or "",
        r["tasks_path"] or "",
        r["total"] or 0,
        json.loads(r["summary"] or "{}"),
    )


def _episode(r: dict) -> EpisodeRecord:
    return EpisodeRecord(
        r["id"],
        r["run_id"],
        r["task"],
        r["split"],
        r["agent"],
        r["status"],
        bool(r["success"]),
        r["checks_passed"],
        r["checks_total"],
        r["reward"],
        r["failure_mode"] or "",
        r["error"] or "",
        r["duration_s"],
        tuple(x for x in (r["resource_events"] or "").split(",") if x),
        r["stop_reason"] or "",
    )
