"""The NLI discriminator of ART: a 3-way cross-encoder that judges whether a generated sentence is correct."""
