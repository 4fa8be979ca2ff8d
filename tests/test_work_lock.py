"""One process at a time runs resumable work on a data directory; a dead holder blocks no one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from engine.api import Engine, WorkBusy
from engine.config import Config
from engine.store import Store
from engine.store.work_lock import hold_work_lock

HOLDER = """
import sys, time
from pathlib import Path
from engine.store.work_lock import hold_work_lock
with hold_work_lock(Path(sys.argv[1]), "the pipeline"):
    print("held", flush=True)
    time.sleep(120)
"""


def _holder(database: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(database)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_writer_is_refused_naming_the_work_and_a_killed_holder_blocks_no_one(tmp_path: Path):
    database = tmp_path / "trsi.db"
    engine = Engine(Config(), Store(database))
    holder = _holder(database)
    try:
        with pytest.raises(WorkBusy) as refused:
            engine.pipeline(tasks=str(tmp_path / "no-such-suite"))
        message = str(refused.value)
        assert "the pipeline" in message and f"process {holder.pid}" in message
        with pytest.raises(WorkBusy):
            engine.rsr_round(1, model="bundled:smollm2-135m", tasks=str(tmp_path / "no-such-suite"))
    finally:
        os.kill(holder.pid, signal.SIGKILL)  # as a runner killed without warning
        holder.wait()
    # The kernel dropped the dead holder's lock: the next writer goes ahead.
    with hold_work_lock(database, "RSR round 1"):
        pass
