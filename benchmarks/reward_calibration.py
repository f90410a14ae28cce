"""Measure the bundled models to choose the dual reward's constants (Omega, alpha_pos, alpha_neg).

    python benchmarks/reward_calibration.py [--discriminator runs/nli-minilm] [--anchors 64]

1. On the NLI dev files (selection data, never test sets): Omega = the P(target) threshold that best separates
   pairs whose gold label is the target from the others (Youden's J), for entailment and contradiction;
   alpha_pos / alpha_neg = the 5th / 95th percentile of cos(x, y) over gold entailment / contradiction pairs,
   by the bundled encoder: below / above them a "positive" / "negative" is unlike real ones.
2. The raw generator on training-corpus anchors: how its parsed outputs fall under those constants.
Writes benchmarks/results/reward_calibration.{json,md}.
"""

import argparse
import time

import numpy as np
import torch

from hardcse.art.config import AnchorConfig, GeneratorConfig
from hardcse.art.generator.model import load_generator
from hardcse.art.generator.parsing import parse_response
from hardcse.art.generator.prompts import render_prompts
from hardcse.art.generator.sampling import sample
from hardcse.art.reward.config import RewardConfig
from hardcse.art.reward.dual import Reward
from hardcse.art.synthesis.anchors import split_anchors
from hardcse.data.nli import DEV_FILES, LABEL_ID, read_nli_files
from hardcse.discriminator.nli import load_discriminator
from hardcse.encoder.build import load_encoder
from hardcse.encoder.encode import pair_cosines
from lib.record import write_record


def youden_threshold(p_target: np.ndarray, is_target: np.ndarray) -> tuple[float, float]:
    """The threshold t maximising TPR - FPR of (p >= t) and that J."""
    best = (0.5, -1.0)
    for t in np.linspace(0.05, 0.95, 91):
        j = (p_target[is_target] >= t).mean() - (p_target[~is_target] >= t).mean()
        if j > best[1]:
            best = (float(t), float(j))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--discriminator", default="runs/nli-minilm")
    parser.add_argument("--encoder", default="bundled:minilm-l6")
    parser.add_argument("--anchors", type=int, default=64, help="training-corpus anchors for the raw generator")
    args = parser.parse_args()
    discriminator = load_discriminator(args.discriminator)
    encoder = load_encoder(args.encoder)

    dev = read_nli_files(DEV_FILES)
    labels = np.array(dev.labels)
    probs = discriminator.predict_proba(dev.premises, dev.hypotheses)
    omega_e, j_e = youden_threshold(probs[:, LABEL_ID["entailment"]], labels == LABEL_ID["entailment"])
    omega_c, j_c = youden_threshold(probs[:, LABEL_ID["contradiction"]], labels == LABEL_ID["contradiction"])
    cos = pair_cosines(encoder, list(dev.premises), list(dev.hypotheses))
    cos_e, cos_c = cos[labels == LABEL_ID["entailment"]], cos[labels == LABEL_ID["contradiction"]]
    dev_stats = {
        "pairs": len(dev),
        "omega_entailment": omega_e,
        "youden_j_entailment": j_e,
        "omega_contradiction": omega_c,
        "youden_j_contradiction": j_c,
        "cos_entailment_percentiles_5_50_95": np.percentile(cos_e, [5, 50, 95]).round(3).tolist(),
        "cos_contradiction_percentiles_5_50_95": np.percentile(cos_c, [5, 50, 95]).round(3).tolist(),
    }
    chosen = RewardConfig(
        omega=round((omega_e + omega_c) / 2, 2),
        alpha_pos=round(float(np.percentile(cos_e, 5)), 2),
        alpha_neg=round(float(np.percentile(cos_c, 95)), 2),
    )

    generation = GeneratorConfig()
    anchors = split_anchors(AnchorConfig()).train[: args.anchors]
    model, tokenizer = load_generator(generation.model, generation)
    kinds = ["positive"] * len(anchors) + ["negative"] * len(anchors)
    torch.manual_seed(0)
    texts = []
    start = time.perf_counter()
    prompts = render_prompts(tokenizer, anchors + anchors, kinds, generation)
    for i in range(0, len(prompts), 16):
        texts += sample(model, tokenizer, prompts[i : i + 16], generation).texts
    gen_seconds = time.perf_counter() - start
    parsed = [parse_response(t, a) for t, a in zip(texts, anchors + anchors, strict=True)]
    parts = Reward(discriminator, encoder, chosen)(anchors + anchors, parsed, kinds)
    raw = {}
    for kind in ("positive", "negative"):
        rows = np.array([k == kind for k in kinds]) & parts.valid
        raw[kind] = {
            "parse_rate": float(parts.valid[np.array([k == kind for k in kinds])].mean()),
            "mean_p_target": float(parts.p_target[rows].mean()) if rows.any() else None,
            "share_r1_positive": float((parts.terms["r1"][rows] > 0).mean()) if rows.any() else None,
            "share_r2_positive": float((parts.terms["r2"][rows] > 0).mean()) if rows.any() else None,
            "cos_percentiles_5_50_95": np.percentile(parts.cosine[rows], [5, 50, 95]).round(3).tolist()
            if rows.any()
            else None,
            "mean_reward_all": float(parts.reward[np.array([k == kind for k in kinds])].mean()),
        }
    record = {
        "dev": dev_stats,
        "chosen": {"omega": chosen.omega, "alpha_pos": chosen.alpha_pos, "alpha_neg": chosen.alpha_neg},
        "raw_generator": raw,
        "raw_generator_seconds": round(gen_seconds, 1),
        "raw_examples": [
            {"kind": k, "anchor": a, "raw": t, "parsed": p.sentence, "reason": p.reason}
            for k, a, t, p in list(zip(kinds, anchors + anchors, texts, parsed, strict=True))[
                :: max(1, len(texts) // 8)
            ]
        ],
    }
    lines = [
        f"NLI dev files ({len(dev)} pairs, the discriminator's selection data): best-separating threshold "
        f"P(entailment) {omega_e:.2f} (J {j_e:.2f}), P(contradiction) {omega_c:.2f} (J {j_c:.2f}). "
        "cos(x, y) by the encoder, 5/50/95th percentiles: "
        f"entailment {dev_stats['cos_entailment_percentiles_5_50_95']}, "
        f"contradiction {dev_stats['cos_contradiction_percentiles_5_50_95']}.",
        "",
        f"Chosen: omega = {chosen.omega} (mean of the two thresholds), alpha_pos = {chosen.alpha_pos} "
        f"(5th percentile of entailment cosines), alpha_neg = {chosen.alpha_neg} (95th percentile of "
        "contradiction cosines).",
        "",
        f"Raw generator on {len(anchors)} training-corpus anchors (each with both prompts, {gen_seconds:.0f} s):",
        "",
        "| kind | parse rate | mean P(target) | r1 > 0 | r2 > 0 | cos 5/50/95 | mean reward |",
        "|---|---:|---:|---:|---:|---|---:|",
    ]
    for kind, r in raw.items():
        fmt = lambda x: "" if x is None else f"{x:.2f}"  # noqa: E731
        lines.append(
            f"| {kind} | {r['parse_rate']:.2f} | {fmt(r['mean_p_target'])} | {fmt(r['share_r1_positive'])} | "
            f"{fmt(r['share_r2_positive'])} | {r['cos_percentiles_5_50_95']} | {r['mean_reward_all']:.3f} |"
        )
    print(write_record("reward_calibration", "Reward calibration", [*lines, ""], record))


if __name__ == "__main__":
    main()
