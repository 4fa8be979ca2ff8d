"""The configuration's sections as typed models: each key's type, range and default, written once here."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


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
    # The user's consent, which a task folder cannot give itself: only then may a task that sets
    # allow_internet run with a network (the host's where there is no bridge, so the host's own
    # services on 127.0.0.1 too), and a task's Dockerfile build with one.
    allow_internet: bool = False
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
    # The most seconds one command of a model agent may run (never past the task's agent timeout).
    # A command still running then is stopped and the model sees that it timed out, with its next
    # turn to go on: one `tail -f` must not spend the whole episode.
    command_timeout_sec: float = Field(120.0, ge=1.0, le=3600.0)
    # GGUF models are served from their weights re-encoded in this type ("as-is": the file's own).
    # Q8_0 goes through llama.cpp's tiled matrix kernels, Q4_1 does not (docs/agents.md).
    gguf_weights: Literal["as-is", "q8_0"] = "as-is"
    # Min-p sampling: a token less likely than `min_p` times the most likely one (at T = 1) is never
    # drawn; 0 draws from the whole vocabulary. Every sampled episode uses it (eval, RSR, RPR).
    # Recorded log-probs stay those of the whole softmax(logits / T), the distribution the trainers
    # compute, so PPO's ratio starts at 1; docs/agents.md says what the truncation changes.
    min_p: float = Field(0.0, ge=0.0, lt=1.0)


class EvalConfig(_Section):
    concurrency: int = Field(2, ge=1, le=64)
    # `trsi-tui eval --agent model` (its --temperature and --max-turns replace these); the
    # harness is [pipeline] eval_harness.
    temperature: float = Field(0.7, ge=0.0, le=5.0)
    max_turns: int = Field(20, ge=1, le=200)


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
    # As [rpr] precision: "auto" runs the matrix products in bf16 (autocast; the weights and the
    # optimizer stay fp32) where the GPU or CPU does bf16 natively, else fp32.
    precision: Literal["auto", "fp32", "bf16"] = "auto"


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
    # An SFT sample ends with the harness's stop reply (DONE) after its verified steps, so that a
    # model given several turns learns to stop once the work is done instead of acting on.
    teach_stop: bool = True
    # Exploration spends more where nothing is known to work yet: while no task of a family (the
    # curriculum's `family`) has a success in the round, each of its tasks gets up to this many
    # unaided attempts (0: the same as any task), with `unsolved_family_turns` turns (0: max_turns).
    unsolved_family_attempts: int = Field(0, ge=0, le=64)
    unsolved_family_turns: int = Field(0, ge=0, le=200)
    # Once a family has a success in the round, each of its tasks without one is shown worked
    # examples (that success among them) on at least this many attempts after it, past
    # `attempts` where it must be (0: off). A family's first success often comes on the last
    # attempt its tasks had; shown it, the others then pass 60% of the time (docs/results.md).
    family_followup_attempts: int = Field(0, ge=0, le=64)
    # An explore attempt ends at a reply that runs to [policy] max_reply_tokens without a usable
    # action: a code block never closed. Only a full success counts there, and the turns after
    # such a reply had cost 16% of explore's generation time and recovered no success of the 107
    # in seed 0's two rounds (docs/results.md). Replays (1 of 11 successes came after one),
    # evaluation and RPR keep every turn.
    end_on_runaway_reply: bool = True
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
    # On a curriculum suite, every round (and the probe) draws new instances of the families at the
    # frontier instead of reusing the suite's train tasks, which the actor would memorize
    # (engine/rpr/fresh.py); other suites always use their own tasks.
    fresh_instances: bool = True
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
    # Run the prompt prefix the episodes share (the harness's system prompt) through the model once
    # per pass instead of once per episode (engine/rpr/prefix.py): the same update, less work.
    share_prefix: bool = True
    # Episodes run through the model together, up to this many tokens (padding included); 0: one at
    # a time. One pass over many short episodes is far cheaper than many passes (each costs about
    # 0.17 s beyond its tokens on the demo's CPU); the bound keeps activation memory near what one
    # long episode needs.
    batch_tokens: int = Field(2048, ge=0)
    grad_clip: float = Field(1.0, gt=0)
    max_len: int = Field(2048, ge=64, description="longer episodes are left out of the loss and counted")
    rank: int = Field(8, ge=1, le=256, description="LoRA rank of a fresh actor or critic adapter")
    alpha: int = Field(16, ge=1)
    # A fresh critic's adapter on the top this many decoder layers only (0: all). Below them it sees
    # the base's hidden states, computed once per update, so its forward and backward run through
    # these layers alone (engine/rpr/actor_critic.py). An inherited critic keeps its own.
    critic_layers: int = Field(0, ge=0, le=1000)
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


class JobsConfig(_Section):
    # Every runner job journals its events (shell streams included) so that any front end can
    # follow or replay it; when a job ends, the journals of finished jobs older than the newest
    # `keep_journals` are deleted (their rows in `jobs list` stay). 0 keeps every journal.
    keep_journals: int = Field(20, ge=0)


class TuiConfig(_Section):
    # Work started from the TUI (n, R, P, a task's oracle) runs in a background runner job the TUI
    # attaches to, so quitting the TUI leaves it running; false: it runs inside the TUI, as before.
    detach: bool = True
    # Binding id -> keys, e.g. {"app.screen.trajectories" = "ctrl+j"}; ids are listed in the help screen.
    keymap: dict[str, str] = Field(default_factory=dict)


class Config(_Section):
    sandbox: SandboxConfig = SandboxConfig()
    reward: RewardConfig = RewardConfig()
    eval: EvalConfig = EvalConfig()
    policy: PolicyConfig = PolicyConfig()
    cluster: ClusterConfig = ClusterConfig()
    jobs: JobsConfig = JobsConfig()
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
