"""One episode: fresh sandbox -> setup.sh -> agent -> end the agent's processes -> verifier ->
success-first reward.

Infrastructure failures (the sandbox or the engine failing, setup.sh failing) are recorded as
such with no reward: a broken machine is not a zero-scoring agent. What happens inside the
sandbox after the agent's turn is the agent's doing: a verifier that times out, dies or writes
no report, agent processes that cannot be ended, or a tampered verifier environment, all score
0 with the reason in `failure_mode`; so does a sandbox that the agent got ended during its turn
or the verifier's, by filling its memory limit or the host's disk (`Sandbox.ended_by_the_agent`).
Otherwise an agent that is
failing could break the verifier, or the sandbox, to turn its failure into an episode that is
dropped.
"""

from __future__ import annotations

import logging
import time
import uuid
from datetime import datetime, timezone
from typing import Callable

from engine.config import Config
from engine.config.paths import resolve_paths
from engine.events import AgentStepTaken, EpisodePhase, EventBus, SandboxOutput
from engine.policy.base import PolicyError
from engine.results import AgentStep, EpisodeResult, EpisodeStatus
from engine.rollout.agents import Agent, AgentRun
from engine.rollout.reward import shaped_reward
from engine.rollout.verifier import VerifierOutcome, run_verifier
from engine.tasks import Task
from sandboxes import (
    AgentProcessesSurvived,
    EnvironmentTampered,
    Limits,
    Sandbox,
    SandboxError,
    SandboxSpec,
    create_sandbox,
)

log = logging.getLogger(__name__)

ENV_STAGING = "/run/trsi/environment"
INTERNET_REFUSED = (
    "the task sets allow_internet = true, and the config does not allow it: set [sandbox] "
    "allow_internet = true to run tasks that ask for the network (with no Docker bridge, the host's "
    "network, its own services on 127.0.0.1 included)"
)


def _ended_by_the_agent(ended: str, events: dict[str, int]) -> tuple[str, VerifierOutcome, dict[str, int]]:
    """The failure mode, outcome and limit hits of an episode whose sandbox the agent got ended
    (`Sandbox.ended_by_the_agent`: "failure_mode: reason")."""
    mode = ended.partition(":")[0]
    hit = "oom_kill" if mode == "sandbox_oom" else "disk_limit"
    return mode, VerifierOutcome("error", error=ended), {**events, hit: max(1, events.get(hit, 0))}


def sandbox_spec(task: Task, config: Config) -> SandboxSpec:
    env = task.environment
    return SandboxSpec(
        name=task.name,
        limits=Limits(
            cpus=env.cpus,
            memory_mb=env.memory_mb,
            pids=config.sandbox.pids_limit,
            disk_mb=env.storage_mb or config.sandbox.disk_mb,
            allow_internet=env.allow_internet,
        ),
        environment_dir=task.environment_dir if task.dockerfile else None,
        image=env.docker_image,
        image_aliases=tuple(sorted(config.sandbox.docker.aliases.items())),
        warm_pool=config.sandbox.docker.warm_pool,
        build_failures_dir=resolve_paths().build_failures_dir,
        build_network=config.sandbox.allow_internet,
    )


def _run_setup(sandbox, task: Task, timeout: float) -> str:
    """Returns an error message, or '' when the environment is ready."""
    if task.setup_script is None:
        return ""
    sandbox.upload(task.environment_dir, ENV_STAGING)
    res = sandbox.exec(f"bash {ENV_STAGING}/setup.sh", timeout=timeout, channel="setup", cwd=ENV_STAGING)
    sandbox.exec(f"rm -rf {ENV_STAGING}", timeout=30, channel="system")
    if res.timed_out:
        return f"environment/setup.sh exceeded {timeout:g}s"
    if res.exit_code != 0:
        return f"environment/setup.sh exited {res.exit_code}: {res.output.strip()[-500:]}"
    return ""


