"""Typed configuration from a TOML file; unknown keys and bad values are errors that say where."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator


class ConfigError(ValueError):
    """The config file is unreadable or invalid; the message names the file and the key."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DockerConfig(_Section):
    # Image names that cannot be pulled here -> local images, e.g. {"ubuntu:24.04" = "trsi-tui/base:bookworm"}.
    aliases: dict[str, str] = Field(default_factory=dict)
    # Started containers kept ready per image and limits: hides container start latency.
    warm_pool: int = Field(0, ge=0, le=16)


class SandboxConfig(_Section):
    backend: Literal["local", "docker"] = "local"
    docker: DockerConfig = DockerConfig()
    # Defaults for tasks whose task.toml leaves a limit out.
    pids_limit: int = Field(512, ge=16)
    disk_mb: int = Field(2048, ge=16)
    setup_timeout_sec: float = Field(300.0, gt=0)


class RewardConfig(_Section):
    # Partial credit is alpha * passed/total; alpha < 1 keeps it strictly below a full success.
    alpha: float = Field(0.5, ge=0.0, lt=1.0)


class PolicyConfig(_Section):
    # GGUF models (bundled:, gguf:): "batched" serves every concurrent episode as a sequence of one
    # llama.cpp context, decoding them in one batch per token; "instances" keeps one context per
    # episode (the single-sequence path: its tokens never depend on what else runs).
    llama_backend: Literal["batched", "instances"] = "batched"
    # At most this many episodes decode in one batch; more episodes may run (their commands wait
    # in sandboxes), set by each command's concurrency.
    sequences: int = Field(8, ge=1, le=64)
    # The most tokens one model reply may have (every model agent: eval, RSR, RPR). A reply that
    # never closes its action runs to this limit, and on the CPU its tokens are most of the time.
    max_reply_tokens: int = Field(512, ge=16, le=32768)
    # GGUF models are served from their weights re-encoded in this type ("as-is": the file's own).
    # Q8_0 goes through llama.cpp's tiled matrix kernels, Q4_1 does not (docs/agents.md).
    gguf_weights: Literal["as-is", "q8_0"] = "as-is"


class EvalConfig(_Section):
    concurrency: int = Field(2, ge=1, le=64)


class SftSection(_Section):
    rank: int = Field(8, ge=1, le=256)
    alpha: int = Field(16, ge=1)
    learning_rate: float = Field(2e-4, gt=0, le=1.0)
    epochs: int = Field(3, ge=1, le=100)
    min_steps: int = Field(0, ge=0, le=10000, description="a smaller dataset repeats until this many steps")
    batch_samples: int = Field(4, ge=1, le=256)
    max_len: int = Field(2048, ge=64)
    load_4bit: bool = True
    packing: bool = False


class RsrConfig(_Section):
    approval: Literal["auto", "manual"] = "auto"
    attempts: int = Field(6, ge=1, le=64, description="explore attempts per task and harness, at most")
    min_attempts: int = Field(2, ge=1, le=64, description="attempts every task and harness gets before any stops")
    target_successes: int = Field(2, ge=1, le=64, description="a task stops exploring once it has this many")
    # After the unaided minimum, attempts are shown up to this many of the round's verified
    # successes on the most similar other tasks as worked examples (0: never).
    examples: int = Field(2, ge=0, le=8)
    # The formats the bundled model writes by habit (docs/results.md measures them on the curriculum).
    harnesses: list[str] = Field(default_factory=lambda: ["fenced-bash-primed"], min_length=1)
    # Run one nop episode per task first: partial credit no higher than doing nothing earns is no
    # reason to spend more explore attempts on a task.
    nop_floor: bool = True
    split: str = "train"
    temperature: float = Field(0.8, ge=0.0, le=5.0)
    max_turns: int = Field(6, ge=1, le=200)
    planner: str = Field("", description="model spec of the planner; empty = the policy's own model")
    reviewer: str = Field("", description="model spec of the reviewer; empty = the policy's own model")
    # A reviewer too small to write a JSON verdict abstains: the deterministic checks decide.
    reviewer_unparseable: Literal["reject", "abstain"] = "abstain"
    template_fallback: bool = True
    # Drafts the planner gets after its first fails the format check (a model too small to write
    # runbooks spends decode time on every retry before the template stands in).
    planner_retries: int = Field(2, ge=0, le=10)
    runbooks_per_task: int = Field(2, ge=1, le=64)
    replays: int = Field(1, ge=1, le=16, description="replays per approved runbook")
    # SFT trains on a balanced set: at most this many verified samples per task and per task
    # family (0: no cap); the store keeps every sample.
    # An explore success whose task no replay passed becomes a sample itself (a model too small
    # to follow a runbook must not zero the funnel), cut after the shortest prefix of its
    # commands that passes every check when re-run in a fresh sandbox.
    explore_fallback: bool = True
    trim_to_verified_prefix: bool = True
    # What system prompt an SFT sample carries: the one the replay ran with ("as-run"), or the
    # harness's without worked examples ("bare"; evaluate the result under fenced-bash-bare).
    sample_prompt: Literal["as-run", "bare"] = "as-run"
    samples_per_task: int = Field(2, ge=0, le=1000)
    samples_per_family: int = Field(8, ge=0, le=100000)
    sft: SftSection = SftSection()


