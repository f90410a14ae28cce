"""PNG plots of ART's PPO curves."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from hardcse.data.jsonl import read_jsonl  # noqa: E402

PPO_CURVES = [
    ("reward", "mean reward"),
    ("r1", "r1 (correctness)"),
    ("r2", "r2 (difficulty)"),
    ("parse_failure_rate", "parse-failure rate"),
    ("kl", "KL to reference"),
    ("entropy", "entropy"),
    ("clipfrac", "clip fraction"),
    ("value_loss", "value loss"),
]


def plot_ppo_log(log_path: str | Path, png_path: str | Path) -> Path:
    """A grid of the PPO curves in ``ppo_log.jsonl``, one panel per quantity, against the step."""
    rows = [r for r in read_jsonl(log_path) if not r.get("skipped")]
    fig, axes = plt.subplots(2, 4, figsize=(16, 6.5))
    for ax, (key, title) in zip(axes.flat, PPO_CURVES, strict=True):
        points = [(r["step"], r[key]) for r in rows if r.get(key) is not None and math.isfinite(r[key])]
        if points:
            ax.plot(*zip(*points, strict=True), marker=".")
        ax.set_title(title)
        ax.set_xlabel("PPO step")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)
    plt.close(fig)
    return Path(png_path)
