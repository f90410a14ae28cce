"""Do the NLI models' probabilities tell the triplets a reader calls right from those it calls wrong? For each read
answer (benchmarks/triplet_read.py's folder: the reader's verdict per positive and per generated negative), the
judge's and the reward's discriminator's probability of the label the answer needs (entailment for a positive,
contradiction for a negative), and how well it ranks the reader's right answers above the wrong ones (ROC AUC, with
a 95% bootstrap interval over answers; 0.5: no signal). Then, for a stricter rule (the probability at least t), the
share of answers kept and the share of the kept the reader calls right. The thresholds are read on the same answers
they are scored on: a look at what a stricter rule could do, not a tuned rule.

    python benchmarks/judge_agreement.py --work DIR [--folder benchmarks/results/warm_start_read]
        [--sides warm_best_of_4] [--strong-discriminator] [--name judge_agreement]

``--work``: the benchmarks/warm_start.py work folder whose ``discriminator`` and ``judge`` graded the read triplets
(made there first if missing). ``--strong-discriminator`` adds a third model, ``discriminator_whole``: the
discriminator's share of the NLI pairs trained with the judge's recipe (configs/nli-judge.yaml: every pair of the
share, two epochs), in the work folder's ``discriminator_whole``: would a better-trained filter, still apart from the
judge's pairs, tell the reader's right answers from the wrong ones? Writes benchmarks/results/NAME.md and NAME.json
(command, date, CPU flags).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

from lib.record import RESULTS, write_record
from lib.warm import nli_model

THRESHOLDS = (0.5, 0.7, 0.8, 0.9, 0.95)
NEEDED = {"positive": "entailment", "negative": "contradiction"}
MODELS = ("judge", "discriminator", "discriminator_whole")  # a page's rows, in this order


def roc_auc(scores: np.ndarray, right: np.ndarray) -> float:
    """The probability that a right answer scores above a wrong one (ties count a half)."""
    a, b = scores[right], scores[~right]
    if not len(a) or not len(b):
        return float("nan")
    greater = (a[:, None] > b[None, :]).sum() + 0.5 * (a[:, None] == b[None, :]).sum()
    return float(greater / (len(a) * len(b)))


def auc_interval(scores: np.ndarray, right: np.ndarray, resamples: int = 2000, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    draws = [
        roc_auc(scores[i], right[i]) for i in (rng.integers(0, len(scores), len(scores)) for _ in range(resamples))
    ]
    low, high = np.nanpercentile(draws, [2.5, 97.5])
    return {"estimate": roc_auc(scores, right), "low": float(low), "high": float(high), "n": int(len(scores))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True, help="the benchmarks/warm_start.py work folder")
    parser.add_argument("--folder", default=str(RESULTS / "warm_start_read"), help="the read: one SIDE.jsonl a side")
    parser.add_argument("--sides", nargs="+", default=["warm_best_of_4"], help="sides with generated negatives")
    parser.add_argument(
        "--strong-discriminator", action="store_true", help="also the discriminator's share with the judge's recipe"
    )
    parser.add_argument("--name", default="judge_agreement", help="the record's name in benchmarks/results")
    args = parser.parse_args()

    from hardcse.data.nli import LABEL_ID
    from hardcse.discriminator.nli import NLIDiscriminator

    work = Path(args.work)
    models = {
        "judge": NLIDiscriminator.load(str(nli_model("judge", work / "judge", whole_share=True)), device="cpu"),
        "discriminator": NLIDiscriminator.load(str(nli_model("discriminator", work / "discriminator")), device="cpu"),
    }
    if args.strong_discriminator:
        whole = nli_model("discriminator", work / "discriminator_whole", whole_share=True)
        models["discriminator_whole"] = NLIDiscriminator.load(str(whole), device="cpu")
    results = {}
    for side in args.sides:
        rows = [json.loads(line) for line in (Path(args.folder) / f"{side}.jsonl").read_text().splitlines() if line]
        for kind, needed in NEEDED.items():
            right = np.array([bool(r[f"{kind}_ok"]) for r in rows])
            entry = {"answers": len(rows), "reader_right": int(right.sum())}
            for model_name, model in models.items():
                probs = model.predict_proba([r["anchor"] for r in rows], [r[kind] for r in rows])
                p = np.asarray(probs)[:, LABEL_ID[needed]]
                entry[model_name] = {
                    "auc": auc_interval(p, right),
                    "mean_probability_right": float(p[right].mean()) if right.any() else None,
                    "mean_probability_wrong": float(p[~right].mean()) if (~right).any() else None,
                    "thresholds": {
                        str(t): {"kept": int((p >= t).sum()), "right": int((right & (p >= t)).sum())}
                        for t in THRESHOLDS
                    },
                }
            results[f"{side} {kind}"] = entry
    folder = os.path.relpath(Path(args.folder).resolve(), RESULTS.parent.parent)  # as the repository names it
    payload = {"folder": folder, "sides": args.sides, "results": results}
    write_record(args.name, "Do the NLI models agree with the read?", page(payload), payload)


def page(p: dict) -> list[str]:
    lines = [
        f"The read: {p['folder']}/ (one reader, an assistant session; its count: {p['folder']}.md). "
        "Probability: of the label the answer needs. AUC: a right answer's probability above a wrong one's "
        "(0.5: no signal), 95% bootstrap over answers. The thresholds are looked at on the answers they are scored "
        "on (in-sample).",
        "",
        "| answers | model | reader right | AUC | mean p (right) | mean p (wrong) | "
        + " | ".join(f"p >= {t}: kept, right" for t in THRESHOLDS)
        + " |",
        "|---|---|---:|---:|---:|---:|" + "---:|" * len(THRESHOLDS),
    ]
    for name, entry in p["results"].items():
        for model in (m for m in MODELS if m in entry):
            m = entry[model]
            a = m["auc"]
            cells = [f"{v['kept']}, {v['right']}" for v in m["thresholds"].values()]
            lines.append(
                f"| {name} | {model} | {entry['reader_right']} of {entry['answers']} | {a['estimate']:.2f} "
                f"[{a['low']:.2f}, {a['high']:.2f}] | {m['mean_probability_right']:.2f} | "
                f"{m['mean_probability_wrong']:.2f} | " + " | ".join(cells) + " |"
            )
    return [*lines, ""]


if __name__ == "__main__":
    main()
