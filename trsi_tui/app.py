"""The Textual app, built by a factory so tests can inject their own engine and store.

Threads and state: the engine runs in a thread worker; its events reach the app only as
posted messages (`EngineEvent`, `OutputPending`, `RunEnded`), and the handlers here are the
only code that changes `self.live`. Sandbox output is batched and applied at most `FRAME_HZ`
times a second, however fast the shells write.

Work that runs in a runner job (`--detach`, a command in another terminal) reaches the app the
same way: `attach.JobWatcher` follows the newest running job's events journal and hands each event
to `_on_bus_event`, as the engine's bus does; quitting then leaves the job running (or stops it,
if asked). Long work started here (`n`, `R`, `P`, a task's oracle) runs as such a job too when
`[tui] detach` is on (the default, `background.py`), and the app attaches to it; with it off, or
where no job would work on this engine's store and config, it runs in a thread worker here.
"""

from __future__ import annotations

import gc
import logging
import time
from typing import Callable

from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.timer import Timer

from engine.api import Engine, EvalRequest, JobActivity, PipelineRequest, RsrRequest, RunnerJob, WorkBusy
from engine.events import (
    EpisodeFinished,
    EpisodeStarted,
    Event,
    PipelineProgress,
    RprProgress,
    RsrProgress,
    RunbookDrafted,
    RunFinished,
    RunStarted,
    SandboxOutput,
)
from trsi_tui.attach import JobWatcher
from trsi_tui.background import eval_args, pipeline_args, rsr_args, start_job
from trsi_tui.commands import TrsiCommands
from trsi_tui.live import LiveState, OutputBatcher
from trsi_tui.messages import (
    EngineEvent,
    JobActivityChanged,
    JobAttached,
    JobChanged,
    JobEnded,
    JobStartFailed,
    LiveChanged,
    OutputPending,
    RunEnded,
)
from trsi_tui.screens.confirm import ChoiceScreen, ConfirmScreen
from trsi_tui.screens.curves import CurvesScreen
from trsi_tui.screens.dashboard import DashboardScreen
from trsi_tui.screens.help import HelpScreen
from trsi_tui.screens.runbooks import RunbooksScreen
from trsi_tui.screens.sandboxes import SandboxesScreen
from trsi_tui.screens.start_rsr import StartRsrScreen
from trsi_tui.screens.start_run import StartRunScreen
from trsi_tui.screens.tasks import TasksScreen
from trsi_tui.screens.trajectories import TrajectoriesScreen

FRAME_HZ = 60
STRUCTURAL = (
    EpisodeStarted,
    EpisodeFinished,
    RunStarted,
    RunFinished,
    RsrProgress,
    RunbookDrafted,
    RprProgress,
    PipelineProgress,
)

SCREENS_BY_MODE = {
    "dashboard": DashboardScreen,
    "sandboxes": SandboxesScreen,
    "tasks": TasksScreen,
    "trajectories": TrajectoriesScreen,
    "runbooks": RunbooksScreen,
    "curves": CurvesScreen,
}

log = logging.getLogger(__name__)


