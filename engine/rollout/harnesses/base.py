"""What every harness shares: the parsed action, command results, observation formatting."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

DEFAULT_OBSERVATION_CAP = 8 * 1024
MAX_COMMAND_SECONDS = 120.0


@dataclass(frozen=True)
class Command:
    keystrokes: str
    # How long the agent is willing to wait for it (seconds); capped by the time left.
    duration: float = 10.0


@dataclass(frozen=True)
class Action:
    """One parsed reply. `error` is set when the reply could not be used; it is fed back."""

    commands: tuple[Command, ...] = ()
    done: bool = False
    error: str = ""


@dataclass(frozen=True)
class StepResult:
    command: Command
    output: str
    exit_code: int | None
    timed_out: bool


@dataclass(frozen=True)
class WorkedExample:
    """A task solved before and how: shown to the model in its system prompt as one more worked
    example (RSR explores with its own verified successes on similar tasks: engine/rsr/examples.py).
    `steps` are (command, observation as the model saw it) in order."""

    instruction: str
    steps: tuple[tuple[str, str], ...]


@dataclass
class Turn:
    """What a harness needs to render the next observation."""

    results: list[StepResult] = field(default_factory=list)
    parse_error: str = ""
    time_left_s: float = 0.0


def truncate_middle(text: str, cap: int) -> str:
    """Keep the head and the tail within `cap` bytes (UTF-8), marking what was cut."""
    data = text.encode("utf-8", errors="replace")
    if len(data) <= cap:
        return text
    half = max(0, (cap - 64) // 2)
    head = data[:half].decode("utf-8", errors="ignore")
    tail = data[-half:].decode("utf-8", errors="ignore") if half else ""
    return f"{head}\n[... {len(data) - 2 * half} bytes truncated ...]\n{tail}"


EXAMPLE_OUTPUT_CAP = 300


def short_output(observation: str) -> str:
    """An example's observation, kept short: examples are there for their commands."""
    text = observation.strip() or "(nothing)"
    return text if len(text) <= EXAMPLE_OUTPUT_CAP else text[:EXAMPLE_OUTPUT_CAP] + " [...]"


class Harness(ABC):
    name: str = ""
    # Chat-template tools (OpenAI schema) for harnesses that use native tool calling.
    tools: list[dict] | None = None

    # How much of one command's output the model is shown (bytes, head and tail kept).
    default_observation_cap: int = DEFAULT_OBSERVATION_CAP

    def __init__(self, observation_cap: int | None = None) -> None:
        self.observation_cap = observation_cap or self.default_observation_cap

    @abstractmethod
    def system_prompt(self) -> str: ...

    def bare_system_prompt(self) -> str:
        """The system prompt without worked examples (for harnesses that show some): what an RSR
        sample carries with `[rsr] sample_prompt = "bare"`, so the trained model acts without them."""
        return self.system_prompt()

    def system_prompt_with(self, examples: tuple[WorkedExample, ...] | list[WorkedExample] = ()) -> str:
        """The system prompt with `examples` after the harness's own, each in the harness's format."""
        if not examples:
            return self.system_prompt()
        return self.system_prompt() + "\n\n" + "\n\n".join(self.render_example(e) for e in examples)

    def render_example(self, example: WorkedExample) -> str:
        """One worked example, as this harness shows examples (a neutral layout by default)."""
        lines = [f"Example task: {example.instruction.strip()}"]
        for command, observation in example.steps:
            lines += [f"Command: {command}", f"Output: {short_output(observation)}"]
        lines.append("Then the task was complete.")
        return "\n".join(lines)

    def first_message(self, instruction: str, time_left_s: float) -> str:
        return f"Task:\n{instruction.strip()}\n\nYou have {time_left_s:.0f} seconds. The working directory is /app."

    @abstractmethod
    def parse(self, text: str, tool_calls: list[dict] | None = None) -> Action:
        """Turn a model reply into an Action. Never raises: problems go into Action.error."""

    def observation(self, turn: Turn) -> str:
        parts: list[str] = []
        if turn.parse_error:
            parts.append(f"Your reply could not be used: {turn.parse_error}\n{self.format_reminder()}")
        for r in turn.results:
            status = "timed out" if r.timed_out else f"exit code {r.exit_code}"
            parts.append(f"$ {r.command.keystrokes}\n{truncate_middle(r.output, self.observation_cap)}[{status}]")
        if not parts:
            parts.append("No command was run.")
        parts.append(f"Time left: {turn.time_left_s:.0f} seconds.")
        return "\n\n".join(parts)

    def format_reminder(self) -> str:
        return ""

    def reply_prefix(self, turn: int) -> str:
        """Text the harness writes at the start of the model's reply on `turn` (0-based), which the
        model continues: the opening of the action format ("```bash\n"), so that a model that
        drifts into prose or another language by habit starts from a command. It is part of the
        prompt (loss mask 0), never of what the model sampled. "" (no prefix) unless a harness
        says otherwise; only policies with a local token buffer are primed."""
        return ""

    def stop_reply(self) -> str | None:
        """The whole reply by which the model says it has finished (the episode ends there), as
        this harness defines it; None where the harness has no reply that only stops. RSR's SFT
        samples end with it after a verified success, so the trained model learns to stop once
        the work is done instead of acting on (engine/rsr/dataset.py)."""
        return None

    def action_complete(self, text: str) -> bool:
        """Whether `text`, a reply being sampled, already holds a complete action; sampling stops
        there. False (sample to the end) unless the harness knows where its action ends."""
        return False


def clamp_duration(value: object, default: float = 10.0) -> float:
    try:
        d = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default
    if d != d:  # NaN
        return default
    return min(max(d, 0.1), MAX_COMMAND_SECONDS)
