"""The shortcuts in ART's recorded training data (issue 41): how often each setting's 270 training triplets take
one, from issue 42's evidence records alone (no model is loaded).

    python benchmarks/shortcut_rates.py

For the records of benchmarks/results/art_evidence/records of the five main settings (raw-generator and mined
baselines, ART with PPO and GRPO, generated + mined) at generation seeds 42, 1 and 2 (a fixed set: the record does
not move as later seeds land; reward_bins.py pools the same seeds), it takes the triplets
the run trained on (each round's first ``triplets_per_round`` kept, as the evidence's assay does) and measures them
with hardcse.art.analysis.judge.shortcut_measures: deletion positives, negatives adding a negation word, negatives
and positives using words of the run's one demonstration (the leak, "before" the pool of demonstrations), positive
= negative, and the anchor-negative word overlap. Writes benchmarks/results/shortcut_rates.md (means over seeds,
and each seed).
"""

import sys
from pathlib import Path

import numpy as np

from art_rounds import is_finished, record_dir
from hardcse.art.analysis.judge import SHORTCUT_LABELS, triplet_shortcuts
from hardcse.art.config import ArtRunConfig
from hardcse.config import load_config
from lib.art_evidence_tables import LABELS
from lib.provenance import recorded_dates
from lib.record import write_record
from lib.record_assay import training_triplets

SEEDS = (42, 1, 2)


def measure(record: Path) -> dict:
    triplets = training_triplets(record)
    generator = load_config(ArtRunConfig, record / "config.yaml").generator  # its demonstrations: the leak
    return {"triplets": len(triplets), **triplet_shortcuts(triplets, generator)}


def main() -> None:
    records = {(s, g): record_dir(s, g) for s in LABELS for g in SEEDS}
    for record in records.values():
        if not is_finished(record):
            sys.exit(f"error: {record} is not a finished record; run benchmarks/art_rounds.py to record it")
    header = "| data | seed | triplets | " + " | ".join(SHORTCUT_LABELS.values()) + " |"
    lines = [
        header,
        "|---|---|---:|" + "---:|" * len(SHORTCUT_LABELS),
    ]
    for setting, label in LABELS.items():
        per_seed = {g: measure(folder) for (s, g), folder in records.items() if s == setting}
        means = {k: float(np.mean([m[k] for m in per_seed.values()])) for k in SHORTCUT_LABELS}
        triplets = sorted({m["triplets"] for m in per_seed.values()})
        lines.append(
            f"| **{label}** (`{setting}`) | mean | {'/'.join(map(str, triplets))} | "
            + " | ".join(f"**{means[k]:.3f}**" for k in SHORTCUT_LABELS)
            + " |"
        )
        for seed, m in per_seed.items():
            lines.append(
                f"| {label} | {seed} | {m['triplets']} | " + " | ".join(f"{m[k]:.3f}" for k in SHORTCUT_LABELS) + " |"
            )
    text = write_record(
        "shortcut_rates",
        "Shortcuts in ART's recorded training data (issue 41, on issue 42's records)",
        [*lines, ""],
        about=": from the records of benchmarks/results/art_evidence/records (each run's 270 training triplets), no "
        "model loaded; shares of the triplets (the overlap: a mean). Deletion: >= 90% of the positive's words are the "
        "anchor's and it is shorter; a leak: a word of the demonstration's answer that is in neither its anchor nor "
        "this anchor (function words aside); positive = negative: word overlap >= 0.9 (generated + mined: its "
        "generated negative).",
        machine="Machine: any (counts of texts, no timing or model: the same on any machine and day). "
        + recorded_dates({f"{s}-{g}": folder for (s, g), folder in records.items()}),
        date=False,
        machine_inline=True,
    )
    print(text)


if __name__ == "__main__":
    main()
