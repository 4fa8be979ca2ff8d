"""A model acting through a harness: prompt -> reply -> commands -> observation, turn by turn.

The episode stops when the model says it is done, at the turn limit, when the token budget or
the context is used up, or at the task's agent timeout. A reply that cannot be parsed is not an
error of the run: the parse error goes back to the model as its observation and counts as a turn.
A stop before any command has run is refused the same way (PREMATURE_STOP). With
`end_on_runaway`, a reply that runs to the reply limit without a usable action (a code block
never closed) ends the episode instead ("runaway_reply"): RSR's explore attempts count only when
they succeed, and a model that has begun to ramble rarely recovers in the turns left.
"""

from __future__ import annotations

import time
from dataclasses import replace

from engine.config import DEFAULT_AGENT
from engine.policy.base import PolicyError
from engine.results import AgentStep
from engine.rollout.agents import AgentRun, StepListener
from engine.rollout.harnesses import Harness, StepResult
from engine.rollout.harnesses.base import Turn, WorkedExample
from engine.rollout.token_buffer import TokenBuffer, check_prefix_preserving
from engine.tasks import Task
from sandboxes import Sandbox

# How a runbook (RSR replay) joins the task message. The dataset builder removes exactly this
# block again, so training samples never contain the runbook.
GUIDANCE_HEADER = "\n\nA runbook that worked for this task before:\n"

# Fed back when the model says it is done before any command of the episode has run. Every task
# asks for a change or an answer the sandbox does not hold yet, so such a stop is always a give-up;
# ending the episode there taught nothing (and a trained model did it on 8 of 128 eval tasks).
PREMATURE_STOP = "no command has run yet, so the task is not done. Reply with the command that does it."


def with_guidance(first_message: str, guidance: str | None) -> str:
    return first_message + GUIDANCE_HEADER + guidance.strip() if guidance else first_message


def without_guidance(message: str, guidance: str) -> str:
    block = GUIDANCE_HEADER + guidance.strip()
    if not message.endswith(block):
        raise ValueError("the message does not end with this runbook block")
    return message[: -len(block)]


