"""A deterministic store for TUI tests, snapshots and the docs' screenshots.

Everything a screen shows comes from here: fixed run ids and timestamps, model episodes with
replies, parse errors and checks, `tasks check` outcomes for two built-in tasks, runbook drafts
in every state, training metrics and pipeline stage records.
"""

from __future__ import annotations

from pathlib import Path

from engine.results import AgentStep, CheckResult, EpisodeResult
from engine.store import Store
from engine.store.records import LeakReport, MetricPoint, ReviewVerdict, RunbookDraft, StageRecord

EVAL_RUN = "20261129-120000-base01"
CHECK_RUN = "20261129-110000-check1"
SFT_RUN = "20261129-130000-sft001"
CLEAN_RUNBOOK_TEXT = """\
# Goal
Count the lines of /app/input.txt and write the number to /app/count.txt.

## Preconditions
- /app/input.txt exists and is readable.

## Steps
1. `wc -l < /app/input.txt > /app/count.txt` (expect no output)
2. `cat /app/count.txt` (expect a single number)

## Check
The file /app/count.txt holds only the number of lines.
"""
LEAKY_RUNBOOK_TEXT = """\
# Goal
Make the verifier pass.

## Steps
1. The test runs `test "$(tr -d "[:space:]" < /app/count.txt)" = 5`, so write 5:
   `echo 5 > /app/count.txt`
"""


def _checks(*pairs: tuple[str, bool]) -> tuple[CheckResult, ...]:
    return tuple(CheckResult(name, "passed" if ok else "failed") for name, ok in pairs)


def _episode(
    run_id: str,
    index: int,
    task: str,
    agent: str,
    *,
    success: bool,
    checks: tuple[CheckResult, ...],
    steps: tuple[AgentStep, ...] = (),
    reward: float | None = None,
    status: str = "completed",
    failure_mode: str = "",
    error: str = "",
    stop_reason: str = "",
    split: str = "train",
) -> EpisodeResult:
    passed = sum(c.status == "passed" for c in checks)
    if reward is None and status != "infra_error":
        reward = 1.0 if success else 0.5 * passed / max(1, len(checks))
    return EpisodeResult(
        episode_id=f"{run_id}-{index:04d}",
        run_id=run_id,
        task=task,
        split=split,
        agent=agent,
        backend="local",
        attempt=0,
        status=status,
        success=success,
        checks_passed=passed,
        checks_total=len(checks),
        reward=reward,
        failure_mode=failure_mode,
        error=error,
        checks=checks,
        steps=steps,
        started_at=f"2026-11-29T12:00:{index:02d}+00:00",
        duration_s=1.5 + index / 10,
        stop_reason=stop_reason,
    )


def model_steps() -> tuple[AgentStep, ...]:
    return (
        AgentStep(
            "ls -la /app",
            "total 8\n-rw-r--r-- 1 root root 31 Nov 29 12:00 input.txt\n",
            0,
            False,
            0.01,
            action_text="<bash>ls -la /app</bash>",
            token_ids=(1, 2, 3, 4, 5),
            prompt_tokens=412,
            generation_s=0.42,
        ),
        AgentStep(
            "",
            "Your reply had no <bash> block. Reply with one command in <bash>...</bash>.",
            None,
            False,
            0.0,
            action_text="I will now count the lines of the file.",
            token_ids=(6, 7, 8),
            prompt_tokens=470,
            parse_error="no <bash>...</bash> block in the reply",
            generation_s=0.31,
        ),
        AgentStep(
            "wc -l < /app/input.txt > /app/count.txt",
            "",
            0,
            False,
            0.01,
            action_text="<bash>wc -l < /app/input.txt > /app/count.txt</bash>",
            token_ids=(9, 10, 11, 12),
            prompt_tokens=530,
            generation_s=0.38,
        ),
        AgentStep(
            "cat /app/count.txt",
            "5\n",
            0,
            False,
            0.01,
            action_text="<bash>cat /app/count.txt</bash>",
            token_ids=(13, 14),
            prompt_tokens=560,
            generation_s=0.2,
        ),
    )


