"""Models and groups of seeds side by side: mean ± sd per STS column, and the paired bootstrap interval of each
asked-for difference (``hardcse compare``, the method benchmarks, ``art compare``).

A difference is called a finding only when its 95% interval excludes zero; otherwise the words are "no
detectable difference" (see :func:`verdict`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hardcse.data.sts import DEV_TASK, SEVEN_TASKS
from hardcse.errors import HardcseError
from hardcse.evaluation.paired import RESAMPLES, STSBootstrap, group_difference
from hardcse.evaluation.results import Result
from hardcse.stats import SEED, Interval

COLUMNS = [*SEVEN_TASKS, "avg7", DEV_TASK]


@dataclass
class Comparison:
    groups: dict[str, list[Result]]
    pairs: list[tuple[str, str]]  # (A, B): B - A is reported
    differences: dict[tuple[str, str], dict[str, Interval]]
    resamples: int
    seed: int
    columns: list[str] = field(default_factory=list)

    def summary(self, name: str, column: str) -> tuple[float, float, int] | None:
        """(mean, sd, n) of a group's scores in ``column``; sd 0 for a single run; None if a member lacks it."""
        values = [_score(m.record, column) for m in self.groups[name]]
        if any(v is None for v in values):
            return None
        sd = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
        return float(np.mean(values)), sd, len(values)


def _score(record: Mapping, column: str) -> float | None:
    return record.get("avg7") if column == "avg7" else record.get("scores", {}).get(column)


