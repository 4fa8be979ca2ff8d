"""The pipeline Base -> RSR-1 -> RPR-1 -> RSR-2 -> RPR-2 end to end, killed mid-stage and resumed.

The policy is scripted on the real tokenizer (tests/test_rsr_round.py's ScriptedModel, which
always answers right, plans a clean runbook and approves it); sandboxes, verifier, store, SFT,
PPO and GGUF export are real. Each stage really trains, on tiny settings.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engine.config import Config, PipelineConfig, RprConfig, RsrConfig, SftSection
from engine.events import EventBus
from engine.store import Store
from engine.store.records import PIPELINE_STAGES
from tests.conftest import docs_script, write_task

if not os.environ.get("CI"):
    pytest.importorskip("llama_cpp", reason="needs the model extra (installed by .ci/setup)")
    pytest.importorskip("peft", reason="needs the hf extra (installed by .ci/setup)")

from engine.pipeline.pipeline import Pipeline
from engine.resumable import WorkContext
from tests.test_rsr_round import ScriptedModel, runbook

pytestmark = pytest.mark.slow

CONFIG = Config(
    rsr=RsrConfig(attempts=1, harnesses=["xml-bash"], max_turns=1, sft=SftSection(epochs=1, rank=4, alpha=8)),
    rpr=RprConfig(
        harness="xml-bash",  # what ScriptedModel replies in
        rounds=1,
        critic_warmup_rounds=1,
        tasks_per_round=1,
        episodes_per_task=1,
        max_turns=1,
        ppo_epochs=1,
        load_4bit=False,
        rank=4,
        alpha=8,
    ),
    pipeline=PipelineConfig(eval_seeds=2, eval_harness="xml-bash", eval_max_turns=1),
)


@pytest.fixture(scope="module")
def real_policy():
    from engine.policy import load_policy

    return load_policy("bundled:smollm2-135m", n_ctx=2048)


def suite(root: Path) -> Path:
    if not root.exists():
        for name, split in (("hello-train", "train"), ("hello-eval", "eval")):
            write_task(
                root,
                name,
                toml=f'[metadata]\nsplit = "{split}"\n[agent]\ntimeout_sec = 30\n'
                "[verifier]\ntimeout_sec = 20\n[environment]\nmemory_mb = 256\n",
            )
    return root


def make(home: Path, real_policy, store: Store, stop=None) -> Pipeline:
    return Pipeline(
        WorkContext(
            config=CONFIG,
            store=store,
            bus=EventBus(),
            tasks=suite(home / "suite"),
            backend="local",
            checkpoints_dir=home / "ckpt",
            concurrency=1,
            should_stop=stop or (lambda: False),
            policy_loader=lambda spec: ScriptedModel(real_policy, runbook),
        )
    )


def summary(store: Store, home: Path) -> dict:
    """The final state, with this home's directory taken out of paths."""
    stages = {
        n: (s.status, s.pass_at_1, s.ci_low, s.ci_high, s.checkpoint.replace(str(home), "HOME"))
        for n, s in store.stages.all().items()
    }
    kinds: dict[str, int] = {}
    for r in store.runs.list(200):
        kinds[r.kind] = kinds.get(r.kind, 0) + len(store.runs.episodes(r.id))
    return {
        "stages": stages,
        "episodes": kinds,
        "samples": [len(store.rsr.samples(r)) for r in (1, 2)],
        "rpr": [store.rpr.run(r).iteration for r in (1, 2)],
        "lineage": {n: json.loads(s.lineage.replace(str(home), "HOME"))["kind"] for n, s in store.stages.all().items()},
    }


