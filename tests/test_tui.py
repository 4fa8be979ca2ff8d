"""The TUI driven with Pilot around an injected engine and store: what a user sees and what lands in the store."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from textual.widgets import DataTable, Input, Static

from engine.api import Engine, EvalRequest, PipelineRequest
from engine.config import Config, parse_config
from engine.events import EpisodeStarted, RunFinished, RunStarted, SandboxOutput
from engine.store import Store
from tests.conftest import write_task
from tests.tui_data import EVAL_RUN, _episode, build_store, row_text, settle
from trsi_tui.app import create_app
from trsi_tui.screens.confirm import ConfirmScreen
from trsi_tui.screens.curves import CurvesScreen
from trsi_tui.screens.help import HelpScreen
from trsi_tui.screens.runbooks import RunbooksScreen
from trsi_tui.screens.sandboxes import SandboxesScreen
from trsi_tui.screens.start_run import StartRunScreen
from trsi_tui.screens.trajectory import TrajectoryScreen
from trsi_tui.widgets.shell_pane import ShellPane


async def wait_until(pilot, condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the UI")
        await pilot.pause(0.05)


def text_of(app, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def test_dashboard_shows_stored_stages_and_runs(tmp_path: Path):
    app = create_app(Engine(Config(), build_store(tmp_path / "db.sqlite")))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        stages = app.screen.query_one("#stages", DataTable)
        assert row_text(stages, 0)[:2] == ["Base", "done"]
        assert row_text(stages, 0)[2] == "0.500 [0.250, 0.750]"
        assert row_text(stages, 1)[1] == "running" and row_text(stages, 2)[1] == "not run"
        assert not app.screen.query_one("#seeds", DataTable).display  # one training seed: no table over seeds
        runs = app.screen.query_one("#runs", DataTable)
        assert row_text(runs, 0)[0] == EVAL_RUN and row_text(runs, 0)[6] == "0.500 [0.250, 0.750]"
        await pilot.press("enter")  # open the highlighted run's trajectories
        assert app.current_mode == "trajectories"
        assert app.screen.query_one("#episodes", DataTable).row_count == 7
        await pilot.press("q")
    assert not app.is_running


async def test_dashboard_shows_each_stage_over_training_seeds_with_its_gain_over_the_parent(tmp_path: Path):
    from dataclasses import replace

    store = build_store(tmp_path / "db.sqlite")
    episodes = [e for e in store.runs.episodes(EVAL_RUN) if e.reward is not None]
    base = store.stages.all()["Base"]
    lineages = {"RSR-1": episodes, "RSR-1 seed 1": [replace(e, success=True) for e in episodes]}
    for i, e in enumerate(episodes):  # Base and both lineages' RSR-1 on the same (task, sampling seed) keys
        store.jobs.done("stage/Base", f"{e.task}|{i}", EVAL_RUN, e.id, e.success)
    for stage, outcomes in lineages.items():
        store.runs.create("eval", backend="local", agent="model", tasks_path="", total=6, config={}, run_id=stage[-6:])
        for i, e in enumerate(outcomes):
            result = _episode(stage[-6:], i, e.task, "model", success=e.success, checks=(), reward=float(e.success))
            store.runs.record_episode(result)
            store.jobs.done(f"stage/{stage}", f"{e.task}|{i}", stage[-6:], result.episode_id, e.success)
        store.stages.put(replace(base, name=stage, checkpoint=f"ckpt-{stage}", parent=base.checkpoint))
    app = create_app(Engine(Config(), store))
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        table = app.screen.query_one("#seeds", DataTable)
        assert table.display
        rows = {row_text(table, i)[0]: row_text(table, i) for i in range(table.row_count)}
        assert rows["Base"][1:3] == ["1", "0: 0.375"]  # tasks weigh equally: (1 + 0 + 1/2 + 0) / 4
        # Seed 1 passes everything Base failed: +0.625 over Base; seed 0 is Base's episodes: +0.
        assert rows["RSR-1"][1:3] == ["2", "0: 0.375, 1: 1.000"]
        assert rows["RSR-1"][3].startswith("0.688 [") and rows["RSR-1"][4].startswith("+0.312 [")
        assert rows["RSR-1"][4].endswith("vs Base")
        assert rows["RPR-1"][1:] == ["0", "-", "-", "-"]
        await pilot.press("6")  # Curves: pass@1 per stage over the seeds
        await settle(pilot)
        assert "mean over 2 training seeds" in app.screen.titles["stages"]


async def test_tasks_screen_shows_the_current_models_pass_estimate_from_the_newest_rsr_round(tmp_path: Path):
    store = build_store(tmp_path / "db.sqlite")
    # Round 2 explored count-lines-1 again and never passed: the newer round's attempts count.
    store.jobs.done("rsr/2/explore", "count-lines-1|fenced-bash-plain|0", EVAL_RUN, f"{EVAL_RUN}-0001", False)
    app = create_app(Engine(Config(), store))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("3")
        await settle(pilot)
        table = app.screen.query_one("#tasks", DataTable)
        row = row_text(table, key="count-lines-1")
        assert row[-1] == "0/1 0.33 r2"  # (0 + 1) / (1 + 2): never 0, never 1
        assert row_text(table, key="copy-file-1")[-1] == "-"  # never explored


async def test_oracle_eval_of_two_builtin_tasks_started_from_the_form_streams_both_shells(tmp_path: Path):
    store = Store(tmp_path / "db.sqlite")
    app = create_app(Engine(Config(), store))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("n")
        assert isinstance(app.screen, StartRunScreen)
        app.screen.query_one("#only", Input).value = "copy-file-1, count-lines-1"
        await pilot.click("#start")
        await wait_until(pilot, lambda: isinstance(app.screen, SandboxesScreen) and not app.run_in_progress)
        await pilot.pause()
        panes = list(app.screen.query(ShellPane))
        assert sorted(p.pane.task for p in panes) == ["copy-file-1", "count-lines-1"]
        checks = {"copy-file-1": 4, "count-lines-1": 3}  # copy-file also refuses a link for the copy
        for pane in panes:
            lines = pane.pane.buffer.plain_lines()
            assert "$ bash /solution/solve.sh" in lines  # the agent's command streamed into its own pane
            n = checks[pane.pane.task]
            assert lines[-1].startswith(f"PASS {n}/{n} checks, reward 1.00")
            assert pane.has_class("-passed") and pane.border_subtitle.startswith("PASS")
        run = store.runs.list()[0]
        assert run.status == "finished" and run.success_rate == 1.0
        assert {e.task for e in store.runs.episodes(run.id)} == {"copy-file-1", "count-lines-1"}


async def test_start_form_rejects_bad_input_and_says_why(tmp_path: Path):
    app = create_app(Engine(Config(), Store(tmp_path / "db.sqlite")))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("n")
        form = app.screen
        form.query_one("#only", Input).value = "no-such-task"
        await pilot.click("#start")
        assert isinstance(app.screen, StartRunScreen)
        assert "no-such-task" in text_of(app, "#form-error")
        form.query_one("#only", Input).value = ""
        form.query_one("#concurrency", Input).value = "0"
        await pilot.pause(0.3)  # a button ignores a second press while it still shows the first
        await pilot.click("#start")
        assert "Concurrency" in text_of(app, "#form-error") and not app.run_in_progress


async def test_step_through_a_stored_trajectory(tmp_path: Path):
    app = create_app(Engine(Config(), build_store(tmp_path / "db.sqlite")))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("4")
        await settle(pilot)
        app.screen.filter_run(EVAL_RUN)
        await settle(pilot)
        table = app.screen.query_one("#episodes", DataTable)
        assert table.row_count == 7
        table.focus()
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TrajectoryScreen)
        assert "PASS" in text_of(app, "#summary") and "Step 1 of 4" in text_of(app, "#step-detail")
        await pilot.press("n")
        detail = text_of(app, "#step-detail")
        assert "Step 2 of 4" in detail and "Parse error" in detail and "no <bash>" in detail
        await pilot.press("n", "n", "n")  # past the last step stays on it
        assert "Step 4 of 4" in text_of(app, "#step-detail") and "cat /app/count.txt" in text_of(app, "#step-detail")
        await pilot.press("p")
        assert "Step 3 of 4" in text_of(app, "#step-detail")
        assert "✓ a" in text_of(app, "#final")
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.query_one("#episodes", DataTable).row_count == 7


async def test_trajectory_filters_narrow_the_list(tmp_path: Path):
    app = create_app(Engine(Config(), build_store(tmp_path / "db.sqlite")))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("4")
        await settle(pilot)
        screen = app.screen
        assert screen.query_one("#episodes", DataTable).row_count == 11  # every run's episodes
        screen.filter_run(EVAL_RUN)
        await settle(pilot)
        screen.query_one("#outcome").value = "infra"
        await settle(pilot)
        table = screen.query_one("#episodes", DataTable)
        assert table.row_count == 1 and row_text(table, 0)[7] == "sandbox_error"
        screen.query_one("#outcome").value = "all"
        await pilot.press("slash", *"copy")
        await settle(pilot)
        assert {row_text(table, i)[1] for i in range(table.row_count)} == {"copy-file-1", "copy-file-2"}


async def test_approve_edit_and_reject_runbook_drafts_write_the_store(tmp_path: Path):
    store = build_store(tmp_path / "db.sqlite")
    app = create_app(Engine(Config(), store))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("5")
        await settle(pilot)
        assert isinstance(app.screen, RunbooksScreen)
        table = app.screen.query_one("#runbooks", DataTable)
        assert table.row_count == 2  # the pending queue; the approved one is filtered out
        clean, leaky = [r.id for r in store.runbooks.list(status="pending")]
        assert "LEAK" in row_text(table, 1)[4]

        await pilot.press("e")
        app.screen.query_one("#text").insert("\n4. Done.\n")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert store.runbooks.get(clean).edited and "4. Done." in store.runbooks.get(clean).text
        table.focus()
        await pilot.press("a")
        await settle(pilot)
        approved = Store(tmp_path / "db.sqlite").runbooks.get(clean)  # a fresh reader sees the decision
        assert (approved.status, approved.decided_by) == ("approved", "human")

        assert table.row_count == 1 and "reject" in row_text(table, 0)[5]
        app.screen.query_one("#note", Input).value = "quotes the verifier"
        table.focus()
        await pilot.press("x")
        await settle(pilot)
        rejected = Store(tmp_path / "db.sqlite").runbooks.get(leaky)
        assert (rejected.status, rejected.note) == ("rejected", "quotes the verifier")
        assert table.row_count == 0 and "No runbooks" in text_of(app, "#meta")


async def test_the_dashboard_stage_table_fills_in_live_as_the_pipeline_reports(tmp_path: Path):
    from dataclasses import replace

    from engine.events import PipelineProgress
    from engine.store.records import StageRecord

    store = build_store(tmp_path / "db.sqlite")
    engine = Engine(Config(), store)
    app = create_app(engine)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        stages = app.screen.query_one("#stages", DataTable)
        assert row_text(stages, 1)[1] == "running"
        assert "RPR rollouts" in app.screen.reward_title and "6 round" in app.screen.reward_title

        def pipeline_thread():  # what the pipeline does from its worker thread
            rec = StageRecord(
                "RSR-1",
                "done",
                checkpoint="bundled:smollm2-135m+lora=/ck/rsr-1/adapter.gguf",
                parent="bundled:smollm2-135m",
                pass_at_1=0.125,
                ci_low=0.0,
                ci_high=0.25,
                detail="16 eval episodes",
            )
            store.stages.put(rec)
            engine.bus.emit(PipelineProgress("RSR-1", "done", rec.detail))
            store.stages.put(replace(rec, name="RPR-1", status="running", detail="training"))
            engine.bus.emit(PipelineProgress("RPR-1", "running", "training"))

        threading.Thread(target=pipeline_thread).start()
        await wait_until(pilot, lambda: row_text(stages, 2)[1] == "running")
        assert row_text(stages, 1)[:3] == ["RSR-1", "done", "0.125 [0.000, 0.250]"]
        assert row_text(stages, 1)[3].endswith("rsr-1/adapter.gguf")
        assert "Pipeline: RPR-1 running: training" in text_of(app, "#now")


async def test_curves_plot_rewards_and_training_metrics(tmp_path: Path):
    app = create_app(Engine(Config(), build_store(tmp_path / "db.sqlite")))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("6")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, CurvesScreen) and screen.run_id == EVAL_RUN
        assert screen.titles["reward"].endswith("(6 scored)")
        assert screen.titles["training"].endswith("none logged for this run")
        runs = screen.query_one("#runs", DataTable)
        runs.focus()
        await pilot.press("down", "down")  # runs newest first, then runs that only log metrics
        await settle(pilot)
        assert screen.run_id == "20261129-130000-sft001"
        assert screen.titles["training"] == "Training metrics: sft/loss"
        await pilot.press("down")
        await settle(pilot)
        assert screen.run_id == "rpr-1"
        # The rounds' own success, and the probe's on fixed tasks and seeds (what shows the actor improving).
        assert "rpr/success" in screen.titles["training"] and "rpr/probe_success" in screen.titles["training"]
        assert screen.query_one("#stages").display  # Base has a pass@1, so the stage chart shows


async def test_quitting_while_work_runs_asks_then_stops_the_sandboxes(tmp_path: Path):
    write_task(tmp_path / "suite", "slow", solve="sleep 60")
    store = Store(tmp_path / "db.sqlite")
    app = create_app(Engine(Config(), store))
    async with app.run_test(size=(140, 40)) as pilot:
        app.start_run(EvalRequest(agent="oracle", tasks=str(tmp_path / "suite")))
        await wait_until(pilot, lambda: any(p.phase == "agent" for p in app.live.panes.values()))
        await pilot.press("q")
        assert isinstance(app.screen, ConfirmScreen) and app.is_running
        await pilot.press("escape")  # keep running
        assert app.run_in_progress
        started = time.monotonic()
        await pilot.press("q")
        await pilot.click("#yes")
        await wait_until(pilot, lambda: not app.is_running, timeout=30)
    assert time.monotonic() - started < 20  # the 60 s sleep was killed, not waited for
    run = store.runs.list()[0]
    assert run.status == "interrupted" and store.runs.episodes(run.id) == []


async def test_eight_panes_streaming_flat_out_are_batched_to_at_most_60_redraws_a_second(tmp_path: Path):
    app = create_app(Engine(Config(), Store(tmp_path / "db.sqlite")))
    flushes = []
    original = app.flush_output

    def counting_flush() -> None:
        flushes.append(time.monotonic())
        original()

    app.flush_output = counting_flush
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("2")
        bus = app.engine.bus
        bus.emit(RunStarted("r", "eval", 8))
        for i in range(8):
            bus.emit(EpisodeStarted("r", f"ep{i}", f"task-{i}", "oracle"))

        def stream(i: int) -> None:
            for n in range(1500):
                bus.emit(SandboxOutput(f"ep{i}", "agent", "output", f"line {n} of \x1b[32mep{i}\x1b[0m\n"))

        threads = [threading.Thread(target=stream, args=(i,)) for i in range(8)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                await pilot.pause(0.01)
        await wait_until(
            pilot,
            lambda: all(
                f"ep{i}" in app.live.panes and app.live.panes[f"ep{i}"].buffer.line_count == 1500 for i in range(8)
            ),
        )
        elapsed = time.monotonic() - t0
        await pilot.pause()
        assert len(flushes) <= 60 * elapsed + 5
        panes = list(app.screen.query(ShellPane))
        assert len(panes) == 8
        # Each pane follows its tail: the last line is on screen, and only visible lines were rendered.
        assert all(p.scroll_y == p.max_scroll_y for p in panes)
        assert all(p.lines_drawn < 1500 for p in panes)
        bus.emit(RunFinished("r", 0.0, 0))


def write_lines(app, lines: range) -> None:
    for n in lines:
        app.engine.bus.emit(SandboxOutput("ep0", "agent", "output", f"line {n}\n"))


async def streamed_pane(app, pilot, episodes: int = 1) -> ShellPane:
    """The Sandboxes screen with `episodes` running, 200 lines in ep0's pane, which follows them."""
    await pilot.press("2")
    app.engine.bus.emit(RunStarted("r", "eval", episodes))
    for i in range(episodes):
        app.engine.bus.emit(EpisodeStarted("r", f"ep{i}", f"task-{i}", "oracle"))
    write_lines(app, range(200))
    await wait_until(pilot, lambda: "ep0" in app.live.panes and app.live.panes["ep0"].buffer.line_count == 200)
    await pilot.pause()
    pane = app.screen.query_one("#pane-ep0", ShellPane)
    # The pane takes the buffer's lines on its next refresh, not when the buffer has them.
    await wait_until(pilot, lambda: pane.virtual_size.height >= 200 and pane.max_scroll_y > 0)
    assert pane.follow and pane.scroll_y == pane.max_scroll_y
    return pane


