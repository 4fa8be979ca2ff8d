"""Concurrent episodes: isolation, overlap, cancellation, storage."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from engine.config import Config
from engine.events import EventBus, SandboxOutput
from engine.rollout.agents import OracleAgent
from engine.rollout.runner import EpisodeJob, EpisodeRunner
from engine.store import Store
from engine.tasks import load_task
from tests.conftest import ctrf_test, write_task


def test_concurrent_episodes_are_isolated_and_overlap(tmp_path: Path, store: Store):
    # Each oracle leaves a marker and sleeps; no sandbox may see another's marker.
    tasks = []
    for i in range(4):
        solve = f"sleep 1; ls -A /app > /tmp/seen; echo {i} > /app/mine"
        test = ctrf_test(
            ("only_own_files", "test ! -s /tmp/seen"), ("marker_written", f'test "$(cat /app/mine)" = {i}')
        )
        tasks.append(load_task(write_task(tmp_path, f"iso-{i}", solve=solve, test=test)))
    runner = EpisodeRunner(config=Config(), backend="local", store=store, bus=None)
    t = time.monotonic()
    run_id, results = runner.run(
        [EpisodeJob(x, OracleAgent) for x in tasks],
        kind="eval",
        agent_label="oracle",
        tasks_path=str(tmp_path),
        concurrency=4,
    )
    elapsed = time.monotonic() - t
    assert [r.success for r in results] == [True] * 4, [r.checks for r in results]
    assert elapsed < 3.5, f"4 one-second episodes at concurrency 4 took {elapsed:.1f}s: they did not overlap"
    assert len(store.runs.episodes(run_id)) == 4


def test_cancel_stops_live_sandboxes_and_marks_the_run(tmp_path: Path, store: Store):
    task = load_task(
        write_task(tmp_path, "forever", solve="echo started; sleep 600", toml="[agent]\ntimeout_sec = 900\n")
    )
    bus = EventBus()
    started = threading.Event()
    bus.subscribe(lambda e: started.set() if isinstance(e, SandboxOutput) and "started" in e.text else None)
    runner = EpisodeRunner(config=Config(), backend="local", store=store, bus=bus)
    out: dict = {}
    worker = threading.Thread(
        target=lambda: out.update(
            zip(
                ("run_id", "results"),
                runner.run(
                    [EpisodeJob(task, OracleAgent)] * 3,
                    kind="eval",
                    agent_label="oracle",
                    tasks_path="x",
                    concurrency=2,
                ),
            )
        )
    )
    worker.start()
    assert started.wait(20)
    t = time.monotonic()
    runner.cancel()
    worker.join(30)
    assert not worker.is_alive() and time.monotonic() - t < 10
    assert out["results"] == []  # cut-short episodes are not outcomes
    assert store.runs.get(out["run_id"]).status == "interrupted"


def test_each_task_samples_with_a_seed_of_its_own():
    from engine.keys import task_seed

    seeds = {task_seed(1000, f"copy-file-train-s0-{i:04d}") for i in range(200)}
    assert len(seeds) == 200  # no two tasks share their random numbers
    assert task_seed(1000, "a") == task_seed(1000, "a") and task_seed(1000, "a") != task_seed(2000, "a")
    assert all(0 <= s < 2**31 for s in seeds)