class RprConfig(_Section):
    """PPO with actor and critic (trsi-tui rpr run); see docs/rpr.md."""

    rounds: int = Field(4, ge=0, le=1000, description="rounds in which actor and critic train together")
    critic_warmup_rounds: int = Field(4, ge=0, le=1000, description="critic-only rounds first, actor frozen")
    tasks_per_round: int = Field(4, ge=1, le=1000)
    episodes_per_task: int = Field(2, ge=1, le=64)
    harness: str = "fenced-bash-primed"
    split: str = "train"
    temperature: float = Field(0.8, gt=0.0, le=5.0)
    max_turns: int = Field(6, ge=1, le=200)
    gamma: float = Field(1.0, ge=0.0, le=1.0)
    lam: float = Field(1.0, ge=0.0, le=1.0)
    clip_ratio: float = Field(0.2, gt=0.0, le=1.0)
    clip_value: float = Field(0.2, gt=0.0)
    kl_coef: float = Field(0.05, ge=0.0)
    kl_estimator: Literal["k1", "k3"] = "k3"
    kl_mode: Literal["loss", "reward"] = "loss"
    reference: Literal["stage-start", "base"] = "stage-start"
    actor_lr: float = Field(1e-5, gt=0, le=1.0)
    critic_lr: float = Field(1e-4, gt=0, le=1.0)
    lr_warmup_steps: int = Field(0, ge=0)
    ppo_epochs: int = Field(2, ge=1, le=32)
    minibatch_episodes: int = Field(4, ge=1, le=1024)
    # Rounds sample tasks at the frontier: a task whose last `frontier_evidence` rollouts or more
    # all succeeded, or all earned nothing, leaves the plan (0 keeps every task).
    frontier_evidence: int = Field(4, ge=0, le=1000)
    # In joint rounds, a task's group of rollouts whose rewards are all equal is left out of the
    # update: its advantages carry no preference between replies (DAPO's dynamic sampling).
    drop_uniform_groups: bool = True
    # The probe: the same `probe_tasks` train tasks x `probe_episodes` sampling seeds, rolled out
    # by the actor before the first joint round, after every `probe_every`-th and after the last,
    # never trained on. Rounds take different tasks, so their own success rates do not show
    # whether the actor got better; the probe's do (same tasks, same seeds: only the actor
    # differs). probe_tasks = 0 turns it off.
    probe_tasks: int = Field(8, ge=0, le=1000)
    probe_episodes: int = Field(2, ge=1, le=64)
    probe_every: int = Field(1, ge=1, le=1000)
    # token-mean: every action token of a minibatch weighs the same; seq-mean-token-mean: every episode does.
    loss_agg_mode: Literal["token-mean", "seq-mean-token-mean"] = "token-mean"
    normalize_advantages: bool = True
    # "sampler": PPO's old log-probs are the sampler's own when a one-episode probe agrees with the
    # training model within `sampler_tolerance` (mean |log-prob difference|); "recompute": always
    # recompute them with the training model (one more forward pass per episode).
    old_logprobs: Literal["sampler", "recompute"] = "sampler"
    sampler_tolerance: float = Field(0.1, ge=0.0)
    grad_clip: float = Field(1.0, gt=0)
    max_len: int = Field(2048, ge=64, description="longer episodes are left out of the loss and counted")
    rank: int = Field(8, ge=1, le=256, description="LoRA rank of a fresh actor or critic adapter")
    alpha: int = Field(16, ge=1)
    load_4bit: bool = True
    # "auto": matrix products in bf16 (autocast; weights stay fp32) on a GPU or CPU that does bf16
    # natively, else fp32; or force "fp32" / "bf16".
    precision: Literal["auto", "fp32", "bf16"] = "auto"