def compare_groups(
    groups: Mapping[str, Sequence[Result]],
    pairs: Sequence[tuple[str, str]],
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> Comparison:
    """The paired bootstrap of every (A, B) in ``pairs`` (group names), through one set of test-pair resamples
    shared by all models, so every difference in a table uses the same resamples."""
    groups = {name: list(members) for name, members in groups.items()}
    for name, members in groups.items():
        if not members:
            raise HardcseError(f"{name}: no evaluated run in this group")
    for pair in pairs:
        for name in pair:
            if name not in groups:
                raise HardcseError(f"no group named {name!r}; groups: {', '.join(groups)}")
    # each member by (group, place in it): the draws below are memoised by what names them, not by object identity
    involved = list(dict.fromkeys(name for pair in pairs for name in pair))
    records = {(name, i): r for name in involved for i, r in enumerate(groups[name])}
    tasks = [t for t in [*SEVEN_TASKS, DEV_TASK] if all(t in r.record.get("cosines", {}) for r in records.values())]
    differences = {}
    if pairs:
        if not tasks:
            raise HardcseError("no STS task has per-pair cosines in every compared eval.json; evaluate them again")
        boot = STSBootstrap(tasks, resamples, seed)
        draws = {key: boot.draws(r.record, r.label) for key, r in records.items()}
        for a, b in pairs:
            ga, gb = groups[a], groups[b]
            seeds = [r.seed for r in ga], [r.seed for r in gb]
            clustered = any(r.cluster is not None for r in [*ga, *gb])
            clusters = ([r.cluster for r in ga], [r.cluster for r in gb]) if clustered else (None, None)
            side_a, side_b = ([draws[(name, i)] for i in range(len(groups[name]))] for name in (a, b))
            differences[(a, b)] = group_difference(side_a, side_b, boot, *seeds, *clusters)
    present = [c for c in COLUMNS if any(_score(m.record, c) is not None for ms in groups.values() for m in ms)]
    return Comparison(groups, list(pairs), differences, resamples, seed, present)


def verdict(interval: Interval, digits: int = 2) -> str:
    """'higher by X [low, high]', 'lower by ...' or 'no detectable difference (X [low, high])'."""
    text = interval.signed(digits)
    if not interval.excludes_zero():
        return f"no detectable difference ({text})"
    return f"{'higher' if interval.estimate > 0 else 'lower'} by {abs(interval.estimate):.{digits}f} ({text})"


def _cell(summary: tuple[float, float, int] | None) -> str:
    if summary is None:
        return ""
    mean, sd, n = summary
    return f"{mean:.2f} ± {sd:.2f}" if n > 1 else f"{mean:.2f}"


def interval_cell(interval: Interval | None, digits: int = 2) -> str:
    """A table cell: the difference with its interval, * when the interval excludes zero."""
    if interval is None:
        return ""
    return interval.signed(digits) + (" *" if interval.excludes_zero() else "")


def comparison_markdown(c: Comparison) -> str:
    """The scores table (mean ± sd over seeds, n) and the table of differences with their intervals."""
    lines = ["| model | n | seeds | " + " | ".join(c.columns) + " |", "|---|---:|---|" + "---:|" * len(c.columns)]
    for name, members in c.groups.items():
        seeds = ", ".join(str(m.seed) for m in members) if any(m.seed is not None for m in members) else ""
        cells = [_cell(c.summary(name, col)) for col in c.columns]
        lines.append(f"| {name} | {len(members)} | {seeds} | " + " | ".join(cells) + " |")
    if not c.pairs:
        return "\n".join(lines)
    columns = [col for col in c.columns if any(col in d for d in c.differences.values())]
    lines += ["", "| B - A | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for (a, b), diff in c.differences.items():
        lines.append(f"| {b} − {a} | " + " | ".join(interval_cell(diff.get(col)) for col in columns) + " |")
    lines += [
        "",
        f"B − A: difference of the group means with its 95% paired bootstrap interval ({c.resamples:,} resamples of "
        f"the test pairs within each task, seed {c.seed}; a group's seeds are resampled too, paired by seed when "
        "both sides ran the same seeds"
        + (
            "; members in clusters are drawn by whole cluster and the interval is widened for few clusters: "
            "hardcse/evaluation/paired.py"
            if any(m.cluster is not None for members in c.groups.values() for m in members)
            else ""
        )
        + "); * the interval excludes zero.",
        "",
    ]
    average = "avg7" if "avg7" in columns else None
    for (a, b), diff in c.differences.items():
        if average:
            lines.append(f"- {b} against {a}, avg7: {verdict(diff[average])}.")
    return "\n".join(lines)


def comparison_json(c: Comparison) -> dict:
    return {
        "groups": {
            name: {
                "members": [m.label for m in members],
                "seeds": [m.seed for m in members],
                "scores": {
                    col: dict(zip(("mean", "sd", "n"), s, strict=True))
                    for col in c.columns
                    if (s := c.summary(name, col)) is not None
                },
            }
            for name, members in c.groups.items()
        },
        "differences": [
            {"a": a, "b": b, "b_minus_a": {col: i.to_dict() for col, i in diff.items()}}
            for (a, b), diff in c.differences.items()
        ],
        "resamples": c.resamples,
        "bootstrap_seed": c.seed,
    }


def plot_comparison(c: Comparison, path: str | Path) -> Path:
    """One panel per column (avg7 and STS-B dev first): each difference as a point with its 95% interval."""
    import matplotlib

    from hardcse.figures import save_png

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    order = [col for col in ["avg7", DEV_TASK, *SEVEN_TASKS] if any(col in d for d in c.differences.values())]
    labels = [f"{b} − {a}" for a, b in c.differences]
    cols = 3
    rows = -(-len(order) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 0.6 + rows * (1.0 + 0.3 * len(labels))), squeeze=False)
    for ax, column in zip(axes.flat, order, strict=False):
        y = np.arange(len(labels))[::-1]
        for yi, diff in zip(y, c.differences.values(), strict=True):
            interval = diff.get(column)
            if interval is None:
                continue
            color = "tab:blue" if interval.excludes_zero() else "tab:gray"
            err = [[interval.estimate - interval.low], [interval.high - interval.estimate]]
            ax.errorbar(interval.estimate, yi, xerr=err, fmt="o", color=color, capsize=3, markersize=4)
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_yticks(y, labels if ax.get_subplotspec().is_first_col() else [""] * len(labels), fontsize=7)
        ax.set_title(column, fontsize=9)
        ax.tick_params(axis="x", labelsize=7)
    for ax in list(axes.flat)[len(order) :]:
        ax.set_visible(False)
    fig.suptitle("B − A, Spearman x 100, 95% paired bootstrap interval (blue: excludes zero)", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return save_png(fig, path, dpi=120)


def write_comparison(
    c: Comparison,
    stem: str | Path,
    title: str,
    command: str,
    extra: Sequence[str] = (),
    machine: object = None,
) -> str:
    """``STEM.md`` (title, command, both tables, ``extra`` lines), ``STEM.json`` and ``STEM.png`` (when there are
    differences); returns the Markdown. ``machine``: where the compared scores were computed (a machine record,
    or several), kept in the JSON when given."""
    from hardcse.atomic import write_text_atomic

    stem = Path(stem)
    parts = [f"# {title}", "", f"`{command}`", "", comparison_markdown(c)]
    if c.differences:
        parts += ["", f"Intervals: `{stem.name}.png`."]
        plot_comparison(c, stem.with_suffix(".png"))
    if extra:
        parts += ["", *extra]
    markdown = "\n".join(parts) + "\n"
    made = {"command": command} | ({"machine": machine} if machine is not None else {})
    write_text_atomic(stem.with_suffix(".json"), json.dumps(comparison_json(c) | made, indent=2))
    write_text_atomic(stem.with_suffix(".md"), markdown)
    return markdown
