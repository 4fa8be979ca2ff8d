"""TUI throughput and responsiveness while 8 shell panes stream at full speed.

    python bench/tui.py [--seconds 5] [--panes 8] [--out FILE]

The app runs headless (Textual's test driver, real compositor) on the Sandboxes screen. Eight
producer threads emit sandbox output through the engine's event bus as fast as they can, the
way episodes do. Measured, per configuration:
- lines/s ingested: output lines that reached the pane buffers;
- lines/s rendered: lines converted to screen strips by the panes (only visible, changed lines);
- frames/s: screen updates composed (what a real terminal would be sent);
- keypress latency: from a key event (tab: focus the next pane) to the first screen update that
  follows the focus change, while streaming.
Configurations: batched at 60 Hz (the app's default), and coalesced but unthrottled (a flush
per wake-up), each with producers at full speed and paced (`--rate` lines/s per pane).
`--per-chunk` adds the naive design (a message and a flush for every chunk); on 2 cores its
message backlog grows without bound at this rate, so it is off by default.

Then a large store: 1,000 model episodes of 100 steps (100k steps) and 10,000 metric points.
On the dashboard, trajectories, curves and runbooks screens, arrow keys move the cursor while a
pipeline reports progress twice a second (each report makes the open screen re-read the
store). The latency is from the key to the first screen update after it, with the store read
on worker threads (the app) against the anchor: the same screens reading on the UI thread.
Writes bench/results/tui.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import ms

from engine.api import Engine
from engine.config import Config
from engine.events import EpisodeStarted, RunStarted, SandboxOutput
from engine.store import Store
from trsi_tui.app import create_app
from trsi_tui.widgets.shell_pane import ShellPane

KEY_TIMEOUT_S = 2.0
LINE = "\x1b[32m{i:>7}\x1b[0m  compiling module_{i} ... ok  [" + "#" * 24 + "]\n"


async def measure(
    panes: int, seconds: float, frame_hz: float, presses: int, per_chunk: bool, rate: float
) -> dict[str, object]:
    app = create_app(Engine(Config(), Store(":memory:")))
    app.frame_hz = frame_hz
    if per_chunk:  # the naive design: one message and one flush for every chunk of output
        add = app._batcher.add  # noqa: SLF001
        app._batcher.add = lambda *a: add(*a) or True  # noqa: SLF001 - the naive design replaces the batcher's add
    writes: list[float] = []
    async with app.run_test(size=(200, 60)) as pilot:
        original_display = app._display  # noqa: SLF001 - each composed screen update passes here

        def counting_display(screen, renderable) -> None:
            if renderable is not None:
                writes.append(time.perf_counter())
            original_display(screen, renderable)

        app._display = counting_display  # noqa: SLF001 - counts composed updates
        await pilot.press("2")
        bus = app.engine.bus
        bus.emit(RunStarted("bench", "eval", panes))
        for p in range(panes):
            bus.emit(EpisodeStarted("bench", f"ep{p}", f"task-{p}", "oracle"))
        await pilot.pause(0.2)
        stop = threading.Event()
        emitted = [0] * panes

        def produce(p: int) -> None:
            i, start = 0, time.perf_counter()
            while not stop.is_set():
                bus.emit(SandboxOutput(f"ep{p}", "agent", "output", LINE.format(i=i)))
                i += 1
                if rate and i % 10 == 0:  # paced: sleep until this pane is back on its schedule
                    ahead = i / rate - (time.perf_counter() - start)
                    if ahead > 0:
                        time.sleep(ahead)
            emitted[p] = i

        threads = [threading.Thread(target=produce, args=(p,), daemon=True) for p in range(panes)]
        writes.clear()
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        latencies, missed = [], 0
        await asyncio.sleep(seconds / (presses + 1))
        for _ in range(presses):
            before = app.focused
            k0 = time.perf_counter()
            deadline = k0 + KEY_TIMEOUT_S
            app.simulate_key("tab")
            while app.focused is before and time.perf_counter() < deadline:
                await asyncio.sleep(0.0005)
            n = len(writes)
            while (len(writes) == n or writes[-1] < k0) and time.perf_counter() < deadline:
                await asyncio.sleep(0.0005)
            if time.perf_counter() >= deadline:
                missed += 1  # counted as the timeout: the UI did not answer within it
                latencies.append(KEY_TIMEOUT_S)
            else:
                latencies.append(writes[-1] - k0)
            await asyncio.sleep(seconds / (presses + 1))
        stop.set()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
        frames = sum(1 for w in writes if w <= t0 + elapsed)
        ingested_at_stop = sum(
            app.live.panes[f"ep{p}"].buffer.line_count + app.live.panes[f"ep{p}"].buffer.dropped for p in range(panes)
        )
        drawn = sum(p.lines_drawn for p in app.screen.query(ShellPane))
        # Let the UI drain what was emitted, to report the backlog honestly.
        drain0 = time.perf_counter()
        total = sum(emitted)
        while (
            sum(
                app.live.panes[f"ep{p}"].buffer.line_count + app.live.panes[f"ep{p}"].buffer.dropped
                for p in range(panes)
            )
            < total
            and time.perf_counter() - drain0 < 60
        ):
            await pilot.pause(0.05)
        drain_s = time.perf_counter() - drain0
    return {
        "frame_hz": frame_hz,
        "panes": panes,
        "rate_per_pane": rate or "full speed",
        "seconds": round(elapsed, 2),
        "lines_emitted_per_s": round(total / elapsed),
        "lines_ingested_per_s": round(ingested_at_stop / elapsed),
        "lines_rendered_per_s": round(drawn / elapsed),
        "frames_per_s": round(frames / elapsed, 1),
        "backlog_drain_s": round(drain_s, 2),
        "keypress_to_screen": ms(latencies),
        "keypresses_unanswered_within_2s": missed,
    }


def build_large_store(path: Path, episodes: int = 1000, steps: int = 100, points: int = 10_000) -> None:
    from engine.results import AgentStep, CheckResult, EpisodeResult
    from engine.store.records import MetricPoint, StageRecord

    store = Store(path)
    run_id = store.runs.create("eval", backend="local", agent="model", tasks_path="", total=episodes, config={})
    step = AgentStep(
        "cat /app/input.txt | sort | uniq -c",
        "   3 apple\n   1 pear\n" * 4,
        0,
        False,
        0.01,
        action_text="```bash\nsort /app/input.txt\n```",
        token_ids=tuple(range(40)),
        logprobs=(-0.5,) * 40,
        prompt_tokens=600,
        generation_s=0.2,
    )
    for i in range(episodes):
        store.runs.record_episode(
            EpisodeResult(
                f"{run_id}-{i:05d}",
                run_id,
                f"task-{i % 64}",
                "eval",
                "model",
                "local",
                0,
                "completed",
                i % 3 == 0,
                2,
                3,
                1.0 if i % 3 == 0 else 0.33,
                checks=(CheckResult("a", "passed"), CheckResult("b", "failed")),
                steps=(step,) * steps,
                started_at=f"2026-11-30T10:{i // 60 % 60:02d}:{i % 60:02d}+00:00",
            )
        )
    store.runs.finish(
        run_id, "finished", {"episodes": episodes, "success_rate": 0.33, "pass_at_1": 0.33, "ci95": [0.3, 0.36]}
    )
    names = ("rpr/reward", "rpr/success", "ppo/value_loss", "ppo/kl", "ppo/entropy")
    store.metrics.log(
        [MetricPoint("rpr-1", "RPR-1", names[k % len(names)], k // len(names), 0.5) for k in range(points)]
    )
    store.stages.put(
        StageRecord("Base", "done", checkpoint="bundled:smollm2-135m", pass_at_1=0.2, ci_low=0.1, ci_high=0.3)
    )
    from engine.store.records import LeakReport, ReviewVerdict, RunbookDraft

    for i in range(200):
        store.runbooks.add(
            RunbookDraft(
                f"task-{i % 64}",
                1,
                f"{run_id}-{i:05d}",
                "# Goal\nSort the file.\n" * 20,
                "fenced-bash",
                LeakReport(0.05),
                ReviewVerdict(True, True, False, True),
            )
        )
    store.close()


async def measure_store(path: Path, inline: bool, presses: int) -> dict[str, object]:
    """Arrow keys on each screen while a pipeline reports progress twice a second (every report
    makes the open screen re-read the store), as when a run is going on."""
    from engine.events import PipelineProgress
    from trsi_tui.loading import StoreLoader

    StoreLoader.inline = inline
    app = create_app(Engine(Config(), Store(path)))
    writes: list[float] = []
    latencies: dict[str, list[float]] = {}
    stop = threading.Event()

    def report_progress() -> None:
        while not stop.wait(0.5):
            app.engine.bus.emit(PipelineProgress("RPR-1", "running", "round 3 of 8"))

    try:
        async with app.run_test(size=(200, 60)) as pilot:
            original_display = app._display  # noqa: SLF001 - each composed screen update passes here

            def counting_display(screen, renderable) -> None:
                if renderable is not None:
                    writes.append(time.perf_counter())
                original_display(screen, renderable)

            app._display = counting_display  # noqa: SLF001 - counts composed updates
            reporter = threading.Thread(target=report_progress, daemon=True)
            reporter.start()
            for screen_key, name in (("1", "dashboard"), ("4", "trajectories"), ("6", "curves"), ("5", "runbooks")):
                await pilot.press(screen_key)
                await pilot.pause(1.5)  # mounted and first read done
                for i in range(presses):
                    await asyncio.sleep(0.05 + (i % 7) * 0.03)  # land at varied points of the refresh cycle
                    n, k0 = len(writes), time.perf_counter()
                    app.simulate_key("down" if i % 2 == 0 else "up")
                    deadline = k0 + 10
                    while (len(writes) == n or writes[-1] < k0) and time.perf_counter() < deadline:
                        await asyncio.sleep(0.0005)
                    latencies.setdefault(name, []).append(writes[-1] - k0 if writes and writes[-1] >= k0 else 10.0)
            stop.set()
            reporter.join()
    finally:
        StoreLoader.inline = False
    every = [v for values in latencies.values() for v in values]
    return {
        "reads": "UI thread (anchor)" if inline else "worker threads",
        "keypress_to_screen": ms(every),
        "by_screen": {name: ms(values) for name, values in latencies.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--panes", type=int, default=8)
    parser.add_argument("--presses", type=int, default=20)
    parser.add_argument(
        "--rate",
        type=float,
        default=200.0,
        help="lines/s per pane for the paced rows (the full-speed rows are always run)",
    )
    parser.add_argument("--per-chunk", action="store_true", help="also run the naive per-chunk design")
    parser.add_argument("--store-presses", type=int, default=30, help="keys pressed per screen on the large store")
    parser.add_argument("--skip-streaming", action="store_true", help="only the large-store rows")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "tui.json"))
    args = parser.parse_args()
    rows = []
    configs = [
        ("batched 60 Hz", 60.0, False, 0.0),
        ("unthrottled", 1e9, False, 0.0),
        ("batched 60 Hz", 60.0, False, args.rate),
        ("unthrottled", 1e9, False, args.rate),
    ]
    if args.per_chunk:
        configs.append(("per-chunk", 1e9, True, args.rate))
    for label, hz, per_chunk, rate in [] if args.skip_streaming else configs:
        result = asyncio.run(measure(args.panes, args.seconds, hz, args.presses, per_chunk, rate))
        result["config"] = label
        rows.append(result)
        print(label, rate or "full speed", "done", flush=True)
    header = (
        "config",
        "per pane",
        "emitted/s",
        "ingested/s",
        "rendered/s",
        "frames/s",
        "drain s",
        "key p50 ms",
        "key p95 ms",
    )
    print(" | ".join(header))
    for r in rows:
        k = r["keypress_to_screen"]
        print(
            " | ".join(
                str(x)
                for x in (
                    r["config"],
                    r["rate_per_pane"],
                    r["lines_emitted_per_s"],
                    r["lines_ingested_per_s"],
                    r["lines_rendered_per_s"],
                    r["frames_per_s"],
                    r["backlog_drain_s"],
                    k["p50_ms"],
                    k["p95_ms"],
                )
            )
        )
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "large.sqlite"
        t0 = time.perf_counter()
        build_large_store(path)
        print(f"large store: 100k steps, 10k metric points, built in {time.perf_counter() - t0:.0f}s", flush=True)
        store_rows = [asyncio.run(measure_store(path, inline, args.store_presses)) for inline in (True, False)]
    print("store reads | key p50 ms | key p95 ms | key max ms | p95 by screen")
    for r in store_rows:
        k = r["keypress_to_screen"]
        by = ", ".join(f"{name} {v['p95_ms']:.0f}" for name, v in r["by_screen"].items())
        print(f"{r['reads']} | {k['p50_ms']} | {k['p95_ms']} | {k['max_ms']} | {by}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": rows, "large_store": store_rows}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
