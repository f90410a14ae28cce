"""Markdown tables of results: STS scores by model, NLI metrics by evaluation set."""

from __future__ import annotations

from collections.abc import Mapping

from hardcse.data.nli import LABELS
from hardcse.data.sts import DEV_TASK, SEVEN_TASKS


def sts_table_markdown(rows: Mapping[str, Mapping[str, float]]) -> str:
    """One row per model: the seven STS tasks, their average, STS-B dev, then any other task (Spearman x 100)."""
    known = [*SEVEN_TASKS, "avg7", DEV_TASK]
    others = list(dict.fromkeys(t for scores in rows.values() for t in scores if t not in known))
    columns = [t for t in known + others if any(scores.get(t) is not None for scores in rows.values())]
    lines = ["| model | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for name, scores in rows.items():
        cells = [f"{scores[c]:.2f}" if scores.get(c) is not None else "" for c in columns]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def nli_table_markdown(results: Mapping[str, Mapping[str, float]]) -> str:
    """One row per NLI evaluation set: n, accuracy and per-class F1 (x 100)."""
    columns = ["n", "accuracy", *(f"f1_{label}" for label in LABELS)]
    lines = ["| set | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    for name, metrics in results.items():
        cells = [str(metrics["n"])] + [f"{metrics[c]:.2f}" for c in columns[1:]]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