async def test_a_pane_scrolled_back_stays_put_says_so_and_follows_again_at_the_end(tmp_path: Path):
    app = create_app(Engine(Config(), Store(tmp_path / "db.sqlite")))
    async with app.run_test(size=(160, 50)) as pilot:
        pane = await streamed_pane(app, pilot, episodes=2)
        pane.focus()
        await pilot.pause()
        await pilot.press("pageup")
        # Paging scrolls with an animation: on a loaded machine one pause does not see its end.
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        assert not pane.follow and "scrolled back" in str(pane.border_subtitle)
        where = pane.scroll_y
        pane.blur()  # unfocused panes show no scrollbar: the border is what says it
        write_lines(app, range(200, 260))
        await wait_until(pilot, lambda: app.live.panes["ep0"].buffer.line_count == 260)
        await pilot.pause()
        assert pane.scroll_y == where and "scrolled back" in str(pane.border_subtitle)
        pane.focus()
        await pilot.press("end")
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        assert pane.follow and pane.scroll_y == pane.max_scroll_y
        assert "scrolled back" not in str(pane.border_subtitle)
        app.engine.bus.emit(RunFinished("r", 0.0, 0))


async def test_a_scroll_back_right_after_a_resize_is_not_undone_by_the_resize(tmp_path: Path):
    # A resize (focusing a pane shows its scrollbar) asks to follow the tail after the next
    # refresh; a page up pressed before that refresh must win.
    app = create_app(Engine(Config(), Store(tmp_path / "db.sqlite")))
    async with app.run_test(size=(160, 50)) as pilot:
        pane = await streamed_pane(app, pilot)
        pane.on_resize()
        pane.scroll_to(y=0, animate=False, immediate=True)
        assert not pane.follow
        await pilot.pause()
        await pilot.pause()
        assert pane.scroll_y == 0 and not pane.follow
        app.engine.bus.emit(RunFinished("r", 0.0, 0))


