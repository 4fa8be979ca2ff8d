"""The TUI attached to a detached job: key latency and event-to-screen latency while 8 episodes
stream their shells through the job's events journal.

    python bench/tui_attach.py [--seconds 20] [--panes 8] [--rate 20] [--lines 2] [--history 200]

A writer process plays the detached job: it registers itself as a running job in a file store,
then emits shell output for `--panes` concurrent episodes through `EventJournal` (the journal a
detached job writes: a writer thread inserting every 50 ms), `--rate` chunks/s per episode of
`--lines` lines each, at irregular moments (exponential gaps). Before it starts, the journal
already holds `--history` finished episodes of 100 shell chunks each, so the TUI's catch-up
(the job's events so far, thinned) is measured on a job with a past.

The app runs headless (Textual's test driver, real compositor, 200x60) and attaches to the job as
`trsi-tui` would; the Sandboxes screen shows the 8 live panes. Measured:
- catch-up: from the app's start to the job attached with its running episodes in panes;
- event to screen: from the moment the job emitted a chunk (the time is written in the chunk) to
  the first composed screen update after its line was drawn in a pane (journal write, the
  TUI's 50 ms poll, the 60 Hz batching, drawing); only for panes wholly on screen from the chunk's
  emission until it was drawn (a line written while the Dashboard, a maximized pane or the grid's
  scrolling hid its pane is drawn when its pane shows again: those are counted apart, as
  `drawn_on_return`);
- key latency: from a key event to the first screen update composed after it took effect (the
  app's focus, mode or maximized pane differs from before the key, checked as each update is
  composed): `tab` (focus and enlarge the next pane), `z` (maximize it, and back), `1`/`2`
  (dashboard and back).
Targets: key p95 < 100 ms, event-to-screen p95 < 250 ms. Writes bench/results/tui_attach.json.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import multiprocessing as mp
import os
import random
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import ms

JOB = "pipeline-bench01"
MARK = re.compile(r"@(\d+\.\d+)#")
KEY_TIMEOUT_S = 2.0
TARGETS = {"key_p95_ms": 100.0, "event_to_screen_p95_ms": 250.0}


def fill_history(path: Path, episodes: int, chunks: int = 100) -> int:
    """A past for the job: finished episodes with their shell output, as its journal would hold."""
    from engine.events import EpisodeFinished, EpisodeStarted, EventBus, RunStarted, SandboxOutput
    from engine.jobs import EventJournal
    from engine.results import EpisodeResult

    bus = EventBus()
    with EventJournal(path, JOB, bus) as journal:
        bus.emit(RunStarted("past", "eval", episodes))
        for e in range(episodes):
            episode = f"past-{e:04d}"
            bus.emit(EpisodeStarted("past", episode, f"task-{e % 64}", "model"))
            for c in range(chunks):
                bus.emit(SandboxOutput(episode, "agent", "output", f"step {c}: compiling module_{c} ... ok\n"))
            result = EpisodeResult(
                episode, "past", f"task-{e % 64}", "train", "model", "local", 0, "completed", e % 3 == 0, 1, 2, 0.5
            )
            bus.emit(EpisodeFinished("past", result))
    return journal.written


def writer(path: str, panes: int, rate: float, lines: int, go, stop, seed: int = 0) -> None:
    """The detached job's process: registered as running, its episodes' output journaled."""
    from engine.events import EventBus
    from engine.jobs import EventJournal, JobRegistry
    from engine.store import Store

    store = Store(path)
    registry = JobRegistry(store.database)
    registry.start(JOB, "pipeline", ["pipeline", "run", "--headless"], os.getpid())
    bus = EventBus()
    with EventJournal(store.path, JOB, bus):
        n = stream(bus, panes, rate, lines, go, stop, seed)
    registry.finish(JOB, "done", f"{n} chunks")
    store.close()


def stream(bus, panes: int, rate: float, lines: int, go, stop, seed: int = 0) -> int:
    """`panes` episodes writing `rate` chunks/s each until `stop`, each chunk stamped with the time
    it was emitted; returns how many chunks."""
    from engine.events import EpisodePhase, EpisodeStarted, RunStarted, SandboxOutput

    rng = random.Random(seed)
    bus.emit(RunStarted("live", "eval", panes))
    for p in range(panes):
        bus.emit(EpisodeStarted("live", f"live-{p}", f"stream-{p}", "model"))
        bus.emit(EpisodePhase(f"live-{p}", "agent"))
        bus.emit(SandboxOutput(f"live-{p}", "agent", "command", "make -j4 all"))
    go.wait()
    n, due = 0, time.perf_counter()
    while not stop.is_set():
        due += rng.expovariate(rate * panes)  # irregular, as shells write
        ahead = due - time.perf_counter()
        if ahead > 0:
            time.sleep(ahead)
        p = rng.randrange(panes)
        stamp = f"@{time.time():.6f}#"
        text = "".join(f"\x1b[32m{n:>7}\x1b[0m {stamp} compiling module_{n}_{i} ... ok\n" for i in range(lines))
        bus.emit(SandboxOutput(f"live-{p}", "agent", "output", text))
        n += 1
    return n


async def measure(
    path: Path, panes: int, seconds: float, rate: float, lines: int, presses: int, attached: bool = True
) -> dict:
    """`attached`: the stream comes from a job's process through the journal; else (the anchor)
    from a thread of the app's own process through the engine's bus, as in-process work does."""
    from engine.api import Engine
    from engine.config import Config
    from engine.store import Store
    from trsi_tui.app import create_app, steady_collector
    from trsi_tui.widgets.shell_pane import ShellPane

    ctx = mp.get_context("spawn")
    go, stop = (ctx.Event(), ctx.Event()) if attached else (threading.Event(), threading.Event())
    if attached:
        proc = ctx.Process(target=writer, args=(str(path), panes, rate, lines, go, stop), daemon=True)
        proc.start()
    counted: list[int] = []
    drawn_marks: list[tuple[float, str]] = []  # (emit time, episode) of lines drawn since the last update
    shown_at: list[float] = []  # wall times of composed updates, and the panes each left on screen
    shown_panes: list[frozenset[str]] = []
    on_return: list[float] = []
    seen: set[str] = set()
    to_screen: list[float] = []
    writes: list[float] = []
    original_render_line = ShellPane.render_line

    def render_line(self, y: int):
        index = int(self.scroll_offset.y) + y
        if index < self.pane.buffer.line_count and index not in self._strips:
            plain = self.pane.buffer.lines[index].plain
            found = MARK.search(plain)
            if found and plain not in seen:  # drawn for the first time (not redrawn after a trim or resize)
                seen.add(plain)
                drawn_marks.append((float(found.group(1)), self.pane.episode_id))
        return original_render_line(self, y)

    ShellPane.render_line = render_line
    try:
        # The job must be registered before the app looks (it looks again every 2 s otherwise).
        deadline = time.monotonic() + 60
        probe = Store(path)
        while attached and not any(j.id == JOB and j.running for j in _jobs(probe)):
            if time.monotonic() > deadline:
                raise RuntimeError("the writer process did not register its job")
            time.sleep(0.05)
        app = create_app(Engine(Config(), Store(path)))
        steady_collector()  # as `trsi-tui` does when it runs the app (run_test does not)
        if not attached:
            producer = threading.Thread(
                target=lambda: counted.append(stream(app.engine.bus, panes, rate, lines, go, stop)), daemon=True
            )
        t_open = time.perf_counter()
        async with app.run_test(size=(200, 60)) as pilot:
            original_display = app._display  # noqa: SLF001 - each composed screen update passes here

            def ui_state() -> tuple:
                return app.focused, app.current_mode, app.screen.maximized

            # The key being measured: the state before it, and when an update first showed it.
            pressed: dict = {}

            def counting_display(screen, renderable) -> None:
                if renderable is not None:
                    now, wall = time.perf_counter(), time.time()
                    writes.append(now)
                    # An update is composed from the app's state of this moment: the first one
                    # composed after the key took effect is the one that shows it.
                    if pressed and pressed["shown"] is None and ui_state() != pressed["before"]:
                        pressed["shown"] = now
                    for emitted, episode in drawn_marks:
                        # On screen from its emission to now: in the update before it and every one since.
                        i = bisect.bisect_right(shown_at, emitted) - 1
                        visible = i >= 0 and all(episode in shown for shown in shown_panes[i:])
                        (to_screen if visible else on_return).append(wall - emitted)
                    drawn_marks.clear()
                original_display(screen, renderable)
                if renderable is not None:
                    visible = screen._compositor.visible_widgets  # noqa: SLF001 - what this update left on screen
                    shown_at.append(time.time())
                    whole = (w for w, (region, clip) in visible.items() if region.intersection(clip) == region)
                    shown_panes.append(frozenset(w.episode_id for w in whole if isinstance(w, ShellPane)))

            app._display = counting_display  # noqa: SLF001 - times composed updates
            if not attached:
                producer.start()
            while not ((app.job is not None or not attached) and len(app.live.running) >= panes):
                if time.perf_counter() - t_open > 60:
                    raise RuntimeError("the app did not attach")
                await asyncio.sleep(0.005)
            attach_s = time.perf_counter() - t_open
            await pilot.press("2")
            await pilot.pause(0.5)
            shown = len(list(app.screen.query(ShellPane)))
            go.set()
            await asyncio.sleep(1.0)  # the stream settles
            to_screen.clear()
            on_return.clear()
            keys = ["tab", "tab", "z", "z", "tab", "1", "2"]
            latencies: dict[str, list[float]] = {}
            missed = 0
            t0 = time.perf_counter()
            for i in range(presses):
                key = keys[i % len(keys)]
                k0 = time.perf_counter()
                pressed.update(before=ui_state(), shown=None)
                deadline = k0 + KEY_TIMEOUT_S
                app.simulate_key(key)
                while pressed["shown"] is None and time.perf_counter() < deadline:
                    await asyncio.sleep(0.0005)
                drawn = pressed["shown"]
                pressed.clear()
                if drawn is None:
                    missed += 1
                    latencies.setdefault(key, []).append(KEY_TIMEOUT_S)
                else:
                    latencies.setdefault(key, []).append(drawn - k0)
                await asyncio.sleep(max(0.05, seconds / presses - (time.perf_counter() - k0)))
            streamed_s = time.perf_counter() - t0
            if app.current_mode != "sandboxes":
                await pilot.press("2")
            stop.set()
            if attached:
                chunks_emitted = await asyncio.to_thread(_wait_done, proc, path)
            else:
                await asyncio.to_thread(producer.join, 10)
                chunks_emitted = counted[0] if counted else -1
            lines_in_panes = sum(p.buffer.line_count + p.buffer.dropped for p in app.live.panes.values())
            frames = sum(1 for w in writes if t0 <= w <= t0 + streamed_s)
            await pilot.pause(0.5)
            ended = app.job is None and app.job_ended is not None
    finally:
        ShellPane.render_line = original_render_line
        stop.set()
        go.set()
        if attached:
            proc.join(10)
    every_key = [v for values in latencies.values() for v in values]
    return {
        "mode": "attached (journal)" if attached else "in-process (bus), anchor",
        "panes": panes,
        "panes_shown": shown,
        "chunks_per_s_per_pane": rate,
        "lines_per_chunk": lines,
        "streamed_s": round(streamed_s, 1),
        "chunks_emitted": chunks_emitted,
        "lines_in_panes": lines_in_panes,
        "frames_per_s": round(frames / streamed_s, 1),
        "attach_s": round(attach_s, 3),
        "event_to_screen": ms(to_screen) if to_screen else None,
        "drawn_on_return": ms(on_return) if on_return else None,
        "keypress_to_screen": ms(every_key),
        "keys": {k: ms(v) for k, v in latencies.items()},
        "keypresses_unanswered_within_2s": missed,
        "job_end_seen": ended,
    }


def _jobs(store) -> list:
    from engine.jobs import JobRegistry

    return JobRegistry(store.database).list()


def _wait_done(proc, path: Path) -> int:
    from engine.jobs import JobRegistry
    from engine.store import Store

    proc.join(30)
    detail = JobRegistry(Store(path).database).get(JOB).detail
    return int(detail.split()[0]) if detail and detail.split()[0].isdigit() else -1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the keys are pressed while streaming")
    parser.add_argument("--panes", type=int, default=8)
    parser.add_argument("--rate", type=float, default=20.0, help="chunks/s per episode")
    parser.add_argument("--lines", type=int, default=2, help="lines per chunk")
    parser.add_argument("--presses", type=int, default=60)
    parser.add_argument("--history", type=int, default=200, help="finished episodes already in the journal")
    parser.add_argument("--no-anchor", action="store_true", help="skip the in-process row")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "tui_attach.json"))
    args = parser.parse_args()
    rows = []
    from engine.store import Store

    for attached in (True,) if args.no_anchor else (True, False):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "trsi.db"
            Store(path).close()
            history = 0
            if attached:
                t = time.perf_counter()
                history = fill_history(path, args.history)
                print(f"journal: {history} events of {args.history} finished episodes, {time.perf_counter() - t:.1f}s")
            run = measure(path, args.panes, args.seconds, args.rate, args.lines, args.presses, attached)
            row = asyncio.run(run)
        row["history_events"] = history
        e2s, keys = row["event_to_screen"] or {}, row["keypress_to_screen"]
        row["met"] = {
            "key_p95_ms": keys["p95_ms"] < TARGETS["key_p95_ms"],
            "event_to_screen_p95_ms": bool(e2s) and e2s["p95_ms"] < TARGETS["event_to_screen_p95_ms"],
        }
        rows.append(row)
    header = ("mode", "panes", "chunks/s/pane", "lines/chunk", "frames/s", "attach s")
    header += ("e2s p50", "e2s p95", "e2s max", "key p50", "key p95", "key max")
    print(" | ".join(header))
    for row in rows:
        e2s, keys = row["event_to_screen"] or {}, row["keypress_to_screen"]
        cells = (row["mode"], row["panes_shown"], row["chunks_per_s_per_pane"], row["lines_per_chunk"])
        cells += (row["frames_per_s"], row["attach_s"] if row["history_events"] else "-")
        cells += (e2s.get("p50_ms"), e2s.get("p95_ms"), e2s.get("max_ms"), keys["p50_ms"], keys["p95_ms"])
        print(" | ".join(str(x) for x in (*cells, keys["max_ms"])))
    for row in rows:
        by_key = ", ".join(f"{k} {v['p95_ms']:.0f} (n={v['n']})" for k, v in row["keys"].items())
        back = row["drawn_on_return"] or {"n": 0, "p50_ms": None}
        print(f"{row['mode']}: key p95 ms by key: {by_key}; event-to-screen samples {row['event_to_screen']['n']}")
        print(f"  lines written while their pane was covered, drawn when it showed again: {back['n']}", end="")
        print(f" (p50 {back['p50_ms']} ms)")
        print(f"  targets (key p95 < 100 ms, event-to-screen p95 < 250 ms) met: {row['met']}")
    print(f"the app saw the job end: {rows[0]['job_end_seen']}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"targets": TARGETS, "rows": rows}, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
