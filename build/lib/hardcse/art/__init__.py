"""ART: adaptive reinforcement tuning of a small LLM as a generator of hard positives and negatives."""
