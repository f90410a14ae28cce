"""The generator: prompts, batched sampling from a causal LM (+ LoRA), parsing of its responses."""
