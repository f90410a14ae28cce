"""A tuning's RL log: its files, the run's trackers, and its curves (PPO or GRPO).

In the tuning's work folder: ``rl_log.jsonl`` (one line per step), ``completions.jsonl`` (a seeded draw of the step's
rollouts with each term's value, every ``save_every`` steps) and, at the end, ``rl_curves.png``; the tuned
generator folder gets a copy of all three. Rank 0 writes them.
"""

from __future__ import annotations

import logging
import math
import shutil
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from hardcse.art.log_keys import DUAL_KEYS, DUAL_PARTS  # noqa: E402
from hardcse.atomic import write_text_atomic  # noqa: E402
from hardcse.data.jsonl import append_jsonl, jsonl_text, read_jsonl, read_jsonl_log  # noqa: E402
from hardcse.distributed import is_main  # noqa: E402
from hardcse.figures import save_png  # noqa: E402
from hardcse.tracking.run import Tracking  # noqa: E402

log = logging.getLogger(__name__)

RL_LOG = "rl_log.jsonl"
COMPLETIONS = "completions.jsonl"
RL_CURVES_PNG = "rl_curves.png"


class RLLog:
    """The RL log of the tuning in ``work_dir``, and the run's trackers (if it reports to any) under its job name."""

    def __init__(self, work_dir: Path, tracking: Tracking) -> None:
        self.dir = work_dir
        self.tracking = tracking
        self.job = self.tracking.job(work_dir)

    def restart(self, resumed_at: int | None) -> None:
        """A resumed tuning (``resumed_at``: its checkpoint's step) redoes the steps logged after its checkpoint;
        a new one starts empty (rank 0 calls this)."""
        for name in (RL_LOG, COMPLETIONS):
            if resumed_at is None:
                (self.dir / name).unlink(missing_ok=True)
            else:
                _trim(self.dir / name, resumed_at)

    def step(self, stats: dict, step: int) -> None:
        if is_main():
            with (self.dir / RL_LOG).open("a", encoding="utf-8") as fh:
                append_jsonl(fh, stats)
            self.tracking.metrics(stats, step, prefix=self.job, job=self.job)

    def completions(self, rows: list[dict], step: int) -> None:
        if is_main():
            with (self.dir / COMPLETIONS).open("a", encoding="utf-8") as fh:
                for row in rows:
                    append_jsonl(fh, row)
            self.tracking.table(f"{self.job}/completions", rows, step, job=self.job)

    def report_kept(self, generator_dir: Path) -> None:
        """A kept tuned generator's RL log and completions to the trackers, as if its steps had run here."""
        if not is_main() or not self.tracking:
            return
        for row in read_jsonl(generator_dir / RL_LOG):
            self.tracking.metrics(row, row["step"], prefix=self.job, job=self.job)
        completions = read_jsonl(generator_dir / COMPLETIONS) if (generator_dir / COMPLETIONS).is_file() else []
        for step in sorted({row["step"] for row in completions}):
            rows = [row for row in completions if row["step"] == step]
            self.tracking.table(f"{self.job}/completions", rows, step, job=self.job)

    def finish(self, checkpoint: Path, final: Path) -> None:
        """The curves, then the last checkpoint with the log and curves as the tuned generator ``final``."""
        plot_rl_log(self.dir / RL_LOG, self.dir / RL_CURVES_PNG)
        shutil.rmtree(final, ignore_errors=True)
        shutil.copytree(checkpoint, final)
        for name in (RL_LOG, RL_CURVES_PNG, COMPLETIONS):
            if (self.dir / name).is_file():  # completions.jsonl: absent with rl.log_completions 0
                shutil.copy2(self.dir / name, final / name)


def _trim(log_path: Path, step_count: int) -> None:
    """Steps logged after the checkpoint are redone; a torn last line (killed mid-write) is dropped."""
    if not log_path.is_file():
        return
    logged, torn = read_jsonl_log(log_path)
    kept = [row for row in logged if row["step"] <= step_count]
    write_text_atomic(log_path, jsonl_text(kept))
    log.info(
        "%s: resuming after step %d (dropped %d line(s) after the checkpoint, %d torn line(s))",
        log_path.name,
        step_count,
        len(logged) - len(kept),
        torn,
    )


RL_CURVES = [
    ("reward", "mean reward"),
    *((part.key, f"{part.key} ({part.label})") for part in DUAL_PARTS),
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
    dual = [name for name in DUAL_KEYS if any(f"reward_{name}" in r for r in rows)]
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
    panels[at:at] = [(f"{n} (term, mean over parsed)", [n]) for n in names if n not in DUAL_KEYS]
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
    return save_png(fig, png_path, dpi=100)