async def test_keymap_from_config_remaps_a_binding_and_unknown_ids_are_reported(tmp_path: Path):
    config = parse_config('[tui.keymap]\n"app.screen.curves" = "c"\n"no.such.binding" = "f9"\n')
    app = create_app(Engine(config, Store(tmp_path / "db.sqlite")))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("c")
        assert isinstance(app.screen, CurvesScreen)
        assert app.keymap_errors == ["no.such.binding"]
        assert any("no.such.binding" in n.message for n in app._notifications)  # noqa: SLF001 - Textual keeps shown notifications private


async def test_help_lists_bindings_with_ids_and_the_palette_jumps_to_screens(tmp_path: Path):
    app = create_app(Engine(Config(), Store(tmp_path / "db.sqlite")))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        keys = app.screen.query_one("#keys", DataTable)
        ids = {row_text(keys, i)[2] for i in range(keys.row_count)}
        assert {"app.screen.runbooks", "app.new_run", "app.quit", "dashboard.refresh"} <= ids
        await pilot.press("escape")
        await pilot.press("ctrl+p")
        await pilot.press(*"go to runbooks")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, RunbooksScreen)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("plain\n", ["plain"]),
        ("10%\r50%\r100%\n", ["100%"]),
        ("abcdef\rXY\n", ["XYcdef"]),
        ("abcdef\rXY\x1b[K\n", ["XY"]),
        ("tab\there\n", ["tab     here"]),
        ("a\r\nb\n", ["a", "b"]),
    ],
)
def test_terminal_buffer_handles_carriage_returns_and_erase(text: str, expected: list[str]):
    from trsi_tui.widgets.terminal_buffer import TerminalBuffer

    buffer = TerminalBuffer()
    buffer.feed(text)
    assert buffer.plain_lines() == expected


