"""How far float32 rounding alone may move a log-prob that is computed again over other rows.

A forward over other rows (another minibatch, another batch shape) runs kernels that block and order their sums
otherwise; AVX2, AVX-512 and AMX kernels differ again. Each sum of n terms rounds by at most about n * eps of the sum
of its terms' sizes (eps = 2^-23 in float32). Along the forward that makes one logit of a Llama decoder, the longest
chain of sums is, per layer, the attention's projections (hidden size, twice), its weighted sum over key positions
and the MLP's down projection (intermediate size), and then the LM head (hidden size). The log-softmax adds one sum
over the vocabulary. The bound below is that chain's length x eps x the largest log-prob's size: a heuristic, not a
proof (rounding grows with the terms' sizes and through the layers), sized for the tiny test models. It is far above
what the kernels do there (1e-8 seen on an AVX2 EPYC) and far below what one update moves (the tests' learning rates
move log-probs by 1e-2 and more). For a large model it would be loose (benchmarks/results/old_logprob_batches.md
gives 3e-5 nats for the bundled 135M model): :func:`float32_recompute_tolerance` refuses a bound of 1e-3 or more.
"""

from __future__ import annotations

import torch


def float32_recompute_tolerance(model: torch.nn.Module, largest_logprob: float) -> float:
    """The bound for ``model`` (a causal LM, or a PEFT model around one) over as many positions as it takes."""
    config = model.get_base_model().config if hasattr(model, "get_base_model") else model.config
    per_layer = 2 * config.hidden_size + config.max_position_embeddings + config.intermediate_size
    chain = config.num_hidden_layers * per_layer + config.hidden_size + config.vocab_size
    bound = chain * torch.finfo(torch.float32).eps * max(1.0, abs(largest_logprob))
    assert bound < 1e-3, f"a bound of {bound:.2g} nats would let real changes pass: for the tiny test models only"
    return bound