class PipelineConfig(_Section):
    """Base -> RSR-1 -> RPR-1 -> RSR-2 -> RPR-2 (trsi-tui pipeline run); see docs/pipeline.md."""

    model: str = Field("bundled:smollm2-135m", description="the Base stage's model spec")
    eval_split: str = "eval"
    eval_seeds: int = Field(3, ge=1, le=100)
    eval_tasks: int = Field(0, ge=0, description="evaluate on this many eval tasks (a seeded sample); 0 = all")
    eval_harness: str = "fenced-bash-primed"
    eval_temperature: float = Field(0.7, ge=0.0, le=5.0)
    eval_max_turns: int = Field(6, ge=1, le=200)
    seed: int = Field(0, ge=0, le=99, description="training seed of a single-lineage run; also the eval sampling seed")
    seeds: list[int] = Field(
        default_factory=list, description="training seeds, each its own lineage Base -> ... -> RPR-2 (empty = [seed])"
    )

    @field_validator("seeds")
    @classmethod
    def _seeds_in_range(cls, seeds: list[int]) -> list[int]:
        bad = [s for s in seeds if not 0 <= s <= 99]
        if bad:
            raise ValueError(f"training seeds go from 0 to 99; got {bad}")
        return list(dict.fromkeys(seeds))

    def training_seeds(self) -> list[int]:
        return self.seeds or [self.seed]


