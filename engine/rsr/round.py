"""One RSR round, stage by stage, resumable: every artifact is in SQLite before the next one starts.

    explore -> runbooks -> approval -> replay -> dataset -> sft -> done

Each stage skips what the store already holds (finished jobs are keyed, runbooks are keyed by
source episode, samples by their token digest), so a round killed anywhere and started again
neither loses nor duplicates work. With manual approval the round waits until a person has
decided every pending draft of the round (in the TUI's runbook queue), also across restarts.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from engine.config import RsrConfig
from engine.events import RsrProgress, RunbookDrafted, TrainingStep
from engine.policy.spec import served_spec, trainable_weights
from engine.rollout.harnesses import HARNESSES, WorkedExample, get_harness
from engine.rollout.runner import EpisodeJob
from engine.rsr.dataset import balance, build_sample, family_of, sample_opening
from engine.rsr.examples import ExampleIndex
from engine.rsr.frontier import ExploreKey, PassEstimate, wants_attempt
from engine.rsr.leak import protected_for, scan
from engine.rsr.planner import draft_runbook, trajectory_text
from engine.rsr.report import RoundReport, funnel, funnel_notes
from engine.rsr.reviewer import review_runbook
from engine.rsr.sft import SftConfig
from engine.stage import KeyedStage, StageContext, round_seed, task_seed
from engine.store.records import MetricPoint, Provenance, RunbookDraft
from engine.tasks import Task

STAGES = ("explore", "runbooks", "approval", "replay", "dataset", "sft", "done")
APPROVAL_POLL_S = 1.0


class RsrError(RuntimeError):
    pass


class RsrRound(KeyedStage):
    error = RsrError

    def __init__(
        self, ctx: StageContext, *, round: int, model: str, settings: RsrConfig | None = None, policy=None
    ) -> None:
        """`policy`: an already loaded policy for `model` (the context loads it otherwise)."""
        super().__init__(ctx)
        self.round, self.model, self.tasks_path = round, model, ctx.tasks
        self.settings = settings or ctx.config.rsr
        self.checkpoint_dir = self.checkpoint_dir_for(ctx.checkpoints_dir, round)
        self.seed = ctx.seed
        self._policy = policy
        self._trained: tuple[str, ...] = ()  # digests of the samples SFT trained on, once chosen
        self._policy_lock = threading.Lock()
        from engine.policy import parse_model_spec

        kind = parse_model_spec(model).kind  # a bad spec fails here, not after an hour of exploring
        if kind not in ("bundled", "hf"):
            raise RsrError(
                f"RSR trains the actor, so it needs transformers weights: {model!r} is a {kind}: spec; "
                "use bundled:NAME or hf:PATH"
            )
        unknown = [h for h in self.settings.harnesses if h not in HARNESSES]
        if unknown:
            raise RsrError(f"unknown harness(es) {', '.join(unknown)}; available: {', '.join(sorted(HARNESSES))}")

    @staticmethod
    def checkpoint_dir_for(checkpoints_dir: Path, round: int) -> Path:
        return Path(checkpoints_dir) / f"rsr-{round}"

    # -- plumbing ---------------------------------------------------------------------------
    @property
    def policy(self):
        with self._policy_lock:  # episode threads ask at once: load one policy, not one each
            if self._policy is None:
                self._policy = self.ctx.load_policy(self.model)
            return self._policy

    def _helper(self, spec: str):
        if not spec:
            return self.policy
        from engine.policy import load_policy

        return load_policy(spec)

    def _progress(self, stage: str, detail: str) -> None:
        self.store.rsr.put_round(self.round, stage=stage, detail=detail)
        self.bus.emit(RsrProgress(self.round, stage, detail))

    def _tasks(self) -> dict[str, Task]:
        return {t.name: t for t in self.split_tasks(self.settings.split)}

    def _run_jobs(self, stage: str, jobs: list[tuple[str, EpisodeJob]]) -> None:
        """Run keyed jobs; each finished episode is linked to its key the moment it is stored."""
        self.run_keyed(
            f"rsr/{self.round}/{stage}", jobs, kind=f"rsr-{stage}", what=f"RSR round {self.round} during {stage}"
        )

    # -- the round ---------------------------------------------------------------------------
    def run(self) -> RoundReport:
        tasks = self._tasks()
        record = self.store.rsr.round(self.round)
        if record is None:
            self.store.rsr.put_round(
                self.round,
                model=self.model,
                tasks_path=str(self.tasks_path),
                settings=self.settings.model_dump_json(),
                stage="explore",
                checkpoint="",
                detail="",
            )
        elif record.model != self.model:
            raise RsrError(
                f"round {self.round} was started with model {record.model!r}, not {self.model!r}; "
                "resume it with the same model or pick another round number"
            )
        notes: list[str] = []
        _ = self.policy  # load it here, on the calling thread, before episode threads need it
        self.explore(tasks)
        self.write_runbooks(tasks)
        self.await_approval()
        self.replay(tasks)
        samples = self.build_dataset(tasks)
        chosen = balance(
            samples,
            {name: family_of(task) for name, task in tasks.items()},
            per_task=self.settings.samples_per_task,
            per_family=self.settings.samples_per_family,
        )
        if len(chosen) < len(samples):
            notes.append(
                f"SFT on a balanced {len(chosen)} of {len(samples)} samples (at most "
                f"{self.settings.samples_per_task or 'any'} per task, {self.settings.samples_per_family or 'any'} "
                "per family)"
            )
        self._trained = tuple(sorted(s.digest for s in chosen))
        checkpoint = self.train(chosen, notes)
        counts = funnel(self.store, self.round)
        self._progress(
            "done",
            "funnel: "
            + " -> ".join(f"{n} {step}" for step, n in counts.items())
            + f"; checkpoint {checkpoint or 'none'}",
        )
        return self.report(checkpoint, notes)

    def explore(self, tasks: dict[str, Task]) -> None:
        """Explore in waves, spending attempts where they can still find a verified success.

        Every task and harness gets `min_attempts` unaided attempts: they estimate the model's
        pass rate. After that, a wave gives one more attempt to each pair that has neither reached
        `target_successes` nor `attempts`, shown up to `examples` of the round's verified successes
        on the most similar other tasks (engine/rsr/examples.py); without any, a pair continues
        only if it showed it can get somewhere (a success, or partial credit above the nop floor).
        The schedule is a function of the stored outcomes, so a resumed round plans from what is
        stored."""
        settings = self.settings
        floors = self.nop_floors(tasks)
        index = ExampleIndex({name: task.instruction for name, task in tasks.items()})
        wave = 0
        while True:
            done = self.store.rsr.jobs(self.round, "explore")
            outcomes = self._explore_outcomes(done)
            pool = self.example_pool(tasks, done) if settings.examples else {}
            jobs, aided = [], 0
            for name, task in tasks.items():
                shown = index.nearest(name, pool, settings.examples) if pool else ()
                for h_index, harness in enumerate(settings.harnesses):
                    tried = outcomes.get((name, harness), [])
                    if not wants_attempt(tried, settings, floors.get(name, 0.0), examples=bool(shown)):
                        continue
                    key = ExploreKey(name, harness, len(tried), len(tried) >= settings.min_attempts and bool(shown))
                    seed = task_seed(round_seed(self.seed, self.round, h_index * 131 + key.attempt), name)
                    agent = self._agent_factory(harness, seed, examples=shown if key.aided else ())
                    jobs.append((str(key), EpisodeJob(task, agent, attempt=key.attempt)))
                    aided += key.aided
            if not jobs:
                break
            wave += 1
            self._progress(
                "explore",
                f"wave {wave}: {len(done)} attempts stored, {len(jobs)} to run"
                + (f" ({aided} shown worked examples from {len(pool)} solved task(s))" if aided else ""),
            )
            self._run_jobs("explore", jobs)
        estimates = self.pass_estimates(tasks)
        done = self.store.rsr.jobs(self.round, "explore")
        wins = sum(ok for _, ok in done.values())
        wins_aided = sum(ok for key, (_, ok) in done.items() if ExploreKey.parse(key).aided)
        solved = len({ExploreKey.parse(key).task for key, (_, ok) in done.items() if ok})
        frontier = sum(1 for e in estimates.values() if 0 < e.successes < e.attempts)
        self._progress(
            "explore",
            f"{wins} attempt(s) passed every check ({wins_aided} shown worked examples), on {solved} task(s); "
            f"{frontier} task(s) at the frontier unaided",
        )

    def example_pool(self, tasks: dict[str, Task], done: dict[str, tuple[str, bool]]) -> dict[str, WorkedExample]:
        """task -> its first verified explore success as a worked example: the commands of the
        shortest prefix that passes when re-run in a fresh sandbox (keyed prefix jobs, which the
        dataset stage reuses), with what the model saw after each. A success whose commands hold
        a canary of its task is never shown."""
        firsts: dict[str, tuple[str, str]] = {}
        for key, (episode, ok) in sorted(done.items(), key=lambda kv: (ExploreKey.parse(kv[0]).attempt, kv[0])):
            if ok:
                firsts.setdefault(ExploreKey.parse(key).task, (key, episode))
        steps = {key: self.store.runs.steps(episode) for key, episode in firsts.values()}
        keep = self._verified_prefixes(tasks, steps) if self.settings.trim_to_verified_prefix else {}
        pool = {}
        for name, (key, _) in firsts.items():
            kept = [s for s in steps[key][: keep.get(key, len(steps[key]))] if s.command]
            text = "\n".join(s.command for s in kept)
            if kept and not any(c in text for c in protected_for(tasks[name].path).canaries):
                pool[name] = WorkedExample(tasks[name].instruction, tuple((s.command, s.output) for s in kept))
        return pool

    def nop_floors(self, tasks: dict[str, Task]) -> dict[str, float]:
        """What doing nothing earns on each task (a nop episode's reward; checks such as "the input
        is unchanged" pass untouched): partial credit at or below it is no sign of progress, so it
        earns a task no more explore attempts. One nop episode per task and round, keyed."""
        if not self.settings.nop_floor:
            return {}
        from engine.rollout.agents import NopAgent

        done = self.store.rsr.jobs(self.round, "nop")
        jobs = [(name, EpisodeJob(task, NopAgent)) for name, task in tasks.items() if name not in done]
        if jobs:
            self._progress("explore", f"measuring what doing nothing earns on {len(jobs)} task(s)")
            self._run_jobs("nop", jobs)
        done = self.store.rsr.jobs(self.round, "nop")
        episodes = self.store.runs.episodes_by_id([episode for episode, _ in done.values()])
        rewards = {e.id: e.reward for e in episodes if e.reward is not None}
        return {name: rewards[episode] for name, (episode, _) in done.items() if episode in rewards}

    def _explore_outcomes(self, done: dict[str, tuple[str, bool]]) -> dict[tuple[str, str], list[tuple[bool, float]]]:
        """(task, harness) -> (success, reward) of each stored attempt, aided or not, in attempt order."""
        return {k: [(ok, r) for _, ok, r in v] for k, v in self._attempts(done).items()}

    def _attempts(
        self, done: dict[str, tuple[str, bool]]
    ) -> dict[tuple[str, str], list[tuple[ExploreKey, bool, float]]]:
        found: dict[tuple[str, str], list[tuple[ExploreKey, bool, float]]] = {}
        rewards = {e.id: e.reward or 0.0 for e in self.store.runs.episodes_by_id([ep for ep, _ in done.values()])}
        for key, (episode_id, ok) in done.items():
            k = ExploreKey.parse(key)
            found.setdefault((k.task, k.harness), []).append((k, ok, rewards.get(episode_id, 0.0)))
        return {pair: sorted(v, key=lambda a: a[0].attempt) for pair, v in found.items()}

    def pass_estimates(self, tasks: dict[str, Task]) -> dict[str, PassEstimate]:
        """Each task's pass rate for this round's model, from its unaided explore attempts (all
        harnesses): an attempt shown worked examples measures the examples as much as the model."""
        per_task: dict[str, list[tuple[bool, float]]] = {name: [] for name in tasks}
        for (name, _), tried in self._attempts(self.store.rsr.jobs(self.round, "explore")).items():
            per_task.setdefault(name, []).extend((ok, r) for k, ok, r in tried if not k.aided)
        return {name: PassEstimate.of(tried) for name, tried in per_task.items()}

    def _agent_factory(
        self, harness: str, seed: int, guidance: str | None = None, examples: tuple[WorkedExample, ...] = ()
    ):
        return self.agent_factory(
            self.model,
            self.policy,
            harness,
            temperature=self.settings.temperature,
            seed=seed,
            max_turns=self.settings.max_turns,
            guidance=guidance,
            examples=examples,
            max_reply_tokens=self.config.policy.max_reply_tokens,
        )

    def write_runbooks(self, tasks: dict[str, Task]) -> None:
        """A runbook for each explore success, up to `runbooks_per_task`, drafted from the commands
        it needed (its shortest verified prefix) and reviewed; drafts are written concurrently
        (the policy batches their generations) and stored as each one is done."""
        successes = sorted((key, ep) for key, (ep, ok) in self.store.rsr.jobs(self.round, "explore").items() if ok)
        stored = self.store.runbooks.list(round=self.round)
        existing = {rb.source_episode_id for rb in stored}
        per_task: dict[str, int] = {}
        for rb in stored:
            per_task[rb.task] = per_task.get(rb.task, 0) + 1
        todo = []
        for index, (key, episode_id) in enumerate(successes):
            name = ExploreKey.parse(key).task
            if episode_id in existing or per_task.get(name, 0) >= self.settings.runbooks_per_task:
                continue
            per_task[name] = per_task.get(name, 0) + 1
            todo.append((index, key, episode_id))
        if todo:
            steps = {key: self.store.runs.steps(episode_id) for _, key, episode_id in todo}
            keep = self._verified_prefixes(tasks, steps) if self.settings.trim_to_verified_prefix else {}
            planner = self._helper(self.settings.planner)
            reviewer = self._helper(self.settings.reviewer)

            def draft(index: int, key: str, episode_id: str) -> RunbookDraft:
                k = ExploreKey.parse(key)
                task, kept = tasks[k.task], steps[key][: keep.get(key, len(steps[key]))]
                seed = round_seed(self.seed, self.round, 50_000 + index)
                text = draft_runbook(
                    planner,
                    task.instruction,
                    kept,
                    seed=seed,
                    retries=self.settings.planner_retries,
                    template_fallback=self.settings.template_fallback,
                )
                allowed = task.instruction + "\n" + trajectory_text(kept)
                verifier_output = self.store.runs.verifier_output(episode_id)
                leak = scan(text.text, protected_for(task.path, verifier_output=verifier_output, allowed=allowed))
                verdict, raw = review_runbook(
                    reviewer, task.instruction, text.text, seed=seed, unparseable=self.settings.reviewer_unparseable
                )
                return RunbookDraft(
                    k.task, self.round, episode_id, text.text, k.harness, leak, verdict, text.author, raw
                )

            self._progress("runbooks", f"drafting and reviewing {len(todo)} runbook(s)")
            with ThreadPoolExecutor(max_workers=max(1, self.ctx.concurrency), thread_name_prefix="runbook") as pool:
                futures = [pool.submit(draft, *item) for item in todo]
                try:
                    for future in as_completed(futures):
                        rb = future.result()
                        if self.settings.approval == "manual":
                            status, by = "pending", ""
                        else:
                            approved = rb.verdict.approve and not rb.leak.leaked
                            status, by = ("approved" if approved else "rejected"), "auto"
                        runbook_id = self.store.runbooks.add(rb, status=status, decided_by=by)
                        self.bus.emit(RunbookDrafted(self.round, runbook_id, rb.task, status))
                        if self.should_stop():
                            raise InterruptedError(f"RSR round {self.round} stopped while writing runbooks")
                finally:
                    for future in futures:
                        future.cancel()
        counts = self._runbook_counts()
        self._progress("runbooks", ", ".join(f"{v} {k}" for k, v in counts.items()) or "no successes to distill")

    def _runbook_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for rb in self.store.runbooks.list(round=self.round):
            counts[rb.status] = counts.get(rb.status, 0) + 1
        return counts

    def await_approval(self) -> None:
        announced = False
        while True:
            pending = self.store.runbooks.list(status="pending", round=self.round)
            if not pending:
                return
            if not announced:
                self._progress("approval", f"waiting for a person to decide {len(pending)} runbook(s) in the TUI")
                announced = True
            if self.should_stop():
                raise InterruptedError(f"RSR round {self.round} stopped while waiting for approval")
            time.sleep(APPROVAL_POLL_S)

    def replay(self, tasks: dict[str, Task]) -> None:
        done = self.store.rsr.jobs(self.round, "replay")
        jobs = []
        for rb in self.store.runbooks.list(status="approved", round=self.round):
            for k in range(self.settings.replays):
                key = f"{rb.id}|{k}"
                if key in done:
                    continue
                seed = task_seed(round_seed(self.seed, self.round, 7 * k + 1), rb.id)
                jobs.append(
                    (key, EpisodeJob(tasks[rb.task], self._agent_factory(rb.harness, seed, rb.text), attempt=k))
                )
        self._progress("replay", f"{len(jobs)} replay(s) to run with approved runbooks")
        if jobs:
            self._run_jobs("replay", jobs)

    def build_dataset(self, tasks: dict[str, Task]):
        runbooks = {rb.id: rb for rb in self.store.runbooks.list(round=self.round)}
        fresh, rejected = [], 0
        for key, (episode_id, ok) in sorted(self.store.rsr.jobs(self.round, "replay").items()):
            if not ok:
                continue
            rb = runbooks[key.split("|")[0]]
            task = tasks[rb.task]
            steps = self.store.runs.steps(episode_id)
            model = self.store.runs.episode_model(episode_id)
            actions = "\n".join(s.action_text for s in steps)
            allowed = "\n".join([task.instruction, rb.text, *(s.output for s in steps)])
            if scan(actions, protected_for(task.path, allowed=allowed)).leaked:
                rejected += 1  # the replay's own actions carry protected text: not training data
                continue
            fresh.append(
                build_sample(
                    self.policy,
                    sample_opening(model.messages[:2], rb.harness, self.settings.sample_prompt),
                    steps,
                    runbook=rb.text,
                    provenance=Provenance(rb.task, rb.harness, rb.source_episode_id, episode_id, rb.id),
                    tools=get_harness(rb.harness).tools,
                    reply_prefix=get_harness(rb.harness).reply_prefix,
                )
            )
        replayed = {
            runbooks[key.split("|")[0]].task
            for key, (_, ok) in self.store.rsr.jobs(self.round, "replay").items()
            if ok and key.split("|")[0] in runbooks
        }
        fallback, fallback_rejected = (
            self._explore_samples(tasks, replayed) if self.settings.explore_fallback else ([], 0)
        )
        added = self.store.rsr.add_samples(self.round, fresh + fallback)
        samples = self.store.rsr.samples(self.round)
        self._progress(
            "dataset",
            f"{len(samples)} sample(s) ({added} new; {rejected + fallback_rejected} dropped for leaks; "
            f"{len(fallback)} from explore successes without a passing replay)",
        )
        return samples

    def _explore_samples(self, tasks: dict[str, Task], replayed: set[str]) -> tuple[list, int]:
        """Samples from explore successes of tasks that no replay passed (`explore_fallback`): a
        model too small to follow a runbook must not zero the funnel at the replay. The episode
        saw no runbook, so nothing is removed; with `trim_to_verified_prefix` it is cut after the
        shortest prefix of its commands that passes every check when re-run in a fresh sandbox,
        so turns that came after the work was done, and taught nothing, are not trained on."""
        successes = sorted(
            (key, episode)
            for key, (episode, ok) in self.store.rsr.jobs(self.round, "explore").items()
            if ok and ExploreKey.parse(key).task not in replayed
        )
        steps = {key: self.store.runs.steps(episode) for key, episode in successes}
        keep = self._verified_prefixes(tasks, steps) if self.settings.trim_to_verified_prefix else {}
        samples, rejected = [], 0
        for key, episode in successes:
            name, harness = ExploreKey.parse(key).task, ExploreKey.parse(key).harness
            task, kept = tasks[name], steps[key][: keep.get(key, len(steps[key]))]
            actions = "\n".join(s.action_text for s in kept)
            # The model typed these commands having seen no solution and no runbook: a command that
            # coincides with the reference solution is the right answer, not a leak. Only a canary
            # (text that exists nowhere but in the task's protected files) disqualifies the sample.
            if not kept or any(c in actions for c in protected_for(task.path).canaries):
                rejected += 1
                continue
            model = self.store.runs.episode_model(episode)
            samples.append(
                build_sample(
                    self.policy,
                    sample_opening(model.messages[:2], harness, self.settings.sample_prompt),
                    kept,
                    runbook=None,
                    provenance=Provenance(name, harness, episode, episode, ""),
                    tools=get_harness(harness).tools,
                    reply_prefix=get_harness(harness).reply_prefix,
                )
            )
        return samples, rejected

    def _verified_prefixes(self, tasks: dict[str, Task], steps: dict[str, list]) -> dict[str, int]:
        """explore key -> the fewest leading steps whose commands, re-run in a fresh sandbox, pass
        every check (keyed jobs, scope rsr/N/prefix); a success that needs all its steps is absent."""
        from engine.rollout.agent_spec import AgentSpec, SpecAgentFactory

        done = self.store.rsr.jobs(self.round, "prefix")
        jobs = []
        for key, found in steps.items():
            for k in range(1, len(found)):
                if f"{key}|{k}" not in done:
                    commands = [s.command for s in found[:k] if s.command]
                    jobs.append(
                        (
                            f"{key}|{k}",
                            EpisodeJob(
                                tasks[ExploreKey.parse(key).task],
                                SpecAgentFactory(AgentSpec("commands", commands=tuple(commands))),
                            ),
                        )
                    )
        if jobs:
            self._progress("dataset", f"re-running {len(jobs)} command prefix(es) of explore successes")
            self._run_jobs("prefix", jobs)
        done = self.store.rsr.jobs(self.round, "prefix")
        shortest: dict[str, int] = {}
        for job_key, (_, ok) in done.items():
            key, _, k = job_key.rpartition("|")
            if ok and key in steps:
                shortest[key] = min(shortest.get(key, len(steps[key])), int(k))
        return shortest

    def train(self, samples, notes: list[str]) -> str:
        record = self.store.rsr.round(self.round)
        if record is not None and record.checkpoint:
            return record.checkpoint
        if not samples:
            notes.append("no verified samples: nothing to train on, the actor is unchanged")
            return ""
        from engine.rsr.sft import train_sft
        from engine.training.gguf_export import export_lora_gguf

        base, adapter = trainable_weights(self.model)
        if adapter:
            notes.append(f"continues the adapter {adapter} on {base}")
        s = self.settings.sft
        config = SftConfig(
            rank=s.rank,
            alpha=s.alpha,
            learning_rate=s.learning_rate,
            epochs=s.epochs,
            min_steps=s.min_steps,
            batch_samples=s.batch_samples,
            max_len=s.max_len,
            load_4bit=s.load_4bit,
            packing=s.packing,
            seed=self.seed,
        )
        run_id = f"rsr-{self.round}-sft"
        stage = f"RSR-{self.round}"

        def on_step(step: int, loss: float, tokens: int) -> None:
            self.store.metrics.log([MetricPoint(run_id, stage, "sft/loss", step, loss)])
            self.bus.emit(TrainingStep(run_id, stage, "sft/loss", step, loss))

        self._progress("sft", f"QLoRA on {len(samples)} sample(s), base {base}")
        result = train_sft(
            base, samples, self.checkpoint_dir, config, on_step=on_step, should_stop=self.should_stop, adapter=adapter
        )
        gguf_file = export_lora_gguf(result.checkpoint, Path(base), self.checkpoint_dir / "adapter.gguf")
        served = served_spec(self.model, result.checkpoint, gguf_file if self.model.startswith("bundled:") else None)
        self.store.rsr.put_round(self.round, checkpoint=served)
        return served

    def report(self, checkpoint: str, notes: list[str]) -> RoundReport:
        explore = self.store.rsr.jobs(self.round, "explore")
        replay = self.store.rsr.jobs(self.round, "replay")
        notes = [*notes, *(n for n in funnel_notes(self.store, self.round, self.settings) if n not in notes)]
        return RoundReport(
            self.round,
            "done",
            len(explore),
            sum(ok for _, ok in explore.values()),
            self._runbook_counts(),
            len(replay),
            sum(ok for _, ok in replay.values()),
            len(self.store.rsr.samples(self.round)),
            checkpoint,
            tuple(notes),
            funnel(self.store, self.round),
            self._trained,
        )
