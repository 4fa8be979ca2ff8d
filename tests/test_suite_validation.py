"""The whole built-in suite validates in real sandboxes (slow: about 100 episodes)."""

from __future__ import annotations

import pytest

from engine.api import Engine
from engine.config import Config
from engine.store import Store


@pytest.mark.slow
def test_every_builtin_task_is_valid(tmp_path):
    engine = Engine(Config(), Store(tmp_path / "db.sqlite"))
    run_id, checks = engine.check_tasks([], concurrency=4)
    invalid = [(c.task, c.reason) for c in checks if not c.valid]
    assert invalid == []
    assert len(checks) >= 40
    stored = engine.store.runs.episodes(run_id)
    assert len(stored) == 2 * len(checks)
    assert engine.store.runs.get(run_id).status == "finished"
