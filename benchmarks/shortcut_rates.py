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

import json

import numpy as np
import yaml

from art_assay import GENERATION_SEEDS, RECORDS, SETTINGS, training_triplets
from hardcse.art.analysis.judge import shortcut_measures
from hardcse.art.config import ArtRunConfig
from hardcse.config import load_config

RESULTS = RECORDS.parent.parent
MEASURES = {
    "positive_deletion_rate": "deletion positives",
    "negative_added_negation_rate": "negatives adding a negation",
    "negative_demonstration_leak_rate": "negatives with leaked words",
    "positive_demonstration_leak_rate": "positives with leaked words",
    "positive_is_negative_rate": "positive = negative",
    "anchor_negative_overlap": "anchor-negative word overlap",
}


def measure(setting: str, seed: int) -> dict:
    record = RECORDS / f"{setting}-seed-{seed}"
    rows = [{"anchor": t[0], "positive": t[1], "negative": t[2]} for t in training_triplets(record)]
    config = yaml.safe_load((record / "config.yaml").read_text(encoding="utf-8"))
    generator = load_config(
        ArtRunConfig, overrides=[f"generator.few_shot={json.dumps(config['generator']['few_shot'])}"]
    )
    return {"triplets": len(rows), **shortcut_measures(rows, generator.generator)}


def main() -> None:
    header = "| data | seed | triplets | " + " | ".join(MEASURES.values()) + " |"
    lines = [
        "# Shortcuts in ART's recorded training data (issue 41)",
        "",
        "`python benchmarks/shortcut_rates.py`: from the records of benchmarks/results/art_rounds/records (each run's "
        "270 training triplets), no model loaded; shares of the triplets (the overlap: a mean). Deletion: >= 90% of "
        "the positive's words are the anchor's and it is shorter; a leak: a word of the demonstration's answer that "
        "is in neither its anchor nor this anchor (function words aside); positive = negative: word overlap >= 0.9. "
        "Counts of texts: the same on any machine and day.",
        "",
        header,
        "|---|---|---:|" + "---:|" * len(MEASURES),
    ]
    for label, setting in SETTINGS.items():
        per_seed = {seed: measure(setting, seed) for seed in GENERATION_SEEDS}
        means = {k: float(np.mean([m[k] for m in per_seed.values()])) for k in MEASURES}
        lines.append(
            f"| **{label}** | mean | {per_seed[42]['triplets']} | "
            + " | ".join(f"**{means[k]:.3f}**" for k in MEASURES)
            + " |"
        )
        for seed, m in per_seed.items():
            lines.append(
                f"| {label} | {seed} | {m['triplets']} | " + " | ".join(f"{m[k]:.3f}" for k in MEASURES) + " |"
            )
    (RESULTS / "shortcut_rates.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
