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
per wake-up), each with producers at full speed and paced (`--rate` lines/s per pane). `--per-chunk` adds the naive design (a message and a flush for every chunk); on
2 cores its message backlog grows without bound at this rate, so it is off by default.
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


async def measure(panes: int, seconds: float, frame_hz: float, presses: int, per_chunk: bool,
                  rate: float) -> dict[str, object]:
    app = create_app(Engine(Config(), Store(":memory:")))
    app.frame_hz = frame_hz
    if per_chunk:  # the naive design: one message and one flush for every chunk of output
        add = app._batcher.add  # noqa: SLF001
        app._batcher.add = lambda *a: add(*a) or True
    writes: list[float] = []
    async with app.run_test(size=(200, 60)) as pilot:
        original_display = app._display  # noqa: SLF001 - each composed screen update passes here

        def counting_display(screen, renderable) -> None:
            if renderable is not None:
                writes.append(time.perf_counter())
            original_display(screen, renderable)

        app._display = counting_display
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
        ingested_at_stop = sum(app.live.panes[f"ep{p}"].buffer.line_count + app.live.panes[f"ep{p}"].buffer.dropped
                               for p in range(panes))
        drawn = sum(p.lines_drawn for p in app.screen.query(ShellPane))
        # Let the UI drain what was emitted, to report the backlog honestly.
        drain0 = time.perf_counter()
        total = sum(emitted)
        while sum(app.live.panes[f"ep{p}"].buffer.line_count + app.live.panes[f"ep{p}"].buffer.dropped
                  for p in range(panes)) < total and time.perf_counter() - drain0 < 60:
            await pilot.pause(0.05)
        drain_s = time.perf_counter() - drain0
    return {
        "frame_hz": frame_hz, "panes": panes, "rate_per_pane": rate or "full speed", "seconds": round(elapsed, 2),
        "lines_emitted_per_s": round(total / elapsed),
        "lines_ingested_per_s": round(ingested_at_stop / elapsed),
        "lines_rendered_per_s": round(drawn / elapsed),
        "frames_per_s": round(frames / elapsed, 1),
        "backlog_drain_s": round(drain_s, 2),
        "keypress_to_screen": ms(latencies),
        "keypresses_unanswered_within_2s": missed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--panes", type=int, default=8)
    parser.add_argument("--presses", type=int, default=20)
    parser.add_argument("--rate", type=float, default=200.0,
                        help="lines/s per pane for the paced rows (the full-speed rows are always run)")
    parser.add_argument("--per-chunk", action="store_true", help="also run the naive per-chunk design")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "tui.json"))
    args = parser.parse_args()
    rows = []
    configs = [("batched 60 Hz", 60.0, False, 0.0), ("unthrottled", 1e9, False, 0.0),
               ("batched 60 Hz", 60.0, False, args.rate), ("unthrottled", 1e9, False, args.rate)]
    if args.per_chunk:
        configs.append(("per-chunk", 1e9, True, args.rate))
    for label, hz, per_chunk, rate in configs:
        result = asyncio.run(measure(args.panes, args.seconds, hz, args.presses, per_chunk, rate))
        result["config"] = label
        rows.append(result)
        print(label, rate or "full speed", "done", flush=True)
    header = ("config", "per pane", "emitted/s", "ingested/s", "rendered/s", "frames/s", "drain s", "key p50 ms", "key p95 ms")
    print(" | ".join(header))
    for r in rows:
        k = r["keypress_to_screen"]
        print(" | ".join(str(x) for x in (r["config"], r["rate_per_pane"], r["lines_emitted_per_s"], r["lines_ingested_per_s"],
                                          r["lines_rendered_per_s"], r["frames_per_s"], r["backlog_drain_s"],
                                          k["p50_ms"], k["p95_ms"])))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": rows}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