def run_episode(
    task: Task,
    agent: Agent,
    *,
    config: Config,
    backend: str = "local",
    run_id: str = "",
    attempt: int = 0,
    bus: EventBus | None = None,
    episode_id: str | None = None,
    on_sandbox: Callable[[Sandbox | None], None] | None = None,
) -> EpisodeResult:
    """Run one episode to a result; never raises for sandbox, setup or verifier failures.

    `on_sandbox` is told the live sandbox (and None when it is gone) so a runner can stop it
    from another thread on cancellation.
    """
    episode_id = episode_id or uuid.uuid4().hex[:16]
    started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    t0 = time.monotonic()
    phases: dict[str, float] = {}
    base = dict(
        episode_id=episode_id,
        run_id=run_id,
        task=task.name,
        split=task.split,
        agent=agent.name,
        backend=backend,
        attempt=attempt,
        started_at=started_at,
    )

    def phase(name: str) -> None:
        if bus:
            bus.emit(EpisodePhase(episode_id, name))

    def infra(failure: str, error: str, agent_run: AgentRun | None = None) -> EpisodeResult:
        return EpisodeResult(
            **base,
            status="infra_error",
            success=False,
            checks_passed=0,
            checks_total=0,
            reward=None,
            failure_mode=failure,
            error=error,
            steps=tuple(agent_run.steps if agent_run else ()),
            duration_s=time.monotonic() - t0,
            phase_s=phases,
        )

    if task.dockerfile is not None and backend == "local":
        return infra(
            "unsupported_environment",
            "task has environment/Dockerfile, which the local backend cannot build; use --backend docker",
        )

    if task.environment.allow_internet and not config.sandbox.allow_internet:
        # A task folder is untrusted: the network (here the host's) is the user's to give.
        return infra("sandbox_error", INTERNET_REFUSED)

    phase("sandbox")
    try:
        sandbox = create_sandbox(backend, sandbox_spec(task, config))
    except SandboxError as exc:
        return infra("sandbox_error", str(exc))
    if bus:
        sandbox.subscribe(lambda c: bus.emit(SandboxOutput(episode_id, c.channel, c.kind, c.text)))
        if hasattr(agent, "on_step"):
            agent.on_step = lambda i, step: bus.emit(AgentStepTaken(episode_id, i, step))
    if on_sandbox:
        on_sandbox(sandbox)
    agent_run: AgentRun | None = None
    events: dict[str, int] = {}
    agent_started, agent_timed_out, failed_closed = False, False, ""
    try:
        t = time.monotonic()
        sandbox.start()
        phases["sandbox"] = time.monotonic() - t

        phase("setup")
        t = time.monotonic()
        setup_error = _run_setup(sandbox, task, config.sandbox.setup_timeout_sec)
        phases["setup"] = time.monotonic() - t
        if setup_error:
            # A sandbox killed from outside makes setup.sh fail too; that is the machine's
            # fault, not the task's, and a task must not be marked broken for it.
            if not sandbox.alive:
                return infra("sandbox_error", f"the sandbox died during setup: {setup_error}")
            return infra("setup_failed", setup_error)

        phase("agent")
        sandbox.agent_turn_starts()
        agent_started = True
        t = time.monotonic()
        deadline = t + task.agent_timeout_sec
        agent_run = agent.act(task, sandbox, deadline)
        phases["agent"] = time.monotonic() - t
        agent_timed_out = agent_run.timed_out or time.monotonic() > deadline

        phase("verifier")
        t = time.monotonic()
        try:
            sandbox.prepare_for_verification()
        except (AgentProcessesSurvived, EnvironmentTampered) as exc:
            failed_closed = "verifier_isolation" if isinstance(exc, AgentProcessesSurvived) else "tampered"
            outcome = VerifierOutcome("error", error=f"{failed_closed}: {exc}")
        # The agent's limit hits, read once its processes are gone (the verifier's do not count).
        events = sandbox.resource_events
        if not failed_closed:
            outcome = run_verifier(sandbox, task)
            if outcome.status == "infra" and (ended := sandbox.ended_by_the_agent):
                failed_closed, outcome, events = _ended_by_the_agent(ended, events)
        phases["verifier"] = time.monotonic() - t
        phases["verifier_exec"] = outcome.duration_s  # the test.sh exec alone, for overhead accounting
    except SandboxError as exc:
        ended = sandbox.ended_by_the_agent if agent_started else ""
        if not ended:
            return infra("sandbox_error", str(exc), agent_run)
        agent_run = agent_run or AgentRun()
        failed_closed, outcome, events = _ended_by_the_agent(ended, events)
    except PolicyError as exc:  # the model failed to load or answer: not the agent's fault
        return infra("policy_error", str(exc), agent_run)
    except Exception as exc:  # one broken episode must not end the run
        if agent_run is not None and (ended := sandbox.ended_by_the_agent):
            # The engine tripped on a sandbox the agent got ended (its files removed under a check).
            log.info("episode %s: %s (%s: %s)", episode_id, ended, type(exc).__name__, exc)
            failed_closed, outcome, events = _ended_by_the_agent(ended, events)
        elif agent_run is None or not sandbox.alive:
            return infra("internal_error", f"{type(exc).__name__}: {exc}", agent_run)
        else:
            # After the agent's turn, in a live sandbox, what the engine trips on is what the agent
            # left there (a file that cannot be read, a name that cannot be decoded): scored 0, as
            # a verifier that cannot run is, and logged in full in case it is the engine's own bug.
            log.exception("episode %s: verification failed on the sandbox's final state", episode_id)
            failed_closed = "verifier_error"
            outcome = VerifierOutcome("error", error=f"verifier_error: {type(exc).__name__}: {exc}")
    finally:
        sandbox.stop()
        if on_sandbox:
            on_sandbox(None)
        phase("done")

    steps = tuple(agent_run.steps)
    base.update(
        stop_reason=agent_run.stop_reason,
        token_ids=tuple(agent_run.token_ids),
        token_mask=tuple(agent_run.token_mask),
        messages=tuple(agent_run.messages),
        harness=agent_run.harness,
        model=agent_run.model,
    )
    resource = tuple(sorted(events)) + (("output_capped",) if any(_capped(s) for s in steps) else ())
    if outcome.status == "infra":
        # The engine or the container runtime failed while verifying: not the agent's doing.
        return infra("sandbox_error", outcome.error, agent_run)
    if failed_closed or outcome.status != "ok":
        # Inside a live sandbox, a verifier that could not run or report is the agent's doing
        # (or the task's, which validation catches): a zero, never a dropped episode.
        status: EpisodeStatus = "verifier_timeout" if outcome.status == "timeout" else "verifier_error"
        return EpisodeResult(
            **base,
            status="completed" if failed_closed else status,
            success=False,
            checks_passed=0,
            checks_total=0,
            reward=0.0,
            failure_mode=failed_closed or status,
            error=outcome.error,
            steps=steps,
            verifier_output=outcome.output,
            duration_s=time.monotonic() - t0,
            phase_s=phases,
            resource_events=resource,
        )
    success = outcome.success
    if success:
        failure = ""
    elif agent_timed_out:
        failure = "agent_timeout"
    elif "oom_kill" in resource:
        failure = "oom_killed"
    elif "pids_limit" in resource:
        failure = "pids_limit"
    elif "disk_limit" in resource:
        failure = "disk_limit"
    else:
        failure = "checks_failed"
    return EpisodeResult(
        **base,
        status="agent_timeout" if agent_timed_out else "completed",
        success=success,
        checks_passed=outcome.passed,
        checks_total=outcome.total,
        # A reward file's verdict decides success, whatever the per-check detail says; a failure
        # never earns more than alpha, however many checks passed.
        reward=1.0
        if success
        else min(shaped_reward(outcome.passed, outcome.total, config.reward.alpha), config.reward.alpha),
        failure_mode=failure,
        checks=outcome.checks,
        steps=steps,
        verifier_source=outcome.source,
        verifier_output=outcome.output,
        duration_s=time.monotonic() - t0,
        phase_s=phases,
        resource_events=resource,
    )


def _capped(step: AgentStep) -> bool:
    return "bytes truncated ..." in step.output or "output stream capped" in step.output
