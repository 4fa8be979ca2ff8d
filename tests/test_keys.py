"""Job keys and seeds are part of what is stored: a resumed run must read back exactly what it wrote."""

from __future__ import annotations

from engine.keys import (
    EvalKey,
    ExploreKey,
    PrefixKey,
    ProbeKey,
    ReplayKey,
    RolloutKey,
    eval_seed,
    explore_seed,
    probe_seed,
    replay_seed,
    rollout_seed,
    runbook_seed,
)


def test_every_key_reads_back_as_written_even_for_task_names_with_odd_characters():
    explore = ExploreKey("copy-file.v2_train-s0-0001", "fenced-bash-primed", 3, aided=True)
    assert str(explore) == "copy-file.v2_train-s0-0001|fenced-bash-primed|3|aided"
    assert ExploreKey.parse(str(explore)) == explore
    assert ExploreKey.parse("t|h|0") == ExploreKey("t", "h", 0, aided=False)
    assert ReplayKey.parse(str(ReplayKey("rb-12", 1))) == ReplayKey("rb-12", 1)
    # A prefix key holds a whole explore key, separators included.
    prefix = PrefixKey(str(explore), 2)
    assert PrefixKey.parse(str(prefix)) == prefix
    assert EvalKey.parse(str(EvalKey("count-lines-eval-s1-0003", 2))) == EvalKey("count-lines-eval-s1-0003", 2)
    # The formats already in users' stores: changing one would make every resumed stage repeat its work.
    assert str(RolloutKey(True, 0, "t", 1, 2)) == "warmup0|t|1|2"
    assert str(RolloutKey(False, 3, "t", 0, 1)) == "joint3|t|0|1"
    assert str(ProbeKey("t", 4, 0)) == "probe|t|4|0"


def test_seeds_are_stable_and_keep_different_jobs_apart():
    # Pinned to what stores written before engine/keys.py hold: a resumed run samples exactly
    # what the interrupted one would have.
    pinned = (
        explore_seed(0, 1, 0, 0, "a"),
        runbook_seed(0, 1, 1),
        replay_seed(0, 1, "a", 1),
        rollout_seed(0, 1, True, 0, 0, 1),
        probe_seed(0, 1, 0, 1),
        eval_seed(0, 0, 1, "a"),
    )
    assert pinned == (1259487694, 154730, 1267487718, 604730, 1004730, 1757872262)
    seeds = {
        explore_seed(0, 1, 0, 1, "a"),
        explore_seed(0, 1, 1, 1, "a"),
        explore_seed(0, 2, 0, 1, "a"),
        explore_seed(1, 1, 0, 1, "a"),
        runbook_seed(0, 1, 1),
        replay_seed(0, 1, "a", 1),
        rollout_seed(0, 1, False, 0, 0, 1),
        rollout_seed(0, 1, True, 0, 0, 1),
        probe_seed(0, 1, 0, 1),
        eval_seed(0, 0, 1, "a"),
    }
    assert len(seeds) == 10
    assert all(0 <= s < 2**31 for s in seeds)
