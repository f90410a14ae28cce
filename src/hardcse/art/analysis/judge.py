"""``hardcse judge``: the paper's measures of synthetic data (Tables 4-6), by an NLI model that is NOT the
reward's discriminator: accuracy of positives and negatives, mean cosines, parse failures, examples."""

from __future__ import annotations

import numpy as np
from sentence_transformers import SentenceTransformer

from hardcse.art.config import FilterConfig, GeneratorConfig
from hardcse.art.reward.dual import TARGET_LABEL, judged
from hardcse.art.reward.shortcuts import shortcut_flags, word_overlap
from hardcse.discriminator.nli import NLIDiscriminator
from hardcse.encoder.encode import pair_cosines
from hardcse.engines import Engine
from hardcse.errors import HardcseError

# shortcut_measures' keys, as a table names them
SHORTCUT_LABELS = {
    "positive_deletion_rate": "deletion positives",
    "negative_added_negation_rate": "negatives adding a negation",
    "negative_demonstration_leak_rate": "negatives with leaked words",
    "positive_demonstration_leak_rate": "positives with leaked words",
    "positive_is_negative_rate": "positive = negative",
    "anchor_negative_overlap": "anchor-negative word overlap",
}


def triplet_shortcuts(triplets: list[tuple[str, ...]], generator: GeneratorConfig | None = None) -> dict:
    """:func:`shortcut_measures` of kept triplets (anchor, positive, negative, ...)."""
    return shortcut_measures([{"anchor": t[0], "positive": t[1], "negative": t[2]} for t in triplets], generator)


def shortcut_measures(records: list[dict], generator: GeneratorConfig | None = None) -> dict:
    """How often the parsed answers take a shortcut (hardcse/art/reward/shortcuts.py; :func:`shortcut_flags`):
    positives that are deletions of their anchor, negatives that add a negation word, answers that copy the shown
    demonstration's words (with the ``generator`` config that chose them), triplets whose positive is their
    negative (word overlap >= 0.9), and the mean word overlap of anchor and negative; shares of the parsed answers
    (of complete triplets for the last two), None where there is none."""

    def share(values: list | np.ndarray) -> float | None:
        defined = np.asarray(values, dtype=float)
        defined = defined[np.isfinite(defined)]
        return float(np.mean(defined)) if len(defined) else None

    same = FilterConfig().max_pair_overlap  # the filter's bound for a positive that is its negative
    flags = shortcut_flags(records, generator)
    negatives = [(r["anchor"], r["negative"]) for r in records if r["negative"] is not None]
    both = [r for r in records if r["positive"] is not None and r["negative"] is not None]
    out = {
        "positive_deletion_rate": share(flags["positive_deletion"]),
        "negative_added_negation_rate": share(flags["negative_added_negation"]),
        "positive_is_negative_rate": share([word_overlap(r["positive"], r["negative"]) >= same for r in both]),
        "anchor_negative_overlap": share([word_overlap(x, y) for x, y in negatives]),
    }
    for kind in ("positive", "negative"):
        if f"{kind}_leak" in flags:
            out[f"{kind}_demonstration_leak_rate"] = share(flags[f"{kind}_leak"])
    return out


# what judge_records reads of every record (``synthetic.jsonl`` as synthesis writes it)
SYNTHETIC_FIELDS = ("anchor", "positive", "negative", "positive_cosine", "negative_cosine", "positive_reward",
                    "negative_reward", "drop_reason")  # fmt: skip


def check_synthetic_records(path: str, numbered: list[tuple[int, dict]]) -> None:
    """Refuse, naming ``file:line``, a synthetic file that is empty or whose records lack a field the measures read."""
    made_by = "give a synthetic.jsonl that `hardcse art generate` or `art run` wrote"
    if not numbered:
        raise HardcseError(f"{path}: no records; {made_by}")
    for line, record in numbered:
        missing = [field for field in SYNTHETIC_FIELDS if field not in record]
        if missing:
            raise HardcseError(f"{path}:{line}: missing field(s) {missing}; {made_by}")


def judge_records(
    records: list[dict],
    judge: NLIDiscriminator | None,
    n_examples: int = 5,
    cosine_encoder: SentenceTransformer | None = None,
    generator: GeneratorConfig | None = None,
    engine: Engine | None = None,
) -> dict:
    """Measures over ``synthetic.jsonl`` records: accuracy over parsed outputs by ``judge`` (skipped when None);
    cosines by ``cosine_encoder`` in ``engine`` (default: the reward encoder's, as recorded), listed per item as
    well; the shortcut rates (:func:`shortcut_measures`, the leak with the ``generator`` config that wrote them)."""
    result: dict = {"anchors": len(records), **shortcut_measures(records, generator)}
    for kind, target in TARGET_LABEL.items():
        rows = [r for r in records if r[kind] is not None]
        result[f"{kind}_parse_failure_rate"] = 1 - len(rows) / max(len(records), 1)
        anchors, outputs = [r["anchor"] for r in rows], [r[kind] for r in rows]
        if cosine_encoder is not None:
            cosines = [float(c) for c in pair_cosines(cosine_encoder, anchors, outputs, engine)]
        else:
            cosines = [r[f"{kind}_cosine"] for r in rows if r[f"{kind}_cosine"] is not None]
        result[f"{kind}_cosines"] = [round(c, 5) for c in cosines]
        result[f"{kind}_mean_cosine"] = float(np.mean(cosines)) if cosines else None
        result[f"{kind}_accuracy"] = None
        if rows and judge is not None:
            probs = judge.predict_proba(anchors, outputs)
            result[f"{kind}_accuracy"] = float(judged(probs, target).mean() * 100)
        result[f"{kind}_mean_reward"] = float(np.mean([r[f"{kind}_reward"] for r in records]))
    result["kept_fraction"] = float(np.mean([r["drop_reason"] is None for r in records])) if records else 0.0
    complete = [r for r in records if r["positive"] is not None and r["negative"] is not None]
    result["examples"] = [
        {"anchor": r["anchor"], "positive": r["positive"], "negative": r["negative"]} for r in complete[:n_examples]
    ]
    return result


def judge_table_markdown(results: dict[str, dict]) -> str:
    """One row per generator: judged accuracy, cosines, parse failures and mean reward (Tables 4-5 form)."""
    columns = [
        ("positive_accuracy", "acc pos %"),
        ("negative_accuracy", "acc neg %"),
        ("positive_mean_cosine", "cos(x,y+)"),
        ("negative_mean_cosine", "cos(x,y-)"),
        ("positive_parse_failure_rate", "parse fail pos"),
        ("negative_parse_failure_rate", "parse fail neg"),
        ("positive_mean_reward", "reward pos"),
        ("negative_mean_reward", "reward neg"),
        ("kept_fraction", "kept"),
    ]
    lines = ["| generator | " + " | ".join(c[1] for c in columns) + " |", "|---|" + "---:|" * len(columns)]
    for name, r in results.items():
        cells = [
            "" if r.get(key) is None else f"{r[key]:.2f}" if "accuracy" in key else f"{r[key]:.3f}"
            for key, _ in columns
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
