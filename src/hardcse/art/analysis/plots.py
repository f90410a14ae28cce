"""PNG plots of ART's RL curves (PPO or GRPO)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from hardcse.data.jsonl import read_jsonl  # noqa: E402

RL_LOG = "rl_log.jsonl"  # one line per RL step, in the tuning work folder and the generator folder
COMPLETIONS = "completions.jsonl"  # sampled rollouts with each term's value, every save_every steps, beside it
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


def term_names(rows: list[dict]) -> list[str]:
    """The reward's terms an RL log holds (each logs share_NAME; a log from before terms, r1 and r2), in the
    reward's order: r1, r2, the config's."""
    dual = [name for name in ("r1", "r2") if any(f"reward_{name}" in r for r in rows)]
    names = dict.fromkeys([*dual, *(k.removeprefix("share_") for r in rows for k in r if k.startswith("share_"))])
    names.pop("format", None)
    return list(names)


def plot_rl_log(log_path: str | Path, png_path: str | Path) -> Path:
    """A grid of the RL curves in ``rl_log.jsonl``, one panel per quantity (those logged) against the step: the
    reward, what each part of it adds (the invalid penalties and every term, weighted), each term of the config
    (r1 and r2 have their own), and the RL's own numbers."""
    rows = [r for r in read_jsonl(log_path) if not r.get("skipped")]
    names = term_names(rows)
    panels = [(title, [key]) for key, title in RL_CURVES]
    panels[1:1] = [("reward by part (weighted)", ["reward_format", *(f"reward_{n}" for n in names)])] if names else []
    at = next(i for i, (_, keys) in enumerate(panels) if keys == ["parse_failure_rate"])
    panels[at:at] = [(f"{n} (term, mean over parsed)", [n]) for n in names if n not in ("r1", "r2")]
    panels = [(t, keys) for t, keys in panels if any(r.get(k) is not None for r in rows for k in keys)] or panels[:1]
    rows_of_panels = math.ceil(len(panels) / 3)
    fig, axes = plt.subplots(rows_of_panels, 3, figsize=(13, 3 * rows_of_panels), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax, (title, keys) in zip(axes.flat, panels, strict=False):  # one panel per quantity, the rest hidden
        for key in keys:
            points = [(r["step"], r[key]) for r in rows if r.get(key) is not None and math.isfinite(r[key])]
            if points:
                ax.plot(*zip(*points, strict=True), marker=".", label=key.removeprefix("reward_"))
        if len(keys) > 1:
            ax.legend(fontsize=7)
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)
    plt.close(fig)
    return Path(png_path)