def test_terminal_buffer_keeps_colours_across_split_escape_sequences_and_trims():
    from trsi_tui.widgets.terminal_buffer import TerminalBuffer

    buffer = TerminalBuffer(max_lines=3)
    buffer.feed("ok \x1b[3")
    buffer.feed("1mred\x1b[0m done\n")
    assert buffer.plain_lines() == ["ok red done"]
    (span,) = buffer.lines[0].spans
    assert (span.start, span.end, span.style.color.name) == (3, 6, "color(1)")  # ANSI red
    assert buffer.take_dirty() == {0, 1}
    buffer.feed("2\n3\n4\n")
    assert buffer.take_dirty() is None  # lines were trimmed off the top: everything moved
    assert buffer.plain_lines() == ["3", "4"] and buffer.dropped == 2


async def test_output_that_overtakes_its_episode_started_message_is_not_lost(tmp_path: Path):
    app = create_app(Engine(Config(), Store(tmp_path / "db.sqlite")))
    async with app.run_test(size=(140, 40)) as pilot:
        app._on_bus_event(EpisodeStarted("r", "a", "task-a", "oracle"))  # noqa: SLF001 - the app's bus listener, called as the bus would
        app._on_bus_event(SandboxOutput("a", "agent", "output", "from a\n"))  # wakes the UI: drains before "b" exists  # noqa: SLF001 - the app's bus listener, called as the bus would
        app._on_bus_event(EpisodeStarted("r", "b", "task-b", "oracle"))  # noqa: SLF001 - the app's bus listener, called as the bus would
        app._on_bus_event(SandboxOutput("b", "agent", "output", "from b\n"))  # noqa: SLF001 - the app's bus listener, called as the bus would
        await pilot.pause(0.1)
        assert app.live.panes["a"].buffer.plain_lines() == ["from a"]
        assert app.live.panes["b"].buffer.plain_lines() == ["from b"]


