"""Actor and critic on one base model: two LoRA adapters and a value head.

- `actor`: the policy's adapter (the RSR checkpoint, or a fresh one, which equals the base).
- `critic`: its own LoRA adapter plus `value_head = Linear(hidden, 1)` on the last hidden state.
  Its adapter may change only the top layers (`critic_layers`): below them the critic sees the
  base's hidden states, which no update changes, so `critic_inputs` computes them once per update
  and the critic's forward and backward then run through its own layers only.
- the reference for the KL term: the actor as it was when the stage started (loaded frozen as
  adapter `ref`), or the base with adapters disabled.

peft activates one adapter at a time and, on switching, resets which adapter requires grad; and
autograd drops gradients for a leaf that stopped requiring grad before backward runs. So every
forward here first activates its adapter and re-applies our own trainable flags, and callers
run backward on one adapter's loss before the other adapter's forward.

Log-probabilities, entropies and values are computed only at action positions (mask 1), in the
flat order of those positions, so vocabulary-sized logits exist only where they are needed.
The model lives on the GPU when there is one; these small per-token vectors are handed back on
the CPU (autograd follows the copy), so the PPO arithmetic never has to care where the model is.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import torch

from engine.rpr.ppo_math import entropy_from_logits
from engine.rpr.prefix import Episode, Prefixes, SharedPrefix
from engine.training.loader import LoraShape, load_base, training_device
from engine.training.precision import Precision, autocast, compute_dtype

ACTOR, CRITIC, REF = "actor", "critic", "ref"


@contextmanager
def _only_layers(decoder, start: int, stop: int | None):
    """The decoder runs its layers [start, stop) only: stopping early, without its final norm
    (its output is then the next layer's input); starting late, from `inputs_embeds` that are
    layer `start`'s input. Rotary positions and the causal mask are the decoder's own."""
    layers, norm = decoder.layers, decoder.norm
    decoder.layers = torch.nn.ModuleList(list(layers)[start:stop])
    if stop is not None:
        decoder.norm = torch.nn.Identity()
    try:
        yield
    finally:
        decoder.layers, decoder.norm = layers, norm


def _right_padded(rows: list[torch.Tensor]) -> torch.Tensor:
    """Token ids [T] or hidden states [T, H] as one zero-padded batch: a causal model's real
    positions never attend to the padding after them, so no attention mask is needed."""
    batch = rows[0].new_zeros((len(rows), max(len(r) for r in rows), *rows[0].shape[1:]))
    for i, row in enumerate(rows):
        batch[i, : len(row)] = row
    return batch


@dataclass(frozen=True)
class ActionForward:
    logprobs: torch.Tensor  # [n_actions]
    entropy: torch.Tensor  # [n_actions]


class ActorCritic:
    def __init__(self, model, value_head: torch.nn.Linear, *, reference: str, temperature: float) -> None:
        self.model, self.value_head = model, value_head
        self.reference, self.temperature = reference, max(temperature, 1e-4)
        self.train_actor = True
        self.device = torch.device("cpu")
        self.dtype = "fp32"  # "bf16": forward passes under bf16 autocast (engine/training/precision.py)

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def load(
        cls,
        base: str,
        *,
        actor_adapter: Path | None,
        critic_adapter: Path | None,
        value_head: Path | None,
        reference: str,
        reference_adapter: Path | None,
        lora: LoraShape,
        load_4bit: bool,
        temperature: float,
        precision: Precision = "fp32",
        critic_layers: int = 0,
    ) -> "ActorCritic":
        """`reference`: "stage-start" (the frozen `reference_adapter`, or the base when there is
        none: a fresh adapter equals the base) or "base". `critic_layers`: a fresh critic's adapter
        changes only the top this many layers (0: all); a loaded critic keeps its own."""
        from peft import PeftModel, get_peft_model

        device = training_device()
        causal = load_base(base, load_4bit=load_4bit)
        config = lora.peft_config()
        if actor_adapter is not None:
            model = PeftModel.from_pretrained(causal, str(actor_adapter), adapter_name=ACTOR, is_trainable=True)
        else:
            model = get_peft_model(causal, config, adapter_name=ACTOR)
        if critic_adapter is not None:
            model.load_adapter(str(critic_adapter), adapter_name=CRITIC, is_trainable=True)
        else:
            n_layers = causal.config.num_hidden_layers
            top = range(n_layers - critic_layers, n_layers) if 0 < critic_layers < n_layers else None
            model.add_adapter(CRITIC, lora.peft_config(top))
        if reference == "stage-start" and reference_adapter is not None:
            model.load_adapter(str(reference_adapter), adapter_name=REF, is_trainable=False)
        head = torch.nn.Linear(causal.config.hidden_size, 1, device=device)
        if value_head is not None:
            head.load_state_dict(torch.load(value_head, map_location=device, weights_only=True))
        else:
            torch.nn.init.zeros_(head.weight)  # an untrained critic predicts 0, not noise
            torch.nn.init.zeros_(head.bias)
        head.requires_grad_(True)  # explicitly trainable: it is no part of any peft adapter
        ac = cls(model, head, reference=reference if REF in model.peft_config else "base", temperature=temperature)
        ac.device = device
        ac.dtype = compute_dtype(precision, device)
        ac._activate(ACTOR)
        return ac

    # -- parameters --------------------------------------------------------------------------
    def adapter_parameters(self, adapter: str) -> list[torch.nn.Parameter]:
        return [p for n, p in self.model.named_parameters() if f".{adapter}." in n and "lora_" in n]

    def actor_parameters(self) -> list[torch.nn.Parameter]:
        return self.adapter_parameters(ACTOR)

    def critic_parameters(self) -> list[torch.nn.Parameter]:
        return self.adapter_parameters(CRITIC) + list(self.value_head.parameters())

    def _activate(self, adapter: str) -> None:
        self.model.set_adapter(adapter)
        for p in self.adapter_parameters(ACTOR):
            p.requires_grad_(self.train_actor)
        for p in self.adapter_parameters(CRITIC):
            p.requires_grad_(True)
        if REF in self.model.peft_config:
            for p in self.adapter_parameters(REF):
                p.requires_grad_(False)

    # -- forward passes ----------------------------------------------------------------------
    def _context(self, adapter: str | None):
        if adapter is None:
            return self.model.disable_adapter()
        self._activate(adapter)
        return nullcontext()

    def _decoder(self):
        return self.model.get_base_model().model

    def _rows(self, adapter: str | None, episodes: list[Episode], prefix: SharedPrefix | None) -> list[torch.Tensor]:
        """Each episode's last hidden states at the positions whose output is used (target_mask 1).

        The episodes run as one right-padded batch, the padding's outputs dropped. With `prefix`,
        only the tokens after it run, attending to its keys and values.
        """
        start = prefix.length if prefix is not None else 0
        batch = _right_padded([ids[0, start:] for ids, _ in episodes]).to(self.device)
        with self._context(adapter):
            if prefix is None:
                hidden = self._decoder()(input_ids=batch, use_cache=False).last_hidden_state
            elif prefix.adapter != adapter:
                raise ValueError(f"a prefix computed under {prefix.adapter!r} used under {adapter!r}")
            else:
                hidden = prefix.forward(self._decoder(), batch)
        rows = []
        for row, (_, target_mask) in enumerate(episodes):
            where = target_mask[0, start:].bool().to(self.device)
            rows.append(hidden[row, : len(where)][where])
        return rows

    def prefix(self, adapter: str | None, input_ids: torch.Tensor) -> SharedPrefix:
        """The keys and values of `input_ids` [1, P] under `adapter` (None: the base), for the
        episodes that start with them (engine/rpr/prefix.py); tracked for gradients when enabled."""
        with autocast(self.dtype, self.device), self._context(adapter):
            return SharedPrefix.compute(adapter, self._decoder(), input_ids.to(self.device))

    def actions_many(
        self,
        adapter: str | None,
        episodes: list[Episode],
        with_entropy: bool = False,
        prefix: SharedPrefix | None = None,
    ) -> list[ActionForward]:
        """`actions` of several episodes, run through the model as one batch."""
        start = prefix.length if prefix is not None else 0
        with autocast(self.dtype, self.device):
            rows = self._rows(adapter, episodes, prefix)
            logits = self.model.get_base_model().lm_head(torch.cat(rows)).float() / self.temperature
        logp = torch.log_softmax(logits, dim=-1)
        targets = torch.cat([ids[0, start + 1 :][mask[0, start:].bool()] for ids, mask in episodes]).to(self.device)
        chosen = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        entropy = entropy_from_logits(logits) if with_entropy else torch.zeros_like(chosen)
        counts = [len(r) for r in rows]
        return [ActionForward(c.cpu(), e.cpu()) for c, e in zip(chosen.split(counts), entropy.split(counts))]

    def actions(
        self, adapter: str | None, input_ids: torch.Tensor, target_mask: torch.Tensor, with_entropy: bool = False
    ) -> ActionForward:
        """Log-probs under softmax(logits / T) of the tokens at positions 1.. where target_mask is 1.

        `input_ids` is [1, T]; `target_mask` is [1, T-1] (the action mask shifted by one).
        """
        return self.actions_many(adapter, [(input_ids, target_mask)], with_entropy)[0]

    @property
    def reference_adapter(self) -> str | None:
        """The adapter the KL term's reference runs under (None: the base, adapters disabled)."""
        return REF if self.reference == "stage-start" else None

    def reference_logprobs(self, input_ids: torch.Tensor, target_mask: torch.Tensor) -> torch.Tensor:
        return self.actions(self.reference_adapter, input_ids, target_mask).logprobs

    @property
    def critic_start(self) -> int:
        """The first layer the critic's adapter changes (0: it changes them all)."""
        layers = self.model.peft_config[CRITIC].layers_to_transform
        if layers is None:
            return 0
        return int(layers) if isinstance(layers, int) else min(layers)

    def critic_inputs(self, episodes: list[Episode], *, share: bool, batch_tokens: int) -> list[torch.Tensor]:
        """Each episode's hidden states [T, H] entering layer `critic_start`, which are the base's
        (the critic changes nothing below it): they hold while the critic trains, so an update
        computes them once. No gradients; the episodes run in chunks as `Prefixes` splits them."""
        decoder = self._decoder()
        inputs: list = [None] * len(episodes)
        with torch.no_grad(), autocast(self.dtype, self.device), _only_layers(decoder, 0, self.critic_start):
            prefixes = Prefixes(self, episodes, share=share, batch_tokens=batch_tokens)
            prefix = prefixes.get(None)
            for chunk in prefixes.chunks():
                tails = [episodes[i][0][0, prefixes.length :] for i in chunk]
                batch = _right_padded(tails).to(self.device)
                with self._context(None):
                    hidden = (
                        prefix.forward(decoder, batch)
                        if prefix
                        else decoder(input_ids=batch, use_cache=False).last_hidden_state
                    )
                for row, i in enumerate(chunk):
                    own = hidden[row, : len(tails[row])]
                    inputs[i] = torch.cat([prefix.hidden[0], own]) if prefix else own
        return inputs

    def values_many(
        self, episodes: list[Episode], prefix: SharedPrefix | None = None, inputs: list[torch.Tensor] | None = None
    ) -> list[torch.Tensor]:
        """`values` of several episodes, run through the model as one batch; with `inputs` (from
        `critic_inputs`), through the critic's own layers only."""
        with autocast(self.dtype, self.device):
            if inputs is None:
                rows = self._rows(CRITIC, episodes, prefix)
            else:
                decoder = self._decoder()
                with self._context(CRITIC), _only_layers(decoder, self.critic_start, None):
                    hidden = decoder(
                        inputs_embeds=_right_padded(inputs).to(self.device), use_cache=False
                    ).last_hidden_state
                rows = [
                    hidden[row, : mask.shape[1]][mask[0].bool().to(self.device)]
                    for row, (_, mask) in enumerate(episodes)
                ]
            values = self.value_head(torch.cat(rows)).squeeze(-1).float().cpu()
        return list(values.split([len(r) for r in rows]))

    def values(self, input_ids: torch.Tensor, target_mask: torch.Tensor) -> torch.Tensor:
        """V(state before each action token), the critic's estimate of the episode's reward."""
        return self.values_many([(input_ids, target_mask)])[0]

    # -- saving --------------------------------------------------------------------------------
    def save(self, out: Path) -> None:
        """out/actor/ and out/critic/ (peft adapters) and out/value_head.pt."""
        out.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(str(out), selected_adapters=[ACTOR, CRITIC])
        torch.save(self.value_head.state_dict(), out / "value_head.pt")
