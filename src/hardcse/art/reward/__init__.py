"""ART's reward: the paper's dual reward r = w1*r1 + w2*r2 (dual.py) and the terms a config adds (terms.py)."""
