"""ART's RL update as one loop, read top to bottom (the shape of CleanRL's ``ppo.py``).

:meth:`RLTrainer.step`: sample one response per row -> score it -> log pi_ref, then log pi_old (and V_old) ->
advantages -> K epochs of minibatch losses, each followed by ``optimizer.step()``. The maths, and all that differs
between PPO and GRPO, is in :mod:`hardcse.art.rl.ppo` and :mod:`hardcse.art.rl.grpo` (the
:class:`~hardcse.art.rl.algorithm.Algorithm` each is): a value head or none, the advantages, the losses and the
numbers logged after the update. The caller lays out the rows (hardcse/art/rl/tuning.py ``step_prompts``: GRPO
writes each prompt G times, group after group, ``RLConfig.rows_per_prompt``); the minibatches keep a group's rows
together.

The policy is the LM with a LoRA adapter, the reference the same LM with the adapter disabled (``rl.reference:
base``) or with the adapter of a generator folder (the warm start: :meth:`RLTrainer.reference_policy`). Every
forward runs in eval mode with dropout off (TRL does the same), so sampling in PyTorch and training compute one
policy (in bfloat16 on a CPU the trainer's forwards attend eagerly, sampling by SDPA: the same maths, rounded
apart). log pi_old comes from the forwards of the first epoch's minibatches, whoever sampled the rows (the policy,
or OpenVINO: :mod:`hardcse.art.rl.rollouts`). Which numbers are exact: the first update differentiates the very
forward that gave its minibatch's log pi_old, so its ratio pi / pi_old is exactly 1 by construction, in any
precision. Every later minibatch computes log pi again. Over the rows and shapes pi_old's forward took (the first
epoch's other minibatches, their prompt prefixes computed afresh; GRPO's whole groups in every epoch) a machine runs
the same sums and in practice gives the same bits, though nothing guarantees it. Over other rows (PPO's later
epochs) the ratio before an update is 1 to rounding only, since kernels block their sums by the batch's shape and
the CPU's instruction set (float32: about 1e-8 nats on the tiny test model; bfloat16: up to 0.49 nats,
benchmarks/results/old_logprob_batches.md). log pi_ref comes from the same forwards as log pi_old with the
reference's weights, so KL_t is exactly 0 where the policy is the reference. log pi_old's forwards compute a
minibatch's prompt prefixes once a step where minibatches repeat them (PPO's two kinds), as do log pi_ref's. Only
the generated positions go through the LM head. Under several processes each rank samples and optimises its own
rollouts and every update averages the gradients. With ``rl.gradient_checkpointing`` the forwards that build a graph
run the decoder in train mode (dropout is off, so the numbers are eval mode's), which is when transformers
checkpoints its layers.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
from peft import PeftModel
from torch import nn

from hardcse.art.config import GeneratorConfig
from hardcse.art.generator.model import save_generator
from hardcse.art.generator.prefix import PrefixCaches
from hardcse.art.generator.sampling import Samples, decoder_and_head
from hardcse.art.rl.algorithm import Algorithm, PolicyOutputs, Rollout
from hardcse.art.rl.config import RLConfig
from hardcse.art.rl.forward import continue_rows, whole_rows
from hardcse.art.rl.grpo import GRPO
from hardcse.art.rl.ppo import PPO
from hardcse.art.rl.rollouts import Sampler, rollout_sampler
from hardcse.distributed import all_ranks_true, average_gradients, world_size

log = logging.getLogger(__name__)

# (texts of the responses, cut off at their token budget?) -> (scores, numbers to log); the caller's closure knows
# the batch's anchors and kinds
RewardFn = Callable[[list[str], list[bool]], tuple[np.ndarray, dict]]

STATE_FILE = "rl_state"  # a checkpoint's rl_state.pt (optimizer, the algorithm's tensors) and rl_state.json
ALGORITHMS: dict[str, type[Algorithm]] = {"ppo": PPO, "grpo": GRPO}  # by the config key rl.algorithm


class RLTrainer:
    """The LoRA policy, the algorithm's part (PPO or GRPO), one AdamW over both, and the step count. ``sampler``
    writes the rollouts (:mod:`hardcse.art.rl.rollouts`; default: the policy itself, in PyTorch)."""

    def __init__(
        self,
        model: PeftModel,
        tokenizer: object,
        generation: GeneratorConfig,
        config: RLConfig,
        sampler: Sampler | None = None,
        reference_adapter: dict[str, torch.Tensor] | None = None,
    ) -> None:
        self.model, self.tokenizer, self.generation, self.config = model, tokenizer, generation, config
        # the KL's reference: these adapter weights (a state dict as PEFT saves it), or None: the adapter disabled
        self.reference_adapter = reference_adapter
        self.sample = sampler or rollout_sampler("torch", model, tokenizer, generation)
        hidden_size = model.get_base_model().config.hidden_size
        self.algorithm = ALGORITHMS[config.algorithm](config, hidden_size, model.device)
        disable_dropout(model)
        model.eval()
        if config.gradient_checkpointing:
            enable_checkpointing(model)
        params = [p for p in model.parameters() if p.requires_grad] + self.algorithm.parameters()
        self.optimizer = torch.optim.AdamW(params, lr=config.learning_rate)
        self.step_count = 0
        self.skipped_batches = 0

    def step(
        self,
        prompts: Sequence[str],
        groups: Sequence[Hashable],
        score: RewardFn,
        limits: Sequence[int] | None = None,
    ) -> dict:
        """One RL step on ``prompts``, one row each (``groups``: rows that share a prompt prefix; ``limits``: each
        row's new-token budget); returns the numbers to log (a skipped batch says so). The caller seeds torch's
        generator for the sampling; the minibatches draw from their own (:meth:`minibatches`)."""
        timings: dict[str, float] = {}
        # 1. Rollout: one response per row from the current policy, scored by the reward
        with self.timer(timings, "generation"):
            samples = self.sample(prompts, groups, limits)
        with self.timer(timings, "scoring"):
            scores, reward_stats = score(samples.texts, samples.truncated)
        partitions = self.minibatches(len(samples.texts))  # each epoch's minibatches (rows), seeded by the step

        # 2. log pi_ref: the forwards of step 3 under the reference (the adapter disabled, or the reference's
        # weights in it); first, since a reference adapter is copied into the policy's weights and back, which must
        # happen before step 3 keeps a graph over them
        with self.timer(timings, "reference"):
            ref_logprobs = self.reference_logprobs(samples, partitions[0])
        # 3. log pi_old (and V_old) by the forward the first epoch's updates run, over the same rows: the ratio
        # pi / pi_old starts at exactly 1. The first minibatch's outputs keep their graph for step 5. Not one forward
        # over all rows: in bfloat16 other rows around a row move its log-probs by 0.04 nats on average (up to 0.5;
        # benchmarks/results/old_logprob_batches.md), noise in the ratio that the policy did not make.
        with self.timer(timings, "policy_forward"):
            old_logprobs, old_values, first_outputs = self.old_policy(samples, partitions[0])
        scores_t = torch.as_tensor(np.asarray(scores, dtype=np.float32), device=samples.response_mask.device)
        rollout = Rollout(samples, scores_t, old_logprobs, old_values, ref_logprobs)

        # 4. Advantages (PPO: KL-shaped rewards and GAE; GRPO: scores standardised within each group)
        rollout.advantages, rollout.extra = self.algorithm.advantages(rollout)
        self.step_count += 1  # a skipped batch is a step too (its seeds are spent)
        stats: dict = {"step": self.step_count, **reward_stats}
        tensors = (rollout.scores, rollout.old_logprobs, rollout.ref_logprobs, rollout.advantages)
        if not all_ranks_true(all(torch.isfinite(t).all() for t in tensors)):
            self.skipped_batches += 1
            log.warning("step %d: non-finite rollout values, batch skipped", self.step_count)
            return {**stats, **timings, "skipped": True, "skipped_batches": self.skipped_batches}

        # 5. K epochs of minibatch updates
        logged: dict[str, list[float]] = {key: [] for key in self.algorithm.log_keys}
        with self.timer(timings, "optimisation"):
            for epoch, minibatches in enumerate(partitions):
                for i, rows in enumerate(minibatches):
                    # the first update's forward is step 2's (nothing has changed since): one forward saved a step
                    first = (epoch, i) == (0, 0)
                    outputs = first_outputs if first else self.policy_outputs(samples.select(rows))
                    losses = self.algorithm.losses(rollout, rows, outputs)
                    if self.update(losses["loss"]):
                        for key in logged:
                            logged[key].append(float(losses[key].detach()))
        stats |= {key: float(np.mean(v)) if v else math.nan for key, v in logged.items()}
        # 6. After the update: PPO's KL controller moves beta; both log their KL
        stats |= self.algorithm.after_update(rollout, len(prompts) * world_size())

        mask = samples.response_mask
        return stats | {
            "score": float(rollout.scores.mean()),
            "response_tokens": float(mask.sum(dim=1).mean()),
            "truncated": float(np.mean(samples.truncated)),
            "skipped": False,
            "skipped_batches": self.skipped_batches,
            **timings,
        }

    def update(self, loss: torch.Tensor) -> bool:
        """One optimizer step with gradient clipping; False (and no step) for a non-finite loss."""
        self.optimizer.zero_grad(set_to_none=True)
        if not all_ranks_true(torch.isfinite(loss)):  # every rank skips together (one rank's NaN: all skip)
            self.skipped_batches += 1
            log.warning("step %d: non-finite loss, minibatch skipped", self.step_count)
            return False
        loss.backward()
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        average_gradients(params)  # several processes: the gradients of every rank's rollouts
        torch.nn.utils.clip_grad_norm_(params, self.config.max_grad_norm)
        self.optimizer.step()
        return True

    # ----- the forwards ------------------------------------------------------------------------------------------
    def forward(
        self, samples: Samples, prefixes: PrefixCaches | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(log-probs, entropies, hidden states) at the response positions, (B, T) / (B, T, H), under the
        sampling distribution softmax(logits / temperature). ``prefixes``: the prompt prefixes' caches that forwards
        of the same, unchanged policy share (:func:`hardcse.art.generator.prefix.prefix_cache`)."""
        decoder, head = decoder_and_head(self.model)
        with self.training_attention():
            hidden = self.response_states(decoder, samples, prefixes)
        # the LM head only where a response token is (a 49k-word head is a third of a forward), on a 2-d input:
        # a 3-d one makes torch broadcast-copy the head's weight once per row
        valid = samples.response_mask.bool()
        logp_all = (head(hidden[valid]).float() / self.generation.sampling_temperature).log_softmax(-1)
        logprobs = torch.zeros(valid.shape, dtype=logp_all.dtype, device=logp_all.device)
        entropy = torch.zeros(valid.shape, dtype=logp_all.dtype, device=logp_all.device)
        logprobs[valid] = torch.gather(logp_all, 1, samples.response_ids[valid].unsqueeze(-1)).squeeze(-1)
        entropy[valid] = -(logp_all.exp() * logp_all).sum(-1)
        return logprobs, entropy, hidden

    def response_states(self, decoder: nn.Module, samples: Samples, prefixes: PrefixCaches | None) -> torch.Tensor:
        """The decoder's last-layer states that predict each response token, (B, T, H)."""
        if not self.config.gradient_checkpointing:
            return continue_rows(decoder, samples.prompts, samples.response_ids, samples.response_mask, prefixes)
        # every forward over whole prompts, not only the checkpointed ones: pi_old and pi are the same sums
        decoder.train(torch.is_grad_enabled())
        try:
            return whole_rows(decoder, samples.prompts, samples.response_ids, samples.response_mask)
        finally:
            decoder.train(False)

    @contextmanager
    def training_attention(self) -> Iterator[None]:
        """The trainer's forwards (pi_old, pi_ref and pi alike) in transformers' eager attention where the LM runs
        in bfloat16 on a CPU: there PyTorch's SDPA (a flash kernel) takes about twice as long over a forward and
        backward at RL's shapes (~50 query x ~150 key positions; benchmarks/results/rl_training_forwards.md).
        Sampling keeps the model's own attention; in float32, on a GPU and under gradient checkpointing (its
        backward recomputes the layers after this context has ended), SDPA stays."""
        base = self.model.get_base_model()
        if self.model.device.type != "cpu" or base.dtype != torch.bfloat16 or self.config.gradient_checkpointing:
            yield
            return
        previous = base.config._attn_implementation
        base.set_attn_implementation("eager")
        try:
            yield
        finally:
            base.set_attn_implementation(previous)

    def policy_outputs(self, samples: Samples, prefixes: PrefixCaches | None = None) -> PolicyOutputs:
        logprobs, entropy, hidden = self.forward(samples, prefixes)
        return PolicyOutputs(logprobs, entropy, self.algorithm.values(hidden))

    def old_policy(
        self, samples: Samples, minibatches: list[torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor | None, PolicyOutputs]:
        """(log pi_old, V_old or None, the first minibatch's outputs) over ``minibatches``. Only the first forward
        builds a graph: it is also the first update's forward (step 5). Minibatches that continue the same prefixes
        share their cache, computed by the first forward that needs it (the policy does not change until step 5)."""
        mask = samples.response_mask
        logprobs, values, first, prefixes = torch.zeros_like(mask), torch.zeros_like(mask), None, {}
        for i, rows in enumerate(minibatches):
            with torch.set_grad_enabled(i == 0):
                outputs = self.policy_outputs(samples.select(rows), prefixes)
            first = outputs if i == 0 else first
            logprobs[rows] = outputs.logprobs.detach()
            if outputs.values is not None:
                values[rows] = outputs.values.detach()
        return logprobs, (values * mask if first.values is not None else None), first

    @torch.no_grad()
    def reference_logprobs(self, samples: Samples, minibatches: list[torch.Tensor]) -> torch.Tensor:
        """log pi_ref (the adapter disabled) by the forwards log pi_old takes, one a minibatch of ``minibatches``:
        where the policy is the reference, KL_t is exactly 0 (one forward over all rows rounds otherwise in
        bfloat16, step 2). Minibatches that continue the same prefixes share their cache."""
        logprobs, prefixes = torch.zeros_like(samples.response_mask), {}
        with self.reference_policy():
            for rows in minibatches:
                logprobs[rows] = self.forward(samples.select(rows), prefixes)[0]
        return logprobs

    @contextmanager
    def reference_policy(self) -> Iterator[None]:
        """The model as the reference policy for the block: the adapter disabled, or the reference adapter's
        weights copied into the policy's adapter and the policy's own copied back after (in place: the optimizer
        keeps its parameters). Where the policy's weights are the reference's, the forwards are the same sums."""
        if self.reference_adapter is None:
            with self.model.disable_adapter():
                yield
            return
        from peft import get_peft_model_state_dict, set_peft_model_state_dict

        own = {name: value.detach().clone() for name, value in get_peft_model_state_dict(self.model).items()}
        set_peft_model_state_dict(self.model, self.reference_adapter)
        try:
            yield
        finally:
            set_peft_model_state_dict(self.model, own)

    def minibatches(self, n: int) -> list[list[torch.Tensor]]:
        """The row partition of each optimisation epoch of this step, drawn before the step counts itself (seed +
        the steps done): a resumed step repeats it. Rows of one prompt stay together (few prefixes per minibatch)."""
        generator = torch.Generator().manual_seed(self.config.seed + self.step_count)
        unit = self.config.minibatch_unit

        def shuffled_rows() -> torch.Tensor:
            units = torch.randperm(n // unit, generator=generator)
            return (units.unsqueeze(1) * unit + torch.arange(unit)).flatten()

        device = self.model.device  # drawn on the CPU (the seeded generator), used where the rollout lives
        return [list(shuffled_rows().to(device).split(self.config.minibatch_size)) for _ in range(self.config.epochs)]

    @contextmanager
    def timer(self, timings: dict[str, float], name: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        if self.model.device.type == "cuda":  # GPU work is asynchronous: the phase ends when the GPU is done
            torch.cuda.synchronize(self.model.device)
        timings[f"{name}_s"] = time.perf_counter() - start

    # ----- saving and resuming -----------------------------------------------------------------------------------
    def save(self, path: str | Path, base_source: str) -> None:
        """The adapter (a generator folder), the optimizer and the algorithm's state, the step count."""
        path = Path(path)
        save_generator(self.model, base_source, path)
        torch.save({"optimizer": self.optimizer.state_dict(), **self.algorithm.state_dict()}, path / f"{STATE_FILE}.pt")
        meta = {"algorithm": self.config.algorithm, "step": self.step_count, "skipped_batches": self.skipped_batches}
        (path / f"{STATE_FILE}.json").write_text(json.dumps(meta | self.algorithm.meta()))

    def load_state(self, path: str | Path) -> None:
        """Restore what :meth:`save` wrote (the adapter is loaded with the model)."""
        path = Path(path)
        # on the CPU: the optimizer and the value head copy the tensors to their parameters' device
        state = torch.load(path / f"{STATE_FILE}.pt", weights_only=True, map_location="cpu")
        self.optimizer.load_state_dict(state["optimizer"])
        meta = json.loads((path / f"{STATE_FILE}.json").read_text())
        self.step_count = meta["step"]
        self.skipped_batches = meta["skipped_batches"]
        self.algorithm.load_state(state, meta)


def saved_state_exists(path: Path) -> bool:
    return (path / f"{STATE_FILE}.json").is_file()


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