async def test_runbooks_drafted_by_a_running_round_appear_in_the_open_queue(tmp_path: Path):
    from engine.events import RsrProgress, RunbookDrafted
    from engine.store.records import RunbookDraft

    store = Store(tmp_path / "db.sqlite")
    app = create_app(Engine(Config(), store))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("5")
        await settle(pilot)
        table = app.screen.query_one("#runbooks", DataTable)
        assert table.row_count == 0
        rid = store.runbooks.add(RunbookDraft("hello-a", 1, "ep", "# Goal\nx\n", "xml-bash", author="template"))
        app.engine.bus.emit(RunbookDrafted(1, rid, "hello-a", "pending"))
        app.engine.bus.emit(RsrProgress(1, "approval", "waiting for a person to decide 1 runbook(s) in the TUI"))
        await pilot.pause(0.1)
        await settle(pilot)
        assert table.row_count == 1 and "written by template" in text_of(app, "#meta")
        await pilot.press("1")
        assert "RSR round 1: approval: waiting for a person" in text_of(app, "#now")


async def test_the_rsr_form_refuses_a_model_it_cannot_train(tmp_path: Path):
    app = create_app(Engine(Config(), Store(tmp_path / "db.sqlite")))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("R")
        form = app.screen
        form.query_one("#model", Input).value = "openai:http://127.0.0.1:9/v1#m"
        await pilot.click("#start")
        assert "needs bundled:NAME or hf:PATH" in text_of(app, "#form-error") and not app.run_in_progress
        form.query_one("#model", Input).value = "nonsense"
        await pilot.pause(0.3)
        await pilot.click("#start")
        assert "not KIND:TARGET" in text_of(app, "#form-error")


