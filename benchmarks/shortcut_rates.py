"""The shortcuts in ART's recorded training data (issue 41): how often each setting's 270 training triplets take
one, from the records alone (no model is loaded).

    python benchmarks/shortcut_rates.py

For every recorded run of benchmarks/results/art_rounds/records (raw-LLM and mined baselines, ART with PPO and
GRPO; generation seeds 42, 1, 2) it takes the triplets the run trained on (each round's first
``triplets_per_round`` kept, as benchmarks/art_assay.py does) and measures them with
hardcse.art.analysis.judge.shortcut_measures: deletion positives, negatives adding a negation word, negatives and
positives using words of the run's one demonstration (the leak, "before" the pool of demonstrations), positive =
negative, and the anchor-negative word overlap. Writes benchmarks/results/shortcut_rates.md (means over seeds, and
each seed).
"""

import numpy as np

from art_assay import GENERATION_SEEDS, RECORDS, SETTINGS
from hardcse.art.analysis.judge import SHORTCUT_LABELS, triplet_shortcuts
from hardcse.art.config import ArtRunConfig
from hardcse.config import load_config
from machine_line import recorded_dates
from record_assay import training_triplets

RESULTS = RECORDS.parent.parent


def measure(setting: str, seed: int) -> dict:
    record = RECORDS / f"{setting}-seed-{seed}"
    triplets = training_triplets(record)
    generator = load_config(ArtRunConfig, record / "config.yaml").generator  # its demonstrations: the leak
    return {"triplets": len(triplets), **triplet_shortcuts(triplets, generator)}


def main() -> None:
    header = "| data | seed | triplets | " + " | ".join(SHORTCUT_LABELS.values()) + " |"
    lines = [
        "# Shortcuts in ART's recorded training data (issue 41)",
        "",
        "`python benchmarks/shortcut_rates.py`: from the records of benchmarks/results/art_rounds/records (each run's "
        "270 training triplets), no model loaded; shares of the triplets (the overlap: a mean). Deletion: >= 90% of "
        "the positive's words are the anchor's and it is shorter; a leak: a word of the demonstration's answer that "
        "is in neither its anchor nor this anchor (function words aside); positive = negative: word overlap >= 0.9. "
        "Machine: any (counts of texts, no timing or model: the same on any machine and day). "
        + recorded_dates({f"{s}-{g}": RECORDS / f"{s}-seed-{g}" for s in SETTINGS.values() for g in GENERATION_SEEDS}),
        "",
        header,
        "|---|---|---:|" + "---:|" * len(SHORTCUT_LABELS),
    ]
    for label, setting in SETTINGS.items():
        per_seed = {seed: measure(setting, seed) for seed in GENERATION_SEEDS}
        means = {k: float(np.mean([m[k] for m in per_seed.values()])) for k in SHORTCUT_LABELS}
        lines.append(
            f"| **{label}** | mean | {per_seed[42]['triplets']} | "
            + " | ".join(f"**{means[k]:.3f}**" for k in SHORTCUT_LABELS)
            + " |"
        )
        for seed, m in per_seed.items():
            lines.append(
                f"| {label} | {seed} | {m['triplets']} | " + " | ".join(f"{m[k]:.3f}" for k in SHORTCUT_LABELS) + " |"
            )
    (RESULTS / "shortcut_rates.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