class TrsiApp(App):
    TITLE = "trsi-tui"
    SUB_TITLE = "terminal agents, recursive self-improvement"
    COMMANDS = App.COMMANDS | {TrsiCommands}
    MODES = SCREENS_BY_MODE
    DEFAULT_MODE = "dashboard"
    BINDINGS = [
        Binding("1", "switch_mode('dashboard')", "Dashboard", id="app.screen.dashboard"),
        Binding("2", "switch_mode('sandboxes')", "Sandboxes", id="app.screen.sandboxes"),
        Binding("3", "switch_mode('tasks')", "Tasks", id="app.screen.tasks"),
        Binding("4", "switch_mode('trajectories')", "Trajectories", id="app.screen.trajectories"),
        Binding("5", "switch_mode('runbooks')", "Runbooks", id="app.screen.runbooks"),
        Binding("6", "switch_mode('curves')", "Curves", id="app.screen.curves"),
        Binding("n", "new_run", "New run", id="app.new_run"),
        Binding("R", "new_rsr", "RSR round", id="app.new_rsr"),
        Binding("P", "pipeline", "Pipeline", id="app.pipeline"),
        Binding("s", "stop_run", "Stop run", id="app.stop_run", show=False),
        Binding("question_mark", "help", "Help", id="app.help", key_display="?"),
        Binding("q", "quit", "Quit", id="app.quit"),
    ]

    def __init__(
        self, engine: Engine, start_pipeline: PipelineRequest | None = None, follow_job: RunnerJob | None = None
    ) -> None:
        """`start_pipeline`: the pipeline to start as soon as the app is up; `follow_job`: a runner
        job to attach to at once (one started for it, as `pipeline run` starts the pipeline)."""
        super().__init__()
        self.engine = engine
        self._pipeline_on_mount = start_pipeline
        self._follow_on_mount = follow_job
        self.live = LiveState()
        self._batcher = OutputBatcher()
        # Output drained before its EpisodeStarted message was handled (both race in from engine
        # threads); it is written as soon as the pane exists.
        self._early_output: dict[str, list[tuple[str, str, str]]] = {}
        self._last_flush = 0.0
        self._flush_timer: Timer | None = None
        self._unsubscribe = None
        self._exit_when_stopped = False
        self.run_in_progress = False
        # The detached job the app follows (attach.JobWatcher), while it runs; then the last one.
        self.job: RunnerJob | None = None
        self.job_activity = JobActivity()
        self.job_stopping = False  # a stop was sent to it
        self.job_ended: RunnerJob | None = None
        self._exit_when_job_ended = False
        self.job_starting = ""  # the kind of job the app has started, until it is attached
        # On attach, panes for the job's running episodes only (finished ones count in its progress).
        self._watcher = JobWatcher(self, engine, self._on_bus_event, keep_finished=0)
        self.frame_hz = FRAME_HZ  # bench/tui.py raises it to measure what batching saves
        self.keymap_errors = unknown_keymap_ids(engine.config.tui.keymap)
        self.set_keymap(engine.config.tui.keymap)

    # -- lifecycle ----------------------------------------------------------------------------
    def run(self, *args, **kwargs):
        steady_collector()
        return super().run(*args, **kwargs)

    def on_mount(self) -> None:
        self._unsubscribe = self.engine.bus.subscribe(self._on_bus_event)
        if self._follow_on_mount is not None:
            self._watcher.follow(self._follow_on_mount)
        self._watcher.start()
        if self.keymap_errors:
            self.notify(
                "Unknown binding id(s) in [tui.keymap]: " + ", ".join(self.keymap_errors) + ". Press ? for the list.",
                severity="warning",
                timeout=10,
            )
        if self._pipeline_on_mount is not None:
            self.start_pipeline(self._pipeline_on_mount)

    def on_unmount(self) -> None:
        self._watcher.stop()
        if self._unsubscribe:
            self._unsubscribe()

    # -- engine activity: called on engine threads, so only post messages -----------------------
    def _on_bus_event(self, event: Event) -> None:
        if isinstance(event, SandboxOutput):
            if self._batcher.add(event.episode_id, event.channel, event.kind, event.text):
                self.post_message(OutputPending())
        else:
            self.post_message(EngineEvent(event))

    @on(OutputPending)
    def _output_pending(self) -> None:
        due = self._last_flush + 1.0 / self.frame_hz
        now = time.monotonic()
        if now >= due:
            self.flush_output()
        elif self._flush_timer is None:
            self._flush_timer = self.set_timer(due - now, self.flush_output)

    def flush_output(self) -> None:
        """Apply all batched output to the pane buffers and tell the active screen once."""
        self._flush_timer = None
        self._last_flush = time.monotonic()
        pending = self._batcher.drain()
        touched = set()
        for episode_id, chunks in pending.items():
            pane = self.live.panes.get(episode_id)
            if pane is None:
                self._early_output.setdefault(episode_id, []).extend(chunks)
                continue
            for channel, kind, text in chunks:
                pane.write(channel, kind, text)
            touched.add(episode_id)
        if touched:
            self.screen.post_message(LiveChanged(frozenset(touched), structural=False))

    @on(EngineEvent)
    def _engine_event(self, message: EngineEvent) -> None:
        event = message.event
        episode_id = self._apply(event)
        structural = isinstance(event, STRUCTURAL)
        self.screen.post_message(LiveChanged(frozenset({episode_id} if episode_id else ()), structural))

    def _apply(self, event: Event) -> str | None:
        """Apply one event (not sandbox output) to `self.live`; the episode it concerns, if any."""
        if isinstance(event, EpisodeFinished):
            self.flush_output()  # the verdict goes below the episode's last output
        episode_id = self.live.apply(event)
        if isinstance(event, EpisodeStarted):
            for chunk in self._early_output.pop(event.episode_id, []):
                self.live.panes[event.episode_id].write(*chunk)
            while len(self._early_output) > 64:  # output of episodes never announced: drop the oldest
                self._early_output.pop(next(iter(self._early_output)))
        return episode_id

    # -- a detached job, followed by attach.JobWatcher ----------------------------------------
    @on(JobAttached)
    def _job_attached(self, message: JobAttached) -> None:
        job = self.job = message.job
        self.job_activity, self.job_stopping, self.job_ended = JobActivity(), False, None
        self.job_starting = ""
        # Its catch-up, in order, in one go: one redraw, not one per event.
        for event in message.events:
            if isinstance(event, SandboxOutput):
                pane = self.live.panes.get(event.episode_id)
                if pane is None:
                    self._early_output.setdefault(event.episode_id, []).append((event.channel, event.kind, event.text))
                else:
                    pane.write(event.channel, event.kind, event.text)
            else:
                self._apply(event)
        self.sub_title = f"attached to job {job.id}"
        stop_key = self.engine.config.tui.keymap.get("app.stop_run", "s")
        self.notify(
            f"{self.job_line(job)}; {stop_key} stops it.", title=f"Attached to job {job.id}", timeout=8, markup=False
        )
        self.screen.post_message(LiveChanged(frozenset(self.live.panes), structural=True))
        self.screen.post_message(JobChanged())

    @staticmethod
    def job_line(job: RunnerJob) -> str:
        return f"attached: the work runs in job {job.id} ({job.kind}, process {job.pid}); quitting leaves it running"

    @on(JobActivityChanged)
    def _job_activity(self, message: JobActivityChanged) -> None:
        if self.job is not None and message.job_id == self.job.id:
            self.job_activity = message.activity
            self.screen.post_message(JobChanged())

    @on(JobEnded)
    def _job_ended(self, message: JobEnded) -> None:
        self.flush_output()
        job = self.job_ended = message.job
        self.job, self.job_activity, self.job_stopping = None, JobActivity(), False
        if not self.run_in_progress:  # its episodes still running ended with it, its progress lines are old
            self.live.work_ended(f"ended with job {job.id}")
        self.sub_title = self.SUB_TITLE
        severity = "information" if job.status == "done" else "error" if job.status == "failed" else "warning"
        self.notify(self.job_end_line(job), title="Job ended", severity=severity, timeout=15, markup=False)
        self.screen.post_message(LiveChanged(frozenset(self.live.panes), structural=True))
        self.screen.post_message(JobChanged())
        if self._exit_when_job_ended:
            self.exit()

    @staticmethod
    def job_end_line(job: RunnerJob) -> str:
        return f"job {job.id} ended: {job.status}" + (f": {job.detail}" if job.detail else "")

    def job_lines(self) -> list[str]:
        """What the dashboard says about the detached job the app follows (or the last one)."""
        job = self.job
        if job is None:
            return [self.job_end_line(self.job_ended)] if self.job_ended is not None else []
        lines = [self.job_line(job)]
        if self.job_stopping:
            lines.append(self.stopping_line())
        elif self.job_activity.awaiting_approval:
            lines.append(
                f"waiting for approval: {self.job_activity.awaiting_approval} runbook(s)"
                " (decide them in the Runbooks screen: the job goes on once none is pending)"
            )
        return lines

    def stopping_line(self) -> str:
        job = self.job or self.job_ended
        running = [p.task for p in self.live.running]
        if running:
            shown = ", ".join(running[:4]) + (f" and {len(running) - 4} more" if len(running) > 4 else "")
            waits = f"{len(running)} running: {shown}"
        else:
            waits = "no episode is running: it stops when its current step ends"
        return f"stopping job {job.id if job else '?'}: waiting for its running episodes to end ({waits})"

    def stop_job(self) -> None:
        """SIGTERM to the attached job (it stops as ctrl+c stops the command; its work resumes)."""
        job = self.job
        if job is None:
            return
        if not self.job_stopping:
            self.job_stopping = True
            self._stop_job_worker(job.id)
        self.notify(self.stopping_line(), title="Stopping", timeout=15)
        self.screen.post_message(JobChanged())

    @work(thread=True, group="stop", exit_on_error=False)
    def _stop_job_worker(self, job_id: str) -> None:
        self.engine.stop_runner_job(job_id)

    # -- running work ------------------------------------------------------------------------
    def start_run(self, request: EvalRequest) -> bool:
        """Evaluate in the background and switch to the live sandboxes."""
        return self._start(
            lambda: self._run_note(self.engine.run_request(request)[0].run_id), job=("eval", eval_args(request))
        )

    def _run_note(self, run_id: str) -> str:
        """What to tell the user about a finished run (read on the worker thread)."""
        s = self.engine.run(run_id)
        rate = "n/a" if s.success_rate is None else f"{s.success_rate:.0%}"
        return f"Run {run_id} {s.status}: success rate {rate}"

    def start_rsr(self, request: RsrRequest) -> bool:
        """Run (or resume) an RSR round in the background; its episodes stream to the Sandboxes screen."""

        def work() -> str:
            report = self.engine.run_rsr(request)
            return (
                f"RSR round {report.round} done: {report.samples} sample(s), checkpoint {report.checkpoint or 'none'}"
            )

        return self._start(work, job=("rsr", rsr_args(request)))

    def start_pipeline(self, request: PipelineRequest | None = None) -> bool:
        """Run (or resume) the pipeline in the background (as the config says, unless `request` says
        otherwise); the dashboard's stage table fills in live."""
        request = request or PipelineRequest()

        def work() -> str:
            lineages = self.engine.run_pipeline(request)
            done = [s for stages in lineages.values() for s in stages.values() if s.status == "done"]
            seeds = f" over {len(lineages)} training seeds" if len(lineages) > 1 else ""
            return f"Pipeline: {len(done)} stage(s) done{seeds}"

        return self._start(work, mode="dashboard", job=("pipeline", pipeline_args(request)))

    def start_check(self, tasks: str, task: str) -> bool:
        """Validate one task (oracle passes, nop does not) in the background."""
        return self._start(lambda: self._run_note(self.engine.check_tasks([tasks], only=(task,))[0]))

    def _start(
        self, work: Callable[[], str], mode: str = "sandboxes", job: tuple[str, list[str]] | None = None
    ) -> bool:
        """Run `work` here in a thread worker, or, with `[tui] detach`, the command `job` (its kind
        and trsi-tui arguments) as a runner job the app then attaches to."""
        if self.run_in_progress:
            self.notify("A run is already in progress; stop it first (s).", severity="warning")
            return False
        home = self.engine.runner_home_args() if job is not None and self.engine.config.tui.detach else None
        if job is not None and home is not None:
            if self.job is not None or self.job_starting:
                running = f"Job {self.job.id}" if self.job else "A job"
                self.notify(f"{running} is running; stop it first (s).", severity="warning")
                return False
            kind, args = job
            self.job_starting = kind
            self._start_job_worker(kind, home + args)
        else:
            self.run_in_progress = True
            self._run_worker(work)
        self.switch_mode(mode)
        return True

    @work(thread=True, group="start", exit_on_error=False)
    def _start_job_worker(self, kind: str, args: list[str]) -> None:
        try:
            job = start_job(self.engine, kind, args)
        except WorkBusy as exc:  # another process holds the data dir: its message names it
            self.post_message(JobStartFailed(str(exc)))
            return
        except Exception as exc:  # told to the user (and logged), not lost in the worker
            log.exception("the TUI could not start %s as a runner job", kind)
            self.post_message(JobStartFailed(f"{type(exc).__name__}: {exc}"))
            return
        self._watcher.follow(job)

    @on(JobStartFailed)
    def _job_start_failed(self, message: JobStartFailed) -> None:
        self.job_starting = ""
        self.notify(message.error, title="Not started", severity="error", timeout=15, markup=False)

    @work(thread=True, exclusive=True, group="engine", exit_on_error=False)
    def _run_worker(self, job: Callable[[], str]) -> None:
        try:
            note = job()
        except InterruptedError as exc:  # stopped on request (s, or quitting): resumable, not a failure
            self.post_message(RunEnded(None, None, stopped=str(exc)))
        except Exception as exc:
            log.exception("work started from the TUI failed")
            self.post_message(RunEnded(None, f"{type(exc).__name__}: {exc}"))
        else:
            self.post_message(RunEnded(note, None))

    @on(RunEnded)
    def _run_ended(self, message: RunEnded) -> None:
        self.run_in_progress = False
        self.flush_output()
        if message.error:
            self.notify(message.error, title="Run failed", severity="error", timeout=15, markup=False)
        elif message.stopped:
            self.notify(f"{message.stopped}; start it again to resume.", title="Stopped", markup=False)
        elif message.note:
            self.notify(message.note, title="Done", markup=False)
        self.screen.post_message(LiveChanged(frozenset(), structural=True))
        if self._exit_when_stopped:
            self.exit()

    def action_new_run(self) -> None:
        self.push_screen(StartRunScreen(self.engine), self._start_requested)

    def action_pipeline(self) -> None:
        self.start_pipeline()

    def action_new_rsr(self) -> None:
        self.push_screen(StartRsrScreen(self.engine), lambda req: req is not None and self.start_rsr(req))

    def _start_requested(self, request: EvalRequest | None) -> None:
        if request is not None:
            self.start_run(request)

    def action_stop_run(self) -> None:
        if not self.run_in_progress:
            if self.job is not None:
                self.stop_job()
            elif self.job_starting:
                self.notify(f"The {self.job_starting} job is starting; stop it once it is attached.")
            else:
                self.notify("Nothing is running.")
            return
        self.notify("Stopping: sandboxes are being shut down…")
        self._stop_worker()

    @work(thread=True, group="stop", exit_on_error=False)
    def _stop_worker(self) -> None:
        self.engine.cancel()  # stops every live sandbox; the engine worker then returns

    async def action_quit(self) -> None:
        if not self.run_in_progress and self.job is not None:
            self._ask_quit_attached(self.job)
            return
        if not self.run_in_progress:
            self.exit()
            return
        self.push_screen(
            ConfirmScreen(
                "Work is still running. Stop it (its sandboxes are shut down) and quit?",
                yes="Stop and quit",
                no="Keep running",
            ),
            self._quit_confirmed,
        )

    def _quit_confirmed(self, stop: bool | None) -> None:
        if stop:
            self._exit_when_stopped = True
            self.action_stop_run()

    def _ask_quit_attached(self, job: RunnerJob) -> None:
        follow = f"`trsi-tui jobs attach {job.id}` follows it from a terminal; `trsi-tui` attaches to it again."
        if self.job_stopping:
            self.push_screen(
                ChoiceScreen(
                    f"{self.stopping_line()}.\n\nQuit now? It goes on stopping in the background. {follow}",
                    [("leave", "Quit now"), ("cancel", "Cancel")],
                    default="leave",
                ),
                self._quit_chosen,
            )
            return
        self.push_screen(
            ChoiceScreen(
                f"Job {job.id} keeps running in the background ({job.kind}, process {job.pid}).\n\n{follow}",
                [("leave", "Leave it running and quit"), ("stop", "Stop it and quit"), ("cancel", "Cancel")],
                default="leave",
                danger="stop",
            ),
            self._quit_chosen,
        )

    def _quit_chosen(self, choice: str | None) -> None:
        if choice == "leave":
            self.exit()
        elif choice == "stop":
            if self.job is None:  # it ended while the question was open
                self.exit()
                return
            self._exit_when_job_ended = True
            self.stop_job()

    # -- navigation and help ------------------------------------------------------------------
    def action_help(self) -> None:
        rows = [
            (b.binding.key_display or self.get_key_display(b.binding), b.binding.id or "", b.binding.description)
            for b in self.active_bindings.values()
            if b.binding.description
        ]
        rows.sort(key=lambda row: not row[1])  # ours (remappable, with ids) first, then widget keys
        self.push_screen(HelpScreen(rows))

    async def show_trajectories(self, run_id: str | None = None) -> None:
        await self.switch_mode("trajectories")
        screen = self.screen
        if isinstance(screen, TrajectoriesScreen) and run_id:
            screen.filter_run(run_id)