async def test_a_pipeline_started_with_the_app_reports_a_broken_suite_in_the_stage_table(tmp_path: Path):
    suite = tmp_path / "suite"
    write_task(suite, "only-train", toml='[metadata]\nsplit = "train"\n[agent]\ntimeout_sec = 30\n')
    engine = Engine(Config(), Store(tmp_path / "db.sqlite"))
    app = create_app(engine, start_pipeline=PipelineRequest(tasks=str(suite)))
    async with app.run_test(size=(140, 40)) as pilot:
        assert app.current_mode == "dashboard"
        await settle(pilot)
        stages = app.screen.query_one("#stages", DataTable)
        await wait_until(pilot, lambda: row_text(stages, 0)[1] == "failed")
        assert "no tasks in the eval split" in row_text(stages, 0)[4]
        await wait_until(pilot, lambda: not app.run_in_progress)
        assert row_text(stages, 1)[1] == "not run"  # nothing after a failed stage starts
    assert engine.store.stages.all()["Base"].status == "failed"


async def test_a_pane_says_which_cluster_node_runs_its_episode(tmp_path: Path):
    app = create_app(Engine(Config(), Store(tmp_path / "db.sqlite")))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("2")
        app.engine.bus.emit(RunStarted("r", "eval", 2))
        app.engine.bus.emit(EpisodeStarted("r", "here", "task-a", "oracle"))
        app.engine.bus.emit(EpisodeStarted("r", "there", "task-b", "model", "box-2:1a2b3c4d"))
        await wait_until(pilot, lambda: len(list(app.screen.query(ShellPane))) == 2)
        await pilot.pause(0.1)
        titles = sorted(str(p.border_title) for p in app.screen.query(ShellPane))
        assert titles == ["task-a · oracle", "task-b · model @ box-2:1a2b3c4d"]
