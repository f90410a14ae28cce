"""What each reward variant pays for (issue 41 item 3): the recorded RL completions by cosine bin and kind.

    python benchmarks/reward_bins.py         # needs runs/nli-minilm and runs/nli-judge (benchmarks/art_rounds.py)

The pool: every parsed answer in the RL completions of issue 42's evidence records (benchmarks/art_rounds.py:
art_evidence/records/SETTING-seed-S/round_*/generator/completions.jsonl of ART with PPO and with GRPO at generation
seeds 42, 1 and 2: the raw and tuned generators' answers during RL, rounds 1-3). Each is
scored once more with every reward variant of benchmarks/hard_correct.py that changes the reward (the paper's,
r2 gated on the judged label, the smooth r2, the shortcut penalties, all of hard-correct.yaml), by the
discriminator of the runs and the bundled encoder (round 1's reward encoder), and judged by the independent judge.
Writes benchmarks/results/reward_bins.md (per kind and cosine bin: the count, the discriminator's P(target), the
share the judge calls the target, and each variant's mean reward) and reward_bins.png.
"""

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from art_rounds import RECORDS, is_finished, record_dir  # noqa: E402
from hard_correct import VARIANTS, overrides  # noqa: E402
from hardcse.art.analysis.reward_bins import reward_by_cosine_bin  # noqa: E402
from hardcse.art.config import ArtRunConfig  # noqa: E402
from hardcse.art.generator.parsing import Parsed  # noqa: E402
from hardcse.art.reward.dual import Reward  # noqa: E402
from hardcse.config import load_config  # noqa: E402
from hardcse.discriminator.nli import NLIDiscriminator  # noqa: E402
from hardcse.encoder.build import load_encoder  # noqa: E402
from hardcse.figures import save_png  # noqa: E402
from lib.digests import model_digest  # noqa: E402
from lib.record import RESULTS, write_record  # noqa: E402
from lib.record_files import exists, read_text  # noqa: E402

REWARD_VARIANTS = ("paper", "r2-gated", "r2-smooth", "shortcut-penalties", "hard-correct")
POOL = [(setting, seed) for setting in ("cpu-full", "cpu-full-grpo") for seed in (42, 1, 2)]  # PPO, GRPO records


def pool() -> list[dict]:
    """Every parsed answer of the POOL records' RL completions, in POOL's and the rounds' order."""
    rows = []
    for setting, seed in POOL:
        if not is_finished(record_dir(setting, seed)):
            sys.exit(f"error: {record_dir(setting, seed)} is not a finished record; run benchmarks/art_rounds.py")
    paths = [r / "generator" / "completions.jsonl" for s in POOL for r in sorted(record_dir(*s).glob("round_*"))]
    for path in filter(exists, paths):  # each kept plain or compressed (record_files)
        for line in read_text(path).splitlines():
            row = json.loads(line)
            if row["answer"] is not None:
                rows.append(row)
    return rows


def main() -> None:
    runs = Path("runs")
    for model in ("nli-minilm", "nli-judge"):
        if not (runs / model).exists():
            sys.exit(f"error: runs/{model} is missing; train it first: python benchmarks/art_rounds.py trains both")
    rows = pool()
    anchors = [r["anchor"] for r in rows]
    kinds = [r["kind"] for r in rows]
    parsed = [Parsed(r["answer"]) for r in rows]
    discriminator = NLIDiscriminator.load(str(runs / "nli-minilm"))
    judge = NLIDiscriminator.load(str(runs / "nli-judge"))
    judge_probs = judge.predict_proba(anchors, [r["answer"] for r in rows])
    encoder = load_encoder("bundled:minilm-l6")
    tables = {}
    for name in REWARD_VARIANTS:
        config = load_config(ArtRunConfig, VARIANTS[name][0], overrides(name, 42))
        parts = Reward(discriminator, encoder, config.reward)(anchors, parsed, kinds)
        tables[name] = reward_by_cosine_bin(parts, kinds, judge_probs)
    bins = tables["paper"]  # the count, P(target) and the judge's verdicts are the same under every variant
    digests = {model: model_digest(str(runs / model))[:12] for model in ("nli-minilm", "nli-judge")}
    about = (
        f": {len(rows)} parsed answers of the RL completions recorded in "
        f"{RECORDS.relative_to(RESULTS.parent.parent)}/ ("
        + ", ".join(f"{setting}-seed-{seed}" for setting, seed in POOL)
        + ": raw and tuned generators during RL, PPO and GRPO, rounds 1-3), each scored by "
        "every reward variant with the runs' discriminator (runs/nli-minilm) and the bundled encoder (round 1's), "
        "and judged by runs/nli-judge. P(target): the discriminator's P(entailment) for a positive, "
        "P(contradiction) for a negative; judged correct: the judge's predicted label is the target. The variants "
        "are benchmarks/hard_correct.py's (paper: cpu-full.yaml's reward). NLI models by the SHA-256 of their "
        f"weights: discriminator {digests['nli-minilm']}, judge {digests['nli-judge']} (as in hard_correct's "
        "records' nli_models.json)."
    )
    lines = [
        "| kind | cosine | n | P(target) | judged correct | " + " | ".join(REWARD_VARIANTS) + " |",
        "|---|---|---:|---:|---:|" + "---:|" * len(REWARD_VARIANTS),
    ]

    def cell(value: float | None) -> str:
        return "-" if value is None else f"{value:+.3f}"

    for i, b in enumerate(bins):
        rewards = " | ".join(cell(tables[name][i].reward) for name in REWARD_VARIANTS)
        p = "-" if b.p_target is None else f"{b.p_target:.2f}"
        judged = "-" if b.judged_correct is None else f"{b.judged_correct:.2f}"
        lines.append(f"| {b.kind} | {b.label} | {b.n} | {p} | {judged} | {rewards} |")
    title = "What each reward pays for: the recorded RL completions by cosine bin (issue 41)"
    print(write_record("reward_bins", title, [*lines, ""], about=about))

    figure, axes = plt.subplots(2, 2, figsize=(11, 7), sharex="col")
    for column, kind in enumerate(("positive", "negative")):
        index = [i for i, b in enumerate(bins) if b.kind == kind]
        x = np.arange(len(index))
        for name in REWARD_VARIANTS:
            y = [np.nan if tables[name][i].reward is None else tables[name][i].reward for i in index]
            axes[0, column].plot(x, y, marker="o", label=name)
        axes[0, column].axhline(0, color="grey", lw=0.5)
        axes[0, column].set_title(f"{kind}s: mean reward by cosine to the anchor")
        for key, label in (("p_target", "P(target), discriminator"), ("judged_correct", "judged correct (judge)")):
            y = [np.nan if getattr(bins[i], key) is None else getattr(bins[i], key) for i in index]
            axes[1, column].plot(x, y, marker="o", label=label)
        axes[1, column].set_ylim(0, 1)
        axes[1, column].set_xticks(x, [f"{bins[i].label}\n(n={bins[i].n})" for i in index], fontsize=8)
        axes[1, column].set_xlabel("cos(anchor, answer), bundled encoder")
    axes[0, 0].legend(fontsize=8)
    axes[1, 0].legend(fontsize=8)
    figure.tight_layout()
    save_png(figure, RESULTS / "reward_bins.png", dpi=110)


if __name__ == "__main__":
    main()
