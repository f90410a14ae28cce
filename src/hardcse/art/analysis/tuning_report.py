"""The generator-tuning part of an ART run's report: the reward, parse failures and KL at the start and the end of
each round's RL, what each term of the reward did, and the reward plot (total and by term)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from hardcse.art.log_keys import DUAL_KEYS  # noqa: E402
from hardcse.art.rl.rl_log import RL_LOG, term_names  # noqa: E402
from hardcse.data.jsonl import read_jsonl  # noqa: E402
from hardcse.figures import save_png  # noqa: E402

WINDOW = 5  # steps averaged at each end of a round's curve (at most half the steps)


def _fmt(x: float | None, digits: int = 3) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def _logs(rounds: list[Path]) -> list[tuple[str, list[dict]]]:
    """(round, its RL log's steps that were not skipped) for the rounds that tuned."""
    paths = [(d.name, d / "generator" / RL_LOG) for d in rounds]
    return [(name, [r for r in read_jsonl(path) if not r.get("skipped")]) for name, path in paths if path.is_file()]


def _mean(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return float(np.mean(values)) if values else None


def _ends(steps: list[dict]) -> tuple[int, list[dict], list[dict]]:
    """w and the first and the last w steps: w at most WINDOW and half the steps, so the two never overlap."""
    w = min(WINDOW, len(steps) // 2)
    return (w, steps[:w], steps[-w:]) if w else (0, [], [])


def reward_formula(reward: dict) -> str:
    """The reward of a saved config in one line: ``0.5 x r1 + 0.5 x r2 - 4.0 x copy (`file.py:fn`)``."""
    parts = list(zip((reward["w1"], reward["w2"]), DUAL_KEYS, strict=True)) if reward.get("dual", True) else []
    for term in reward.get("terms", []):
        parts.append((term["weight"], f"{term['name'] or term['fn'].rpartition(':')[2]} (`{term['fn']}`)"))
    text = " ".join(f"{'-' if w < 0 else '+'} {abs(w)} x {name}" for w, name in parts)
    return text.removeprefix("+ ")


def rl_markdown(rounds: list[Path], config: dict) -> str:
    """The tuning table, and the reward-terms table under it; "" when no round tuned."""
    rl = config["rl"]
    updates_per_step = -(-rl["batch_size"] // rl["minibatch_size"]) * rl["epochs"]
    lines = [
        "| round | steps (not skipped) | optimizer updates | window w | reward, first w | reward, last w "
        "| parse fail, first w | parse fail, last w | reward of parsed, first w | reward of parsed, last w "
        "| P(target) of parsed, first w | P(target) of parsed, last w | KL, last w |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    logs = _logs(rounds)
    for name, steps in logs:
        w, first, last = _ends(steps)
        cells = [name, str(len(steps)), str(len(steps) * updates_per_step), str(w or "too few steps")]
        for key in ("reward", "parse_failure_rate", "reward_parsed", "p_target"):
            cells += [_fmt(_mean(first, key)), _fmt(_mean(last, key))]
        cells.append(_fmt(_mean(last, "kl")))
        lines.append("| " + " | ".join(cells) + " |")
    if not logs:
        return ""
    return "\n".join(lines) + "\n\n" + _terms_table(logs)


def _terms_table(logs: list[tuple[str, list[dict]]]) -> str:
    """Per round and part of the reward (invalid penalties, each term): the term's mean over parsed answers, what
    it adds to the mean reward (weighted) and its share of the reward's size, first and last w steps."""
    lines = [
        "Reward by part: a term's mean over parsed answers (unweighted), what it adds to the mean reward (weight x "
        "sum over parsed / responses; the invalid penalties' part for format) and its share of the sum of the parts' "
        "sizes, over the first and the last w steps.",
        "",
        "| round | part | mean, first w | mean, last w | adds, first w | adds, last w | share, first w "
        "| share, last w |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, steps in logs:
        _, first, last = _ends(steps)
        for part in ("format", *term_names(steps)):
            mean_key = None if part == "format" else part
            cells = [name, part]
            for key in (mean_key, f"reward_{part}", f"share_{part}"):
                cells += [_fmt(_mean(first, key)), _fmt(_mean(last, key))] if key else ["", ""]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_reward_per_round(rounds: list[Path], path: Path) -> Path | None:
    """Left: the mean reward of each round's RL steps (and its WINDOW-step mean); right: what each part of the
    reward adds (format and every term, weighted), WINDOW-step means, one line style per round."""
    logs = _logs(rounds)
    if not logs:
        return None
    fig, (total, by_part) = plt.subplots(1, 2, figsize=(14, 4.5))
    styles = ["-", "--", ":", "-."]
    for k, (name, rows) in enumerate(logs):
        steps = [r["step"] for r in rows]
        reward = np.array([r["reward"] for r in rows])
        total.plot(steps, reward, alpha=0.35)
        smooth_steps, smooth = _smoothed(steps, reward)
        color = total.lines[-1].get_color()
        total.plot(smooth_steps, smooth, marker=".", label=f"{name} ({WINDOW}-step mean)", color=color)
        style = styles[k % len(styles)]
        for j, part in enumerate(("format", *term_names(rows))):
            values = np.array([r.get(f"reward_{part}", np.nan) for r in rows], dtype=float)
            smooth_steps, smooth = _smoothed(steps, values)
            by_part.plot(smooth_steps, smooth, style, marker=".", color=f"C{j}", label=part if k == 0 else None)
        if len(logs) > 1:  # the line style names the round
            by_part.plot([], [], style, color="black", label=name)
    total.set_ylabel("mean reward of the batch")
    total.set_title("Reward during generator tuning, per round")
    by_part.set_ylabel("adds to the mean reward")
    by_part.set_title(f"Reward by part (weighted; {WINDOW}-step means)")
    for ax in (total, by_part):
        ax.set_xlabel("RL step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return save_png(fig, path, dpi=100)


def _smoothed(steps: list[int], values: np.ndarray) -> tuple[list[int], np.ndarray]:
    window = min(WINDOW, len(values))
    if not window:
        return [], np.array([])
    return steps[window - 1 :], np.convolve(values, np.ones(window) / window, mode="valid")