class ClusterConfig(_Section):
    """Where episodes run: threads of this process, or Ray actors across a cluster (docs/cluster.md)."""

    engine: Literal["local", "ray"] = "local"
    # "auto" (a cluster started with `ray start`), "ray://HOST:10001" (Ray Client), or "local"
    # (an in-process Ray on this machine).
    address: str = "auto"
    # Sandboxes a node runs at once; 0 = the node's CPU count.
    sandboxes_per_node: int = Field(0, ge=0, le=256)
    # The address a Ray this tool starts ("local") binds: 127.0.0.1 (this machine only) or one of
    # the machine's addresses (Ray then listens on every interface: see docs/cluster.md).
    bind: str = "127.0.0.1"
    # The file with the cluster's token. Empty: <data dir>/cluster/auth_token for "local" (made
    # on first use), Ray's own lookup for a cluster started elsewhere (RAY_AUTH_TOKEN,
    # RAY_AUTH_TOKEN_PATH, ~/.ray/auth_token).
    token_file: str = ""

    @field_validator("address")
    @classmethod
    def _address(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError('address is "auto", "local", HOST:PORT or ray://HOST:PORT')
        return v

    @field_validator("bind")
    @classmethod
    def _bind(cls, v: str) -> str:
        import ipaddress

        try:
            ip = ipaddress.ip_address(v.strip())
        except ValueError:
            raise ValueError(f"bind is an IP address of this machine (127.0.0.1: only it); got {v!r}") from None
        if ip.is_unspecified or ip.is_multicast:
            # Ray advertises the bind address to every node: it must be one they can reach.
            raise ValueError(f"bind is one address of this machine, not {v!r}")
        return str(ip)


class TuiConfig(_Section):
    # Binding id -> keys, e.g. {"app.screen.trajectories" = "ctrl+j"}; ids are listed in the help screen.
    keymap: dict[str, str] = Field(default_factory=dict)


class Config(_Section):
    sandbox: SandboxConfig = SandboxConfig()
    reward: RewardConfig = RewardConfig()
    eval: EvalConfig = EvalConfig()
    policy: PolicyConfig = PolicyConfig()
    cluster: ClusterConfig = ClusterConfig()
    tui: TuiConfig = TuiConfig()
    rsr: RsrConfig = RsrConfig()
    rpr: RprConfig = RprConfig()
    pipeline: PipelineConfig = PipelineConfig()
    tasks: str = Field(
        "",
        description='default task suite: a directory, or "curriculum[:TRAIN,EVAL]" (generated into the cache); '
        "empty = the built-in suite",
    )

    @field_validator("tasks")
    @classmethod
    def _strip(cls, v: str) -> str:
        return v.strip()


def _describe(err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        where = ".".join(str(p) for p in e["loc"]) or "(top level)"
        msg = "unknown key" if e["type"] == "extra_forbidden" else e["msg"]
        lines.append(f"  {where}: {msg}")
    return "\n".join(lines)


def parse_config(text: str, source: str = "<config>") -> Config:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: invalid configuration:\n{_describe(exc)}") from None


def load_config(path: Path) -> Config:
    """The config at `path`, or the defaults when the file does not exist."""
    if not path.exists():
        return Config()
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    return parse_config(text, str(path))


DEFAULT_CONFIG_TOML = """\
# trsi-tui configuration. Every key is optional; these are the defaults.

# Default task suite for commands that take --tasks: a directory, or "curriculum" /
# "curriculum:TRAIN,EVAL" (the one-command curriculum, TRAIN and EVAL instances per family,
# generated into the cache); empty: the built-in suite.
tasks = ""

[sandbox]
backend = "local"          # local (bubblewrap) or docker
pids_limit = 512           # per sandbox
disk_mb = 2048             # size cap of each writable filesystem in a sandbox
setup_timeout_sec = 300    # environment/setup.sh

[sandbox.docker]
warm_pool = 0              # started containers kept ready per image (hides start latency)

[sandbox.docker.aliases]   # images that cannot be pulled here -> local images
# "ubuntu:24.04" = "trsi-tui/base:bookworm"

[reward]
alpha = 0.5                # partial credit = alpha * passed/total, alpha < 1

[eval]
concurrency = 2

[policy]
llama_backend = "batched"  # GGUF models: one llama.cpp context, episodes decoded in one batch; or "instances"
sequences = 8              # at most this many episodes decode in one batch
max_reply_tokens = 512     # the most tokens one model reply may have
gguf_weights = "as-is"     # GGUF weights served as the file has them, or re-encoded as "q8_0"

[cluster]                  # where episodes run (docs/cluster.md)
engine = "local"           # local (threads of this process) or ray (actors on a Ray cluster)
address = "auto"           # ray: auto (ray start), ray://HOST:10001, or local (an in-process Ray)
sandboxes_per_node = 0     # sandboxes a node runs at once; 0 = its CPU count
bind = "127.0.0.1"         # local: the address the Ray started here binds (127.0.0.1: this machine only)
token_file = ""            # the cluster's token; empty: <data dir>/cluster/auth_token (local) or Ray's lookup

[rsr]                      # Recursive Self-Rewrite (trsi-tui rsr run)
approval = "auto"          # auto: approve what both reviews pass; manual: a person decides in the TUI
attempts = 6               # explore attempts per task and harness, at most
min_attempts = 2           # every task and harness gets this many before any stops
target_successes = 2       # a task stops exploring once this many attempts passed every check
examples = 2               # later attempts see this many of the round's successes on similar tasks (0: none)
harnesses = ["fenced-bash-primed"]
nop_floor = true           # more attempts only for partial credit above what a nop episode earns
split = "train"
temperature = 0.8
max_turns = 6
planner = ""               # model spec; empty = the policy's own model
reviewer = ""              # model spec; empty = the policy's own model
reviewer_unparseable = "abstain"  # when the reviewer's reply is not JSON: the deterministic checks decide (or "reject")
template_fallback = true   # a planner draft that fails the format check becomes a template of the commands
planner_retries = 2        # more drafts after a first that fails the format check
runbooks_per_task = 2
replays = 1                # replays per approved runbook
explore_fallback = true    # an explore success no replay reproduced becomes a sample itself
trim_to_verified_prefix = true  # ... cut after the shortest prefix of its commands that passes
sample_prompt = "as-run"    # the SFT sample's system prompt: "as-run", or "bare" (no worked examples)
samples_per_task = 2       # SFT's balanced set: at most this many samples per task (0: no cap)
samples_per_family = 8     # ... and per task family (the curriculum's `family`, else `category`)

[rsr.sft]                  # QLoRA
rank = 8
alpha = 16
learning_rate = 2e-4
epochs = 3
min_steps = 0              # a smaller dataset repeats (reshuffled) until this many optimizer steps
batch_samples = 4
max_len = 2048
load_4bit = true
packing = false            # pack a step's samples into shared rows (block-diagonal mask): less padding

[rpr]                      # Recursive Policy-Refine: PPO (trsi-tui rpr run)
rounds = 4                 # rounds in which actor and critic train together
critic_warmup_rounds = 4   # critic-only rounds first (actor frozen); 0 skips the warm-up
tasks_per_round = 4
episodes_per_task = 2
harness = "fenced-bash-primed"
split = "train"
temperature = 0.8
max_turns = 6
gamma = 1.0
lam = 1.0
clip_ratio = 0.2
clip_value = 0.2
kl_coef = 0.05
kl_estimator = "k3"        # k1 or k3
kl_mode = "loss"           # loss: kl_coef * KL added to the loss; reward: -kl_coef * k1 per token in the reward
reference = "stage-start"  # the KL reference: the actor as the stage started, or "base" (adapters off)
actor_lr = 1e-5
critic_lr = 1e-4
lr_warmup_steps = 0
ppo_epochs = 2
minibatch_episodes = 4
loss_agg_mode = "token-mean"  # or "seq-mean-token-mean": every episode weighs the same
frontier_evidence = 4      # a task whose rollouts (this many or more) all succeeded, or all earned 0, leaves the plan
drop_uniform_groups = true # joint rounds leave out a task's rollouts whose rewards are all equal
normalize_advantages = true
old_logprobs = "sampler"   # PPO's old log-probs: the sampler's when a one-episode probe agrees; or "recompute"
sampler_tolerance = 0.1    # the probe's largest mean |log-prob difference| that still counts as agreeing
grad_clip = 1.0
max_len = 2048             # longer episodes are left out of the loss (and counted)
rank = 8                   # LoRA rank of a fresh actor or critic adapter
alpha = 16
load_4bit = true
precision = "auto"         # bf16 autocast where the hardware does bf16 natively, else fp32; or "fp32" / "bf16"

[pipeline]                 # trsi-tui pipeline run: Base -> RSR-1 -> RPR-1 -> RSR-2 -> RPR-2
model = "bundled:smollm2-135m"
eval_split = "eval"
eval_seeds = 3
eval_tasks = 0             # a seeded sample of this many eval tasks; 0 = all of them
eval_harness = "fenced-bash-primed"
eval_temperature = 0.7
eval_max_turns = 6
seed = 0
seeds = []                 # training seeds, each its own lineage (pipeline run --seeds 0,1,2); empty = [seed]

[tui.keymap]               # binding id -> keys; the help screen (?) lists every id
# "app.screen.trajectories" = "ctrl+j"
"""


PRESETS_DIR = Path(__file__).parent / "presets"


def preset_names() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.toml"))


def load_preset(name: str) -> Config:
    """A named configuration shipped with trsi-tui (engine/presets/NAME.toml)."""
    path = PRESETS_DIR / f"{name}.toml"
    if not path.is_file():
        raise ConfigError(f"unknown preset {name!r}; available: {', '.join(preset_names())}")
    return parse_config(path.read_text(), f"preset {name}")