def build_store(path: Path) -> Store:
    store = Store(path)
    store.runs.create(
        "tasks-check", backend="local", agent="oracle+nop", tasks_path="", total=4, config={}, run_id=CHECK_RUN
    )
    for i, (task, agent, ok) in enumerate(
        [
            ("count-lines-1", "oracle", True),
            ("count-lines-1", "nop", False),
            ("copy-file-1", "oracle", True),
            ("copy-file-1", "nop", False),
        ]
    ):
        names = (
            ("output_exists", "count_is_32", "input_unchanged")
            if task.startswith("count")
            else ("copy_exists", "copy_identical", "original_kept")
        )
        results = [(n, ok or n in ("input_unchanged", "original_kept")) for n in names]
        store.runs.record_episode(_episode(CHECK_RUN, i, task, agent, success=ok, checks=_checks(*results)))
    store.runs.finish(CHECK_RUN, "finished", {"success_rate": 0.5, "episodes": 4})

    store.runs.create("eval", backend="local", agent="model", tasks_path="", total=6, config={}, run_id=EVAL_RUN)
    outcomes = [
        ("count-lines-1", True),
        ("count-lines-2", False),
        ("copy-file-1", True),
        ("copy-file-2", False),
        ("count-lines-1", True),
        ("copy-file-1", False),
    ]
    for i, (task, ok) in enumerate(outcomes):
        checks = _checks(("a", ok), ("b", ok or i % 2 == 1), ("c", True))
        store.runs.record_episode(
            _episode(
                EVAL_RUN,
                i,
                task,
                "model",
                success=ok,
                checks=checks,
                steps=model_steps(),
                stop_reason="done" if ok else "turn_limit",
                split="eval",
            )
        )
    store.runs.record_episode(
        _episode(
            EVAL_RUN,
            6,
            "copy-file-2",
            "model",
            success=False,
            checks=(),
            status="infra_error",
            failure_mode="sandbox_error",
            error="sandbox died: killed from outside",
            split="eval",
        )
    )
    store.runs.finish(
        EVAL_RUN, "finished", {"success_rate": 0.5, "episodes": 7, "pass_at_1": 0.5, "ci95": [0.25, 0.75]}
    )

    store.metrics.log([MetricPoint(SFT_RUN, "RSR-1", "sft/loss", s, 2.4 * 0.93**s + 0.3) for s in range(40)])
    # RSR round 1 explored count-lines-1 three times (stored episodes stand in): 2 successes.
    for attempt, index in enumerate((0, 1, 4)):
        episode = f"{EVAL_RUN}-{index:04d}"
        store.jobs.done("rsr/1/explore", f"count-lines-1|fenced-bash-plain|{attempt}", EVAL_RUN, episode, index != 1)
    store.stages.put(
        StageRecord(
            "Base",
            "done",
            checkpoint="bundled:smollm2-135m",
            eval_run_id=EVAL_RUN,
            pass_at_1=0.5,
            ci_low=0.25,
            ci_high=0.75,
            updated_at="2026-11-29T12:10:00+00:00",
        )
    )
    store.stages.put(
        StageRecord("RSR-1", "running", parent="Base", updated_at="2026-11-29T13:00:00+00:00", detail="training")
    )
    rpr = [
        ("rpr/reward", [0.10, 0.12, 0.11, 0.14, 0.18, 0.21]),
        ("rpr/success", [0.0, 0.0, 0.0, 0.25, 0.25, 0.5]),
        ("ppo/value_loss", [0.040, 0.021, 0.012, 0.009, 0.010, 0.008]),
    ]
    store.metrics.log(
        [MetricPoint("rpr-1", "RPR-1", name, step + 1, v) for name, vs in rpr for step, v in enumerate(vs)]
        # The probe: the same tasks and seeds after the 3 warm-up rounds and after each joint round.
        + [
            MetricPoint("rpr-1", "RPR-1", "rpr/probe_success", step, v)
            for step, v in ((3, 0.25), (4, 0.25), (5, 0.375), (6, 0.5))
        ]
    )

    clean = RunbookDraft(
        "count-lines-1",
        1,
        f"{EVAL_RUN}-0000",
        CLEAN_RUNBOOK_TEXT,
        "xml-bash",
        LeakReport(0.02),
        ReviewVerdict(True, True, False, True, ("numbered steps with commands", "names /app/count.txt")),
    )
    leaky = RunbookDraft(
        "count-lines-1",
        1,
        f"{EVAL_RUN}-0004",
        LEAKY_RUNBOOK_TEXT,
        "xml-bash",
        LeakReport(0.61, ('test "$(tr -d "[:space:]" < /app/count.txt)" = 5',)),
        ReviewVerdict(False, True, True, False, ("quotes a verifier check", "no preconditions")),
    )
    done = RunbookDraft(
        "copy-file-1",
        1,
        f"{EVAL_RUN}-0002",
        "# Goal\nCopy the file.\n\n## Steps\n1. `cp a b`\n",
        "xml-bash",
        LeakReport(0.0),
        ReviewVerdict(True, True, False, True, ("fine",)),
    )
    store.runbooks.add(clean)
    store.runbooks.add(leaky)
    store.runbooks.add(done, status="approved", decided_by="auto")
    stamp = "2026-11-29T12:30:00+00:00"
    store.db.execute("UPDATE runs SET created_at = ?, finished_at = ?", [stamp, stamp])
    store.db.execute("UPDATE runbooks SET created_at = ?, updated_at = ?", [stamp, stamp])
    store.db.execute("UPDATE runbooks SET id = 'rb-' || task || '-' || rowid")
    store.db.conn.commit()
    return store


async def settle(pilot, timeout: float = 30.0) -> None:
    """Let the screens' store reads finish and their results land (reads run on worker threads,
    and a result may start the next read, so wait until none is pending)."""
    import asyncio
    import time

    deadline = time.monotonic() + timeout
    while True:
        await pilot.pause()
        pending = [w for w in pilot.app.workers if w.group == "store" and not w.is_finished]
        if not pending:
            await pilot.pause()
            if not [w for w in pilot.app.workers if w.group == "store" and not w.is_finished]:
                return
            continue
        if time.monotonic() > deadline:
            raise AssertionError(f"store reads still pending: {pending}")
        await asyncio.sleep(0.01)


def row_text(table, index: int | None = None, *, key: str | None = None) -> list[str]:
    """A table row's cells as the text they show (cells of untrusted text are Rich Text)."""
    row = table.get_row(key) if key is not None else table.get_row_at(index)
    return [str(cell) for cell in row]
