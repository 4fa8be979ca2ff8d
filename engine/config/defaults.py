"""The commented default configuration file (`trsi-tui config init` writes it), with every value taken
from the typed sections (engine/config/sections.py), so that a default is written only there."""

from __future__ import annotations

import json
import re

from pydantic import BaseModel

from engine.config.sections import Config

# `key = @`: the key's default from Config() goes where the @ is; a trailing comment keeps its column.
TEMPLATE = """\
# trsi-tui configuration. Every key is optional; these are the defaults.

# Default task suite for commands that take --tasks: a directory, or "curriculum" /
# "curriculum:TRAIN,EVAL" (the curriculum's one-step and multi-step families: TRAIN instances of
# each trained family, EVAL of every family, held-out ones too, generated into the cache); empty:
# the built-in suite.
tasks = @

[sandbox]
backend = @                # local (bubblewrap) or docker
pids_limit = @             # per sandbox
allow_internet = @         # tasks that set allow_internet, and task image builds, may use the network
disk_mb = @                # size cap of each writable filesystem in a sandbox
setup_timeout_sec = @      # environment/setup.sh

[sandbox.docker]
warm_pool = @              # started containers kept ready per image (hides start latency)

[sandbox.docker.aliases]   # images that cannot be pulled here -> local images
# "ubuntu:24.04" = "trsi-tui/base:bookworm"

[reward]
alpha = @                  # partial credit = alpha * passed/total, alpha < 1

[eval]
concurrency = @
temperature = @            # trsi-tui eval --agent model (--temperature replaces it)
max_turns = @              # ... and --max-turns

[policy]
llama_backend = @          # GGUF models: one llama.cpp context, episodes decoded in one batch; or "instances"
sequences = @              # at most this many episodes decode in one batch
max_reply_tokens = @       # the most tokens one model reply may have
command_timeout_sec = @    # the most seconds one command of a model agent may run; then it times out
gguf_weights = @           # GGUF weights served as the file has them, or re-encoded as "q8_0"
min_p = @                  # never draw a token less likely than min_p x the likeliest; 0 = whole vocabulary

[cluster]                  # where episodes run (docs/cluster.md)
engine = @                 # local (threads of this process) or ray (actors on a Ray cluster)
address = @                # ray: auto (ray start), ray://HOST:10001, or local (an in-process Ray)
sandboxes_per_node = @     # sandboxes a node runs at once; 0 = its CPU count
bind = @                   # local: the address the Ray started here binds (127.0.0.1: this machine only)
token_file = @             # the cluster's token; empty: <data dir>/cluster/auth_token (local) or Ray's lookup

[rsr]                      # Recursive Self-Rewrite (trsi-tui rsr run)
approval = @               # auto: approve what both reviews pass; manual: a person decides in the TUI
attempts = @               # explore attempts per task and harness, at most
min_attempts = @           # every task and harness gets this many before any stops
target_successes = @       # a task stops exploring once this many attempts passed every check
examples = @               # later attempts see this many of the round's successes on similar tasks (0: none)
harnesses = @
nop_floor = @              # more attempts only for partial credit above what a nop episode earns
split = @
temperature = @
max_turns = @
planner = @                # model spec; empty = the policy's own model
reviewer = @               # model spec; empty = the policy's own model
reviewer_unparseable = @          # when the reviewer's reply is not JSON: the deterministic checks decide (or "reject")
template_fallback = @      # a planner draft that fails the format check becomes a template of the commands
planner_retries = @        # more drafts after a first that fails the format check
runbooks_per_task = @
replays = @                # replays per approved runbook
explore_fallback = @       # an explore success no replay reproduced becomes a sample itself
trim_to_verified_prefix = @     # ... cut after the shortest prefix of its commands that passes
sample_prompt = @           # the SFT sample's system prompt: "as-run", or "bare" (no worked examples)
samples_per_task = @       # SFT's balanced set: at most this many samples per task (0: no cap)
samples_per_family = @     # ... and per task family (the curriculum's `family`, else `category`)
teach_stop = @             # an SFT sample ends with the harness's stop reply (DONE) after its verified steps
unsolved_family_attempts = @  # while a family has no success in the round: unaided attempts per task (0: off)
unsolved_family_turns = @  # ... with this many turns after the first min_attempts (0: max_turns)
family_followup_attempts = @  # once a family has a success: attempts its other tasks are shown it on, at least (0: off)
end_on_runaway_reply = @   # an explore attempt ends at a reply that runs to max_reply_tokens without an action

[rsr.sft]                  # QLoRA
rank = @
alpha = @
learning_rate = @
epochs = @
min_steps = @              # a smaller dataset repeats (reshuffled) until this many optimizer steps
batch_samples = @
max_len = @
load_4bit = @
packing = @                # pack a step's samples into shared rows (block-diagonal mask): less padding

[rpr]                      # Recursive Policy-Refine: PPO (trsi-tui rpr run)
rounds = @                 # rounds in which actor and critic train together
critic_warmup_rounds = @   # critic-only rounds first (actor frozen); 0 skips the warm-up
tasks_per_round = @
episodes_per_task = @
harness = @
split = @
temperature = @
max_turns = @
gamma = @
lam = @
clip_ratio = @
clip_value = @
kl_coef = @
kl_estimator = @           # k1 or k3
kl_mode = @                # loss: kl_coef * KL added to the loss; reward: -kl_coef * k1 per token in the reward
reference = @              # the KL reference: the actor as the stage started, or "base" (adapters off)
actor_lr = @
critic_lr = @
lr_warmup_steps = @
ppo_epochs = @
minibatch_episodes = @
loss_agg_mode = @             # or "seq-mean-token-mean": every episode weighs the same
frontier_evidence = @      # a task whose rollouts (this many or more) all succeeded, or all earned 0, leaves the plan
drop_uniform_groups = @    # joint rounds leave out a task's rollouts whose rewards are all equal
fresh_instances = @        # on a curriculum: each round draws new instances of the families at the frontier
normalize_advantages = @
old_logprobs = @           # PPO's old log-probs: the sampler's when a one-episode probe agrees; or "recompute"
sampler_tolerance = @      # the probe's largest mean |log-prob difference| that still counts as agreeing
share_prefix = @           # the prompt prefix the episodes share runs through the model once per pass
batch_tokens = @           # episodes run through the model together up to this many tokens; 0: one at a time
grad_clip = @
max_len = @                # longer episodes are left out of the loss (and counted)
rank = @                   # LoRA rank of a fresh actor or critic adapter
alpha = @
load_4bit = @
precision = @              # bf16 autocast where the hardware does bf16 natively, else fp32; or "fp32" / "bf16"

[pipeline]                 # trsi-tui pipeline run: Base -> RSR-1 -> RPR-1 -> RSR-2 -> RPR-2
model = @
eval_split = @
eval_seeds = @
eval_tasks = @             # a seeded sample of this many eval tasks; 0 = all of them
eval_harness = @
eval_temperature = @
eval_max_turns = @
seed = @
seeds = @                  # training seeds, each its own lineage (pipeline run --seeds 0,1,2); empty = [seed]

[jobs]                     # runs as jobs: trsi-tui jobs list / attach / stop / prune
keep_journals = @          # finished jobs whose events (shell streams included) are kept; 0 = all

[tui]
detach = @                 # work started from the TUI runs as a background job; quitting leaves it running

[tui.keymap]               # binding id -> keys; the help screen (?) lists every id
# "app.screen.trajectories" = "ctrl+j"
"""


def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        # As a person writes them: 300 (a float key takes an integer), 2e-4 rather than 0.0002.
        if value.is_integer() and abs(value) >= 10:
            return str(int(value))
        if 0 < abs(value) < 1e-2:
            return f"{value:.0e}".replace("e-0", "e-")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML default for {value!r}")


def render(template: str = TEMPLATE, config: Config | None = None) -> str:
    config = config or Config()
    section: BaseModel = config
    lines = []
    for line in template.split("\n"):
        header = re.match(r"^\[([a-z_.]+)\]", line)
        if header:
            section = config
            for part in header.group(1).split("."):
                section = getattr(section, part)
        key = re.match(r"^([a-z_0-9]+) = @( *)(#.*)?$", line)
        if key:
            name, pad, comment = key.group(1), key.group(2), key.group(3)
            text = f"{name} = {toml_value(getattr(section, name))}"
            if comment:
                column = len(name) + 4 + len(pad)
                text = text.ljust(column - 1) + " " + comment
            line = text
        lines.append(line)
    return "\n".join(lines)


DEFAULT_CONFIG_TOML = render()
