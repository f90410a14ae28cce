"""PNG plots of ART's RL curves (PPO or GRPO)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from hardcse.data.jsonl import read_jsonl  # noqa: E402

RL_LOG = "rl_log.jsonl"  # one line per RL step, in the tuning work folder and the generator folder
RL_CURVES_PNG = "rl_curves.png"

RL_CURVES = [
    ("reward", "mean reward"),
    ("r1", "r1 (correctness)"),
    ("r2", "r2 (difficulty)"),
    ("parse_failure_rate", "parse-failure rate"),
    ("reward_format", "reward share of invalid penalties"),
    ("reward_parsed", "reward of parsed answers"),
    ("p_target", "P(target) of parsed answers"),
    ("kl", "KL to reference"),
    ("entropy", "entropy"),
    ("clipfrac", "clip fraction"),
    ("value_loss", "value loss (PPO)"),
    ("reward_std_in_group", "reward sd within a group (GRPO)"),
]


def plot_rl_log(log_path: str | Path, png_path: str | Path) -> Path:
    """A grid of the RL curves in ``rl_log.jsonl``, one panel per quantity (those logged), against the step."""
    rows = [r for r in read_jsonl(log_path) if not r.get("skipped")]
    curves = [(key, title) for key, title in RL_CURVES if any(r.get(key) is not None for r in rows)] or RL_CURVES[:1]
    rows_of_panels = math.ceil(len(curves) / 3)
    fig, axes = plt.subplots(rows_of_panels, 3, figsize=(13, 3 * rows_of_panels), squeeze=False)
    for ax in axes.flat[len(curves) :]:
        ax.set_visible(False)
    for ax, (key, title) in zip(axes.flat, curves, strict=False):  # one panel per curve, the rest hidden
        points = [(r["step"], r[key]) for r in rows if r.get(key) is not None and math.isfinite(r[key])]
        if points:
            ax.plot(*zip(*points, strict=True), marker=".")
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)
    plt.close(fig)
    return Path(png_path)
