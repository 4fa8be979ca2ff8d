"""A stop during training ends it within 10 s, and the stage goes on from there afterwards.

Each stop lands inside a long update: an SFT step over a 1.5k-token sample, a PPO update over two
episodes with long replies. On this 2-core CPU (loaded) such an update takes far longer than
10 s, so these tests fail when a stop is honoured only between optimizer steps or episodes.
The rest is real: the bundled model, LoRA training, local sandboxes, store, GGUF export.
"""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path

import pytest

from engine.config import Config, RsrConfig
from engine.config.sections import SftSection
from engine.events import EventBus, RprProgress, TrainingStep
from engine.policy.base import Generation
from engine.store import Store
from engine.store.records import Provenance, Sample
from tests.conftest import write_task
from tests.test_rpr_stage import settings as rpr_settings

if not os.environ.get("CI"):
    pytest.importorskip("llama_cpp", reason="needs the model extra (installed by .ci/setup)")
    pytest.importorskip("peft", reason="needs the hf extra (installed by .ci/setup)")

MODEL = "bundled:smollm2-135m"
STOP_WITHIN_S = 10.0
AFTER_S = 2.0  # how far into the update the stop comes


class Stopper:
    """A stage's `should_stop`: true from `AFTER_S` seconds after `arm()`; `at` says when."""

    def __init__(self) -> None:
        self.at: float | None = None
        self._armed = False

    def arm(self) -> None:
        if not self._armed:
            self._armed = True
            threading.Timer(AFTER_S, self._fire).start()

    def _fire(self) -> None:
        self.at = time.monotonic()

    def __call__(self) -> bool:
        return self.at is not None

    def latency(self) -> float:
        assert self.at is not None, "the stop never came: the update ended before it"
        return time.monotonic() - self.at


# -- SFT ---------------------------------------------------------------------------------------
def sample_of(length: int, seed: int) -> Sample:
    rng = random.Random(seed)
    ids = tuple(rng.randrange(100, 40000) for _ in range(length))
    mask = tuple([0] * (length // 3) + [1] * (length - length // 3))
    return Sample(ids, mask, Provenance(f"task-{seed}", "xml-bash", f"src-{seed}", "replay"))


def round_work(tmp_path: Path, store: Store, stop, bus: EventBus):
    from engine.rsr.records import RoundRecords
    from engine.rsr.work import RoundWork

    records = RoundRecords(store, 1)
    if records.record() is None:
        records.open(model=MODEL, tasks_path="", settings="{}")
    settings = RsrConfig(sft=SftSection(epochs=1, batch_samples=1, load_4bit=False, rank=4, alpha=8))
    return RoundWork(
        round=1,
        seed=0,
        model=MODEL,
        settings=settings,
        config=Config(),
        records=records,
        bus=bus,
        run_keyed=None,  # the SFT phase runs no episodes
        load_policy=lambda: None,
        should_stop=stop,
        concurrency=1,
        checkpoint_dir=tmp_path / "ckpt" / "rsr-1",
    )


def sft_samples(work) -> tuple[Sample, ...]:
    """Two samples, one per step: a short first step, then a long one (1.5k tokens) a stop lands in."""
    from engine.rsr import train
    from engine.rsr.sft import batches

    order = batches([0, 1], train.sft_config(work), 0)
    lengths = {order[0][0]: 48, order[1][0]: 1536}
    return tuple(sample_of(lengths[i], i) for i in range(2))


@pytest.mark.slow
def test_a_stop_during_an_sft_step_ends_it_within_10s_and_the_round_continues_from_its_last_step(tmp_path: Path):
    from engine.rsr import train

    store = Store(tmp_path / "db.sqlite")
    samples = sft_samples(round_work(tmp_path, store, lambda: False, EventBus()))
    stopper, bus, steps = Stopper(), EventBus(), []
    bus.subscribe(lambda e: (steps.append(e.step), stopper.arm()) if isinstance(e, TrainingStep) else None)
    work = round_work(tmp_path, store, stopper, bus)
    with pytest.raises(InterruptedError):
        train.train(work, samples)
    assert stopper.latency() < STOP_WITHIN_S
    assert steps == [1]  # stopped inside the second step, which kept nothing of itself
    assert (work.checkpoint_dir / "partial" / "state.pt").is_file() and not work.records.checkpoint()

    steps.clear()
    resumed = round_work(tmp_path, store, lambda: False, bus)
    result = train.train(resumed, samples)
    assert steps == [2]  # the first step is not repeated
    assert result.checkpoint.endswith("adapter.gguf") and resumed.records.checkpoint() == result.checkpoint
    assert [p.step for p in store.metrics.points("rsr-1-sft", "sft/loss")] == [1, 2]
    assert not (resumed.checkpoint_dir / "partial").exists()


# -- PPO ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real_policy():
    from engine.policy import load_policy

    return load_policy(MODEL, n_ctx=4096)


def long_script(real_policy):
    from tests.test_rpr_stage import SeededScript

    class LongScript(SeededScript):
        """SeededScript's replies with a long comment: an episode of about 1.2k tokens."""

        def generate_ids(self, prompt, *, max_tokens, temperature, seed=None):
            short = super().generate_ids(prompt, max_tokens=max_tokens, temperature=temperature, seed=seed)
            text = short.text.replace("</bash>", " # " + " checked" * 800 + "</bash>")
            llm = self.real._llm  # noqa: SLF001
            ids = llm.tokenize(text.encode(), add_bos=False, special=False) + [min(self.stop_ids)]
            return Generation(text, tuple(ids), tuple([-0.5] * len(ids)), len(prompt), "stop")

    return LongScript(real_policy)


def _stage(tmp_path: Path, store: Store, real_policy, stop, bus: EventBus):
    from engine.resumable import WorkContext
    from engine.rpr.stage import RprStage

    suite = tmp_path / "suite"
    if not suite.exists():
        write_task(suite, "hello-a")
    ctx = WorkContext(
        config=Config(),
        store=store,
        bus=bus,
        backend="local",
        checkpoints_dir=tmp_path / "ckpt",
        tasks=suite,
        concurrency=1,
        should_stop=stop,
        policy_loader=lambda spec: long_script(real_policy),
    )
    settings = rpr_settings(critic_warmup_rounds=0, probe_tasks=0)
    return RprStage(ctx, number=1, model=MODEL, settings=settings)


@pytest.mark.slow
def test_a_stop_during_a_ppo_update_ends_it_within_10s_and_the_stage_resumes_with_its_rollouts(
    tmp_path: Path, real_policy
):
    store, bus, stopper = Store(tmp_path / "db.sqlite"), EventBus(), Stopper()
    bus.subscribe(lambda e: stopper.arm() if isinstance(e, RprProgress) and "PPO on" in e.detail else None)
    stage = _stage(tmp_path, store, real_policy, stopper, bus)
    with pytest.raises(InterruptedError):
        stage.run()
    assert stopper.latency() < STOP_WITHIN_S
    assert stage.latest() is None  # the update was discarded, not checkpointed half-way
    assert len(store.rpr.jobs(1, 0)) == 2  # ...while its rollouts stay stored

    resumed = _stage(tmp_path, store, real_policy, lambda: False, EventBus())
    report = resumed.run()
    assert report.iterations == 1 and resumed.latest().name == "iter-001"
    assert store.rpr.run(1).status == "done"
    episodes = [e for r in store.runs.list(50) if r.kind == "rpr-rollout" for e in store.runs.episodes(r.id)]
    assert len(episodes) == 2  # the rollouts were reused, not run again