class ModelAgent:
    name = "model"

    def __init__(
        self,
        policy,
        harness: Harness,
        *,
        temperature: float = DEFAULT_AGENT.temperature,
        seed: int | None = None,
        max_turns: int = DEFAULT_AGENT.max_turns,
        max_reply_tokens: int = DEFAULT_AGENT.max_reply_tokens,
        command_timeout_sec: float = DEFAULT_AGENT.command_timeout_sec,
        end_on_runaway: bool = False,
        token_budget: int = 16384,
        guidance: str | None = None,
        examples: tuple[WorkedExample, ...] = (),
    ) -> None:
        self.policy = policy
        self.harness = harness
        self.temperature = temperature
        self.seed = seed
        self.max_turns = max_turns
        self.max_reply_tokens = max_reply_tokens
        self.command_timeout_sec = command_timeout_sec
        self.end_on_runaway = end_on_runaway
        self.token_budget = token_budget
        self.guidance = guidance  # a runbook shown with the task (RSR replays)
        # Worked examples added to the system prompt (RSR explores with its own successes on
        # similar tasks); an SFT sample is rebuilt with the harness's own prompt, without them.
        self.examples = tuple(examples)
        # Told about each finished turn (the episode loop turns it into an AgentStepTaken event).
        self.on_step: StepListener | None = None

    def act(self, task: Task, sandbox: Sandbox, deadline: float) -> AgentRun:
        self._buffer: TokenBuffer | None = None
        try:
            return self._act(task, sandbox, deadline)
        finally:
            # However the episode ended, a backend that keeps its KV cache can free it now.
            release = getattr(self.policy, "release", None)
            if self._buffer is not None and release is not None:
                release(self._buffer.ids)

    def _act(self, task: Task, sandbox: Sandbox, deadline: float) -> AgentRun:
        tools = self.harness.tools
        # Local models keep an exact token buffer; remote servers (no tokenizer here) run on messages.
        buffered = hasattr(self.policy, "generate_ids")
        if buffered:
            check_prefix_preserving(self.policy, tools)
        messages = [
            {"role": "system", "content": self.harness.system_prompt_with(self.examples)},
            {
                "role": "user",
                "content": with_guidance(
                    self.harness.first_message(task.instruction, deadline - time.monotonic()), self.guidance
                ),
            },
        ]
        buf = TokenBuffer.start(self.policy, messages, tools) if buffered else TokenBuffer()
        self._buffer = buf if buffered else None
        run = AgentRun(
            messages=[dict(m) for m in messages], harness=self.harness.name, model=getattr(self.policy, "name", "")
        )
        used = 0  # tokens in context so far, for remote policies
        for turn in range(self.max_turns):
            if sandbox.stopped:  # the run is stopping (jobs stop, ctrl+c): no more replies
                run.stop_reason = "stopped"
                break
            left = deadline - time.monotonic()
            if left <= 0:
                run.timed_out, run.stop_reason = True, "agent_timeout"
                break
            # The harness may open the reply itself (e.g. with "```bash\n"); the model continues it.
            prefix = self.harness.reply_prefix(turn) if buffered else ""
            if prefix:
                buf.add_prefix(self.policy.tokenize_text(prefix))
            room = self.token_budget - (len(buf.ids) if buffered else used)
            if room <= 0:
                run.stop_reason = "token_budget"
                break
            t0 = time.monotonic()
            seed = None if self.seed is None else self.seed * 1000 + turn
            max_tokens = min(self.max_reply_tokens, room)
            # Sampling stops where the harness's action ends: tokens after it would never be read.
            # A stop request ends the reply being sampled too (a reply takes tens of seconds on a
            # loaded CPU), so that a stopping run need not wait for it.
            stop = (
                {"stop_at": lambda text, opened=prefix: sandbox.stopped or self.harness.action_complete(opened + text)}
                if getattr(self.policy, "supports_stop_at", False)
                else {}
            )
            if buffered:
                gen = self.policy.generate_ids(
                    buf.ids, max_tokens=max_tokens, temperature=self.temperature, seed=seed, **stop
                )
            else:
                gen = self.policy.generate(
                    messages, max_tokens=max_tokens, temperature=self.temperature, seed=seed, tools=tools, **stop
                )
                used = gen.prompt_tokens + gen.n_generated
            if gen.finish_reason == "context_full":
                if turn == 0:
                    # Not the agent's doing: the task (with the harness's prompt) never fit, so the
                    # episode is an infrastructure error, not a zero-scoring attempt.
                    raise PolicyError(
                        f"the opening prompt ({gen.prompt_tokens} tokens) does not fit the model's context"
                        + (f" ({self.policy.n_ctx} tokens)" if hasattr(self.policy, "n_ctx") else "")
                    )
                run.stop_reason = "context_full"
                break
            if sandbox.stopped:
                run.stop_reason = "stopped"
                break
            buf.add_sampled(gen.token_ids)
            reply = prefix + gen.text
            action = self.harness.parse(reply, gen.tool_calls)
            if action.done and not action.commands and not action.error and not any(s.command for s in run.steps):
                action = replace(action, done=False, error=PREMATURE_STOP)
            results: list[StepResult] = []
            for cmd in action.commands:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                r = sandbox.run(cmd.keystrokes, timeout=min(left, self.command_timeout_sec))
                results.append(StepResult(cmd, r.output, r.exit_code, r.timed_out))
            observation = self.harness.observation(Turn(results, action.error, max(0.0, deadline - time.monotonic())))
            step = AgentStep(
                command="\n".join(c.keystrokes for c in action.commands),
                output=observation,
                exit_code=results[-1].exit_code if results else None,
                timed_out=any(r.timed_out for r in results),
                duration_s=time.monotonic() - t0,
                action_text=reply,
                token_ids=gen.token_ids,
                logprobs=gen.logprobs,
                prompt_tokens=gen.prompt_tokens,
                parse_error=action.error,
                generation_s=gen.seconds,
            )
            run.steps.append(step)
            if self.on_step is not None:
                self.on_step(len(run.steps) - 1, step)
            if action.done and not action.error:
                run.stop_reason = "done"
                break
            if self.end_on_runaway and action.error and not action.commands and gen.finish_reason == "length":
                run.stop_reason = "runaway_reply"
                break
            messages.append({"role": "assistant", "content": reply})
            if buffered:
                buf.add_observation(
                    self.policy, messages, observation, sampled_stopped=gen.finish_reason == "stop", tools=tools
                )
            messages.append({"role": "user", "content": observation})
        else:
            run.stop_reason = "turn_limit"
        run.token_ids, run.token_mask = buf.ids, buf.mask
        return run