def test_a_pipeline_killed_mid_stage_resumes_to_the_same_final_state(tmp_path: Path, real_policy):
    straight_store = Store(tmp_path / "a.sqlite")
    stages = make(tmp_path / "a", real_policy, straight_store).run()
    assert [stages[n].status for n in PIPELINE_STAGES] == ["done"] * 5
    for name in PIPELINE_STAGES:
        assert stages[name].pass_at_1 == 1.0 and stages[name].ci_low is not None
    # Each stage starts from its parent's checkpoint, and the lineage says what produced it.
    for parent, child in zip(PIPELINE_STAGES, PIPELINE_STAGES[1:]):
        assert stages[child].parent == stages[parent].checkpoint
    assert stages["Base"].checkpoint == "bundled:smollm2-135m"
    assert "/rsr-1/adapter.gguf" in stages["RSR-1"].checkpoint and "/rpr-2/iter-" in stages["RPR-2"].checkpoint
    rsr1 = json.loads(stages["RSR-1"].lineage)
    assert rsr1["samples"] == 1 and rsr1["parent"] == "bundled:smollm2-135m" and len(rsr1["sample_digests"]) == 1
    rsr2 = json.loads(stages["RSR-2"].lineage)
    assert any("continues the adapter" in n and "/rpr-1/iter-" in n for n in rsr2["notes"])  # builds on RPR-1
    rpr2 = json.loads(stages["RPR-2"].lineage)
    assert "/rpr-1/iter-" in rpr2["critic_from"]  # RPR-2 inherits RPR-1's critic

    store = Store(tmp_path / "b.sqlite")
    # Killed during RPR-1: after the first rollout of its second (joint) round is stored.
    with pytest.raises(InterruptedError):
        make(tmp_path / "b", real_policy, store, stop=lambda: len(store.rpr.jobs(1, 1)) >= 1).run()
    assert store.stages.all()["RPR-1"].status == "pending" and "RSR-2" not in store.stages.all()
    make(tmp_path / "b", real_policy, store).run()
    assert summary(store, tmp_path / "b") == summary(straight_store, tmp_path / "a")


def test_training_seeds_are_separate_lineages_that_share_base(tmp_path: Path, real_policy):
    from engine.pipeline.lineage import stored_seeds
    from engine.pipeline.pipeline import SeededPipelines
    from engine.pipeline.summary import summarize

    store = Store(tmp_path / "s.sqlite")
    ctx = make(tmp_path / "s", real_policy, store).ctx
    lineages = SeededPipelines(ctx, [0, 1], stop_after="RSR-1").run()

    assert set(lineages) == {0, 1}
    stored = store.stages.all()
    assert sorted(stored) == ["Base", "RSR-1", "RSR-1 seed 1"]
    # Base is one model whatever the training seed: evaluated once, shared by both lineages.
    assert lineages[0]["Base"] == lineages[1]["Base"]
    assert len(store.jobs.finished("stage/Base")) == 2  # 1 eval task x 2 sampling seeds
    # Each seed trained its own RSR round into its own checkpoint, from Base.
    assert store.rsr.round(1) is not None and store.rsr.round(101) is not None
    assert "/rsr-1/" in lineages[0]["RSR-1"].checkpoint and "/rsr-101/" in lineages[1]["RSR-1"].checkpoint
    assert json.loads(stored["RSR-1 seed 1"].lineage)["training_seed"] == 1
    assert lineages[1]["RSR-1"].parent == "bundled:smollm2-135m"
    # Both lineages' evaluations pair up with Base task by task.
    rows = {r.stage: r for r in summarize(store, stored_seeds(stored))}
    assert stored_seeds(stored) == [0, 1]
    assert rows["Base"].seeds == (0,) and rows["RSR-1"].seeds == (0, 1)
    assert rows["RSR-1"].mean.estimate == 1.0 and rows["RSR-1"].gain.estimate == 0.0  # the script always passes
    assert rows["RPR-1"].seeds == () and rows["RPR-1"].mean is None
    # By kind of task: a suite of no curriculum family is one tier, "other", and each family's row
    # says per stage how often it passed in each seed, and how often RSR's exploration did.
    from engine.pipeline.families import family_rows, tier_summaries

    tiers = tier_summaries(store, [0, 1])
    assert list(tiers) == ["other"] and {r.stage: r.mean for r in tiers["other"]} == {
        r.stage: r.mean for r in summarize(store, [0, 1])
    }
    (hello,) = family_rows(store, [0, 1])
    assert (hello.family, hello.tier, hello.learned_in) == ("hello", "other", (0, 1))
    assert hello.stages["RSR-1"].per_seed == ((2, 2), (2, 2)) and hello.stages["RSR-1"].explore == (2, 2)
    assert hello.stages["Base"].explore is None and set(hello.stages) == {"Base", "RSR-1"}
    # docs/export_run.py keeps every stage's eval episodes of every lineage, in pipeline order.
    rows = docs_script("export_run").eval_rows(store)
    assert [(r["stage"], r["task"], r["success"]) for r in rows] == [
        (stage, "hello-eval", 1) for stage in ("Base", "Base", "RSR-1", "RSR-1", "RSR-1 seed 1", "RSR-1 seed 1")
    ]
    assert all(r["replies"] == 1 and r["reward"] == 1.0 for r in rows)
