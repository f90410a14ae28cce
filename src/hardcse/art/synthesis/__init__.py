"""ART's data: anchors, synthesis of positives and negatives, mined negatives, and the NLI filter."""
