"""What PPO and GRPO share: the LoRA policy, its forward over sampled responses, minibatches, the update.

The policy is the LM with a LoRA adapter, the reference the same LM with the adapter disabled. Rollouts are
sampled and every forward runs in eval mode with dropout off (TRL does the same), and the log-probs a rollout
keeps (``old_logprobs``) come from the very forward the update runs, over the same minibatch rows: before
the first update the ratio pi / pi_old is exactly 1. Only the generated positions go through the LM head.
Under several processes each rank optimises on its own rollouts and every update averages the gradients.
With ``rl.gradient_checkpointing`` the forwards that build a graph run the decoder in train mode (dropout is
off, so the numbers are eval mode's), which is when transformers checkpoints its layers.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from peft import PeftModel
from torch import nn

from hardcse.art.config import GeneratorConfig, RLConfig
from hardcse.art.generator.prefix import continue_rows, whole_rows
from hardcse.art.generator.sampling import Samples, decoder_and_head, sample
from hardcse.distributed import all_ranks_true, average_gradients, world_size

log = logging.getLogger(__name__)

# (texts of the responses, cut off at max_new_tokens?) -> (scores, numbers to log); the caller's closure knows
# the batch's anchors and kinds
RewardFn = Callable[[list[str], list[bool]], tuple[np.ndarray, dict]]


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (x * mask).sum() / mask.sum().clamp(min=1)


def disable_dropout(model: nn.Module) -> None:
    """Every dropout (LoRA's included) to p = 0, so sampling and training forwards compute the same policy."""
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0


def enable_checkpointing(model: nn.Module) -> None:
    """Transformers' layer checkpointing, non-reentrant (the LoRA weights get gradients though the layers'
    inputs need none); ``activation_checkpointing_enable`` from transformers 5.2x, its older name before."""
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable({"use_reentrant": False})
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


@dataclass
class Rollout:
    """One step's samples and what the update needs of them; the algorithm fills ``advantages`` (and its own
    tensors in ``extra``)."""

    samples: Samples
    scores: torch.Tensor  # (B,) the reward of each response
    old_logprobs: torch.Tensor  # (B, T) log pi_old, by the update's own forward
    old_values: torch.Tensor | None  # (B, T) PPO's V_old; None without a value head
    ref_logprobs: torch.Tensor  # (B, T) log pi_ref (adapter disabled)
    minibatches: list[list[torch.Tensor]]  # rows of each minibatch, per epoch
    advantages: torch.Tensor | None = None
    extra: dict[str, torch.Tensor] = field(default_factory=dict)
    # the first minibatch's policy outputs with their graph, used once by its update (then dropped)
    first_outputs: tuple | None = None


class PolicyTrainer:
    """The LoRA policy, its optimizer (over ``extra_parameters`` too, e.g. PPO's value head) and step count.

    A step: :meth:`collect` samples, scores and computes pi_old and pi_ref; the algorithm's ``advantages``
    fills in the rest; :meth:`optimise` minimises the algorithm's ``minibatch_losses`` epoch by epoch."""

    STATE_FILE = "rl_state"
    LOSS_KEYS: tuple[str, ...] = ("policy_loss",)  # the minibatch numbers averaged into the step's log line

    def __init__(
        self,
        model: PeftModel,
        tokenizer: object,
        generation: GeneratorConfig,
        config: RLConfig,
        extra_parameters: Sequence[nn.Parameter] = (),
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.generation = generation
        self.config = config
        disable_dropout(model)
        model.eval()
        if config.gradient_checkpointing:
            enable_checkpointing(model)
        params = [p for p in model.parameters() if p.requires_grad] + list(extra_parameters)
        self.optimizer = torch.optim.AdamW(params, lr=config.learning_rate)
        self.step_count = 0
        self.skipped_batches = 0

    # ----- forwards -------------------------------------------------------------------------------
    def forward(self, samples: Samples) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(log-probs, entropies, hidden states) at the response positions, (B, T) / (B, T, H), under the
        sampling distribution softmax(logits / temperature)."""
        decoder, head = decoder_and_head(self.model)
        if self.config.gradient_checkpointing:
            # every forward over whole prompts, not only the checkpointed ones: pi_old and pi are the same sums
            checkpointed = torch.is_grad_enabled()
            decoder.train(checkpointed)
            try:
                hidden = whole_rows(decoder, samples.prompts, samples.response_ids, samples.response_mask)
            finally:
                decoder.train(False)
        else:
            hidden = continue_rows(decoder, samples.prompts, samples.response_ids, samples.response_mask)
        # the LM head only where a response token is (a 49k-word head is a third of a forward), on a 2-d input:
        # a 3-d one makes torch broadcast-copy the head's weight once per row
        valid = samples.response_mask.bool()
        logp_all = (head(hidden[valid]).float() / self.generation.sampling_temperature).log_softmax(-1)
        logprobs = torch.zeros(valid.shape, dtype=logp_all.dtype, device=logp_all.device)
        entropy = torch.zeros(valid.shape, dtype=logp_all.dtype, device=logp_all.device)
        logprobs[valid] = torch.gather(logp_all, 1, samples.response_ids[valid].unsqueeze(-1)).squeeze(-1)
        entropy[valid] = -(logp_all.exp() * logp_all).sum(-1)
        return logprobs, entropy, hidden

    def policy_outputs(self, samples: Samples) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(log-probs, entropies, values or None): what the update differentiates."""
        logprobs, entropy, _ = self.forward(samples)
        return logprobs, entropy, None

    @torch.no_grad()
    def reference_logprobs(self, samples: Samples) -> torch.Tensor:
        with self.model.disable_adapter():
            return self.forward(samples)[0]

    # rows laid out in runs of this many that belong together (GRPO: a prompt's group): minibatches take whole
    # runs, so a minibatch computes few prompt prefixes
    unit = 1

    def minibatches(self, n: int) -> list[list[torch.Tensor]]:
        """The row partition of each optimisation epoch of this step (seeded: a resumed step repeats it)."""
        generator = torch.Generator().manual_seed(self.config.seed + self.step_count)
        unit = self.unit if n % self.unit == 0 and self.config.minibatch_size % self.unit == 0 else 1

        def shuffled_rows() -> torch.Tensor:
            units = torch.randperm(n // unit, generator=generator)
            return (units.unsqueeze(1) * unit + torch.arange(unit)).flatten()

        device = self.model.device  # drawn on the CPU (the seeded generator), used where the rollout lives
        return [list(shuffled_rows().to(device).split(self.config.minibatch_size)) for _ in range(self.config.epochs)]

    def sample(
        self, prompts: Sequence[str], groups: Sequence[Hashable], limits: Sequence[int] | None = None
    ) -> Samples:
        return sample(self.model, self.tokenizer, prompts, self.generation, groups=groups, limits=limits)

    # ----- one step ------------------------------------------------------------------------------
    def collect(
        self,
        prompts: Sequence[str],
        groups: Sequence[Hashable],
        reward_fn: RewardFn,
        limits: Sequence[int] | None = None,
    ) -> tuple[Rollout, dict, dict]:
        """Sample, score, and compute pi_old (and V_old) over the first epoch's minibatches and pi_ref."""
        timings: dict = {}
        samples = self.timed(timings, "generation", lambda: self.sample(prompts, groups, limits))
        scores, reward_stats = self.timed(timings, "scoring", lambda: reward_fn(samples.texts, samples.truncated))
        minibatches = self.minibatches(len(samples.texts))

        first: dict = {}

        def old_policy() -> tuple[torch.Tensor, torch.Tensor | None]:
            # the same forward over the same rows as the first epoch's update: the ratio starts at exactly 1.
            # The first minibatch's forward keeps its graph: nothing has changed before its update, so it is
            # also that update's forward (one forward saved a step).
            mask = samples.response_mask
            logprobs, values = torch.zeros_like(mask), torch.zeros_like(mask)
            for i, rows in enumerate(minibatches[0]):
                with torch.set_grad_enabled(i == 0):
                    outputs = self.policy_outputs(samples.select(rows))
                if i == 0:
                    first["outputs"] = outputs
                logprobs[rows] = outputs[0].detach()
                if outputs[2] is not None:
                    values[rows] = outputs[2].detach()
            return logprobs, (values * mask if self.has_values else None)

        old_logprobs, old_values = self.timed(timings, "policy_forward", old_policy)
        ref_logprobs = self.timed(timings, "reference", lambda: self.reference_logprobs(samples))
        scores_t = torch.as_tensor(np.asarray(scores, dtype=np.float32), device=samples.response_mask.device)
        rollout = Rollout(samples, scores_t, old_logprobs, old_values, ref_logprobs, minibatches)
        rollout.first_outputs = first["outputs"]
        return rollout, reward_stats, timings

    has_values = False

    def advantages(self, rollout: Rollout) -> None:
        raise NotImplementedError

    def minibatch_losses(
        self, rollout: Rollout, rows: torch.Tensor, outputs: tuple | None = None
    ) -> dict[str, torch.Tensor]:
        """The algorithm's losses of one minibatch; ``outputs``: its policy outputs when already computed."""
        raise NotImplementedError

    def outputs_for(self, rollout: Rollout, rows: torch.Tensor, outputs: tuple | None) -> tuple:
        return outputs if outputs is not None else self.policy_outputs(rollout.samples.select(rows))

    def step_stats(self, rollout: Rollout, n_prompts: int) -> dict:
        """The algorithm's numbers for the step's log line (after the update)."""
        return {}

    def step(
        self,
        prompts: Sequence[str],
        groups: Sequence[Hashable],
        reward_fn: RewardFn,
        limits: Sequence[int] | None = None,
    ) -> dict:
        """Sample (``limits``: each row's new-token budget), score, and optimise; returns the numbers to log (a
        skipped batch says so)."""
        rollout, reward_stats, timings = self.collect(prompts, groups, reward_fn, limits)
        self.advantages(rollout)
        self.step_count += 1
        stats: dict = {"step": self.step_count, **reward_stats}
        tensors = (rollout.scores, rollout.old_logprobs, rollout.ref_logprobs, rollout.advantages)
        if not all_ranks_true(all(torch.isfinite(t).all() for t in tensors)):
            self.skipped_batches += 1
            log.warning("step %d: non-finite rollout values, batch skipped", self.step_count)
            return {**stats, **timings, "skipped": True, "skipped_batches": self.skipped_batches}
        stats |= self.timed(timings, "optimisation", lambda: self.optimise(rollout))
        mask = rollout.samples.response_mask
        return (
            stats
            | self.step_stats(rollout, len(prompts) * world_size())
            | {
                "score": float(rollout.scores.mean()),
                "response_tokens": float(mask.sum(dim=1).mean()),
                "truncated": float(np.mean(rollout.samples.truncated)),
                "skipped": False,
                "skipped_batches": self.skipped_batches,
                **timings,
            }
        )

    def optimise(self, rollout: Rollout) -> dict:
        totals: dict[str, list[float]] = {k: [] for k in self.LOSS_KEYS}
        for e, epoch in enumerate(rollout.minibatches):
            for i, rows in enumerate(epoch):
                kept = rollout.first_outputs if (e, i) == (0, 0) else None
                rollout.first_outputs = None if kept is not None else rollout.first_outputs
                losses = self.minibatch_losses(rollout, rows, kept)
                if self.apply(losses["loss"]):
                    for key in totals:
                        totals[key].append(float(losses[key].detach()))
        return {k: (float(np.mean(v)) if v else math.nan) for k, v in totals.items()}

    # ----- the update -----------------------------------------------------------------------------
    def apply(self, loss: torch.Tensor) -> bool:
        """One optimizer update with gradient clipping; False (and no update) for a non-finite loss."""
        self.optimizer.zero_grad(set_to_none=True)
        if not all_ranks_true(torch.isfinite(loss)):  # every rank skips together (one rank's NaN: all skip)
            self.skipped_batches += 1
            log.warning("step %d: non-finite loss, minibatch skipped", self.step_count)
            return False
        loss.backward()
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        average_gradients(params)  # several processes: the LoRA and value-head gradients of every rank's rollouts
        torch.nn.utils.clip_grad_norm_(params, self.config.max_grad_norm)
        self.optimizer.step()
        return True

    def timed(self, timings: dict, name: str, fn: Callable[[], object]) -> object:
        start = time.perf_counter()
        result = fn()
        if self.model.device.type == "cuda":  # GPU work is asynchronous: the phase ends when the GPU is done
            torch.cuda.synchronize(self.model.device)
        timings[f"{name}_s"] = time.perf_counter() - start
        return result

    # ----- saving and resuming --------------------------------------------------------------------
    def extra_state(self) -> dict:
        return {}

    def load_extra_state(self, state: dict, meta: dict) -> None:
        pass

    def save(self, path: str | Path, base_source: str) -> None:
        from hardcse.art.generator.model import save_generator

        path = Path(path)
        save_generator(self.model, base_source, path)
        torch.save({"optimizer": self.optimizer.state_dict(), **self.extra_state()}, path / f"{self.STATE_FILE}.pt")
        meta = {"algorithm": self.config.algorithm, "step": self.step_count, "skipped_batches": self.skipped_batches}
        (path / f"{self.STATE_FILE}.json").write_text(json.dumps(meta | self.extra_meta()))

    def extra_meta(self) -> dict:
        return {}

    def load_state(self, path: str | Path) -> None:
        """Restore what :meth:`save` wrote: optimizer, step count and the algorithm's own state."""
        path = Path(path)
        # on the CPU: the optimizer and the value head copy the tensors to their parameters' device
        state = torch.load(path / f"{self.STATE_FILE}.pt", weights_only=True, map_location="cpu")
        self.optimizer.load_state_dict(state["optimizer"])
        meta = json.loads((path / f"{self.STATE_FILE}.json").read_text())
        self.step_count = meta["step"]
        self.skipped_batches = meta["skipped_batches"]
        self.load_extra_state(state, meta)


def saved_state_exists(path: Path) -> bool:
    return (path / f"{PolicyTrainer.STATE_FILE}.json").is_file()