def all_binding_ids() -> set[str]:
    from trsi_tui.screens.trajectory import TrajectoryScreen

    classes = [
        TrsiApp,
        *SCREENS_BY_MODE.values(),
        TrajectoryScreen,
        StartRunScreen,
        StartRsrScreen,
        HelpScreen,
        ConfirmScreen,
        ChoiceScreen,
    ]
    return {b.id for cls in classes for b in cls.BINDINGS if isinstance(b, Binding) and b.id}


def unknown_keymap_ids(keymap: dict[str, str]) -> list[str]:
    return sorted(set(keymap) - all_binding_ids())


def steady_collector() -> None:
    """Keep Python's collector from stalling the screen (`TrsiApp.run` calls it).

    A streaming screen makes and drops many small objects; with the default thresholds the
    collector's older generations ran over every object of the process, 60-250 ms each, several
    times a minute (bench/tui_attach.py). What exists before the app starts (modules, the engine)
    is frozen out of its passes; young generations are collected often and cheaply, full passes
    rarely (after about 20 million allocations).
    """
    gc.freeze()
    gc.set_threshold(2_000, 10, 1_000)


def create_app(
    engine: Engine, start_pipeline: PipelineRequest | None = None, follow_job: RunnerJob | None = None
) -> TrsiApp:
    return TrsiApp(engine, start_pipeline, follow_job)
