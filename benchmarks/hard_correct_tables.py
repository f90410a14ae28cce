"""The tables of benchmarks/hard_correct.py (issue 41): per recorded run, its kept data's shortcut rates and the
independent judge's verdict on it, the held-out tuned - raw generator, and one sentence per question of the issue
from those and the assay's comparison."""

import json
import sys
from pathlib import Path

import numpy as np

from art_rounds import HELDOUT, NLI_RECORD, heldout_rows, model_digest
from hardcse.art.analysis.heldout import SHORTCUT_AND_DIFFICULTY
from hardcse.art.analysis.judge import SHORTCUT_LABELS, triplet_shortcuts
from hardcse.art.config import ArtRunConfig
from hardcse.config import load_config
from hardcse.data.nli import LABELS
from hardcse.data.triplets import read_triplets
from hardcse.evaluation.compare import Comparison, interval_cell, verdict
from hardcse.stats import Interval, bootstrap_mean

REFERENCES = ("paper", "raw-llm", "mined")  # every variant's assay is compared with these
REFERENCE_PAIRS = (("raw-llm", "paper"), ("raw-llm", "mined"), ("mined", "paper"))  # (A, B): B - A


def data_rows(records: list[Path]) -> list[str]:
    """Per recorded run: its kept triplets, their shortcut rates (hardcse/art/reward/shortcuts.py; the leak by the
    run's own demonstrations) and the round's held-out tuned - raw generator (where it tuned one)."""
    lines = [
        "| run | kept | " + " | ".join(SHORTCUT_LABELS.values()) + " | " + " | ".join(HELDOUT.values()) + " |",
        "|---|---:|" + "---:|" * (len(SHORTCUT_LABELS) + len(HELDOUT)),
    ]
    for record in records:
        triplets = read_triplets(record / "round_1" / "triplets.csv")
        rates = triplet_shortcuts(triplets, load_config(ArtRunConfig, record / "config.yaml").generator)
        cells = [f"{rates[k]:.3f}" if rates.get(k) is not None else "-" for k in SHORTCUT_LABELS]
        held = dict(heldout_rows(record)).get("round_1")
        cells += [interval_cell(Interval(**held[k]["difference"]), digits=3) if held else "-" for k in HELDOUT]
        lines.append(f"| {record.name} | {len(triplets)} | " + " | ".join(cells) + " |")
    return lines


def nli_line(records: list[Path]) -> str:
    """Which NLI models the runs used (their records' NLI_RECORD): one pair for all, or each run's."""
    used = {}
    for record in records:
        path = record / NLI_RECORD
        models = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        used[record.name] = (
            "not recorded"
            if models is None
            else " / ".join(f"{k} {(v['sha256'] or '-')[:12]}" for k, v in models.items())
        )
    if len(set(used.values())) == 1:
        return f"NLI models of every run (SHA-256 of their weights): {next(iter(used.values()))}."
    return "NLI models differ between runs: " + "; ".join(f"{n}: {u}" for n, u in used.items()) + "."


def heldout_detail_rows(records: list[Path]) -> list[str]:
    """Per recorded run that tuned: the held-out tuned - raw generator of issue 41's measures (correctness per kind,
    the cosine of judged-correct answers, the shortcuts; hardcse/art/analysis/heldout.py), where its round has them."""
    lines = [
        "Held-out, tuned - raw generator (300 anchors; paired 95% intervals):",
        "",
        "| run | " + " | ".join(SHORTCUT_AND_DIFFICULTY) + " |",
        "|---|" + "---:|" * len(SHORTCUT_AND_DIFFICULTY),
    ]
    for record in records:
        held = dict(heldout_rows(record)).get("round_1")
        if held is None or SHORTCUT_AND_DIFFICULTY[0] not in held:
            continue
        cells = [
            interval_cell(Interval(**held[k]["difference"]), digits=3) if held[k] else "-"
            for k in SHORTCUT_AND_DIFFICULTY
        ]
        lines.append(f"| {record.name} | " + " | ".join(cells) + " |")
    return lines


JUDGED_KEPT = {  # column: (which answers, the label the independent judge gives them)
    "positives judged entailment %": ("positive", "entailment"),
    "negatives judged contradiction %": ("negative", "contradiction"),
    "negatives judged entailment % (false negatives)": ("negative", "entailment"),
}


def answers_of(triplet: tuple[str, ...], kind: str) -> list[str]:
    """A kept triplet's positive, or its negatives (a second one where the run kept two)."""
    return [triplet[1]] if kind == "positive" else [t for t in triplet[2:] if t]


def judged_kept(records: list[Path], judge_dir: Path) -> dict[str, dict[str, np.ndarray]]:
    """Per record, per JUDGED_KEPT column: 1/0 per kept answer (the judge gives it the label or not), by the
    judge at ``judge_dir``, which must be the one the records name (by its weights' SHA-256)."""
    from hardcse.discriminator.nli import NLIDiscriminator

    digest = model_digest(str(judge_dir))
    for record in records:
        named = json.loads((record / NLI_RECORD).read_text(encoding="utf-8"))["judge"]["sha256"]
        if named != digest:
            sys.exit(
                f"error: {judge_dir} (sha256 {str(digest)[:12]}) is not the judge {record / NLI_RECORD} names "
                f"({named[:12]}); link that one to {judge_dir}"
            )
    judge = NLIDiscriminator.load(str(judge_dir))
    judged = {}
    for record in records:
        triplets = read_triplets(record / "round_1" / "triplets.csv")
        judged[record.name] = {}
        for column, (kind, label) in JUDGED_KEPT.items():
            pairs = [(t[0], answer) for t in triplets for answer in answers_of(t, kind)]
            probs = judge.predict_proba([p[0] for p in pairs], [p[1] for p in pairs])
            judged[record.name][column] = (probs.argmax(axis=1) == LABELS.index(label)).astype(np.float64)
    return judged


def percent_cell(interval: Interval) -> str:
    shown = percent(interval)
    return f"{shown.estimate:.1f} [{shown.low:.1f}, {shown.high:.1f}]"


def percent(interval: Interval) -> Interval:
    """A share's interval in percent."""
    return Interval(interval.estimate * 100, interval.low * 100, interval.high * 100, interval.n)


def judged_rows(judged: dict[str, dict[str, np.ndarray]]) -> list[str]:
    """The judge's verdict on each run's kept answers, % with bootstrap 95% intervals over the answers."""
    lines = [
        "The independent judge on the kept training data (% of kept answers; bootstrap 95% over answers; a run "
        "with two negatives counts both):",
        "",
        "| run | " + " | ".join(JUDGED_KEPT) + " |",
        "|---|" + "---:|" * len(JUDGED_KEPT),
    ]
    for name, columns in judged.items():
        lines.append(f"| {name} | " + " | ".join(percent_cell(bootstrap_mean(v)) for v in columns.values()) + " |")
    return lines


def unpaired_difference(a: np.ndarray, b: np.ndarray) -> Interval:
    """mean(b) - mean(a) of two independent samples, percentile bootstrap 95% (scipy; 1,000 resamples, seed 0)."""
    from scipy.stats import bootstrap

    result = bootstrap(
        (a, b),
        lambda x, y, axis=-1: y.mean(axis=axis) - x.mean(axis=axis),
        n_resamples=1000,
        method="percentile",
        random_state=np.random.default_rng(0),
    )
    low, high = result.confidence_interval
    return Interval(float(b.mean() - a.mean()), float(low), float(high), len(a) + len(b))


def variant_of(record_name: str) -> tuple[str, int]:
    """'paper-seed-42' -> ('paper', 42)."""
    name, _, seed = record_name.rpartition("-seed-")
    return name, int(seed)


def assay_pairs(variants: list[str]) -> list[tuple[str, str]]:
    """Every variant against each reference present (B - A, A the reference); the references against each other."""
    pairs = [(a, b) for a, b in REFERENCE_PAIRS if a in variants and b in variants]
    return pairs + [(a, b) for b in variants if b not in REFERENCES for a in REFERENCES if a in variants]


JUDGED_HELDOUT = ("negative_judged", "negative_cosine_judged", "positive_judged", "positive_cosine_judged")


def answers(comparison: Comparison, judged: dict[str, dict[str, np.ndarray]], records: list[Path]) -> list[str]:
    """One sentence per question of issue 41, from the tables above; a question whose variants are not recorded
    says which are missing."""
    by_variant = {variant_of(r.name)[0]: r for r in records}
    lines = ["## Answers", ""]

    def judged_of(variant: str, column: str) -> np.ndarray:
        return np.concatenate([judged[r.name][column] for r in records if variant_of(r.name)[0] == variant])

    false_negative = "negatives judged entailment % (false negatives)"
    if {"paper", "filter-argmax"} <= by_variant.keys():
        change = percent(
            unpaired_difference(judged_of("paper", false_negative), judged_of("filter-argmax", false_negative))
        )
        lines.append(
            "- Does the filter fix remove false negatives? The share of kept negatives the judge calls entailed, "
            f"filter-argmax - paper (the paper's argmax filter against the recorded threshold filter, both under the "
            f"paper's reward): {verdict(change, 1)} "
            "percentage points (unpaired bootstrap 95% over kept negatives)."
        )
    else:
        lines.append("- Does the filter fix remove false negatives? Not measured: needs paper and filter-argmax.")
    for variant in ("r2-gated", "hard-correct"):
        held = dict(heldout_rows(by_variant[variant])).get("round_1") if variant in by_variant else None
        paper = dict(heldout_rows(by_variant["paper"])).get("round_1") if "paper" in by_variant else None
        if held is None or paper is None or any(not held.get(k) or not paper.get(k) for k in JUDGED_HELDOUT):
            question = "Does the new reward keep difficulty while RL gains correctness?"
            lines.append(f"- {question} Not measured: needs {variant} and paper.")
            continue
        cells = {
            k: (verdict(Interval(**held[k]["difference"]), 3), verdict(Interval(**paper[k]["difference"]), 3))
            for k in JUDGED_HELDOUT
        }
        lines.append(
            f"- Does the new reward keep difficulty while RL gains correctness? {variant}, held-out tuned - raw "
            "generator (paper's reward in brackets): judge accuracy on negatives "
            f"{cells['negative_judged'][0]} ({cells['negative_judged'][1]}), cosine of judged-correct negatives "
            f"{cells['negative_cosine_judged'][0]} ({cells['negative_cosine_judged'][1]}); on positives "
            f"{cells['positive_judged'][0]} ({cells['positive_judged'][1]}), cosine of judged-correct positives "
            f"{cells['positive_cosine_judged'][0]} ({cells['positive_cosine_judged'][1]})."
        )
    for variant in ("art-mined-negatives", "art-two-negatives"):
        if ("mined", variant) not in comparison.differences:
            lines.append(f"- Does generation add to mining? Not measured: needs {variant} and mined.")
        else:
            diff = comparison.differences[("mined", variant)]
            lines.append(
                f"- Does generation add to mining? {variant} - mined: STS-B dev {verdict(diff['STS-B-dev'])}, "
                f"avg7 {verdict(diff['avg7'])}."
            )
    if "mined" in comparison.groups:
        beats = [b for (a, b), d in comparison.differences.items() if a == "mined" and d["STS-B-dev"].low > 0]
        best = max(comparison.groups, key=lambda g: comparison.summary(g, "STS-B-dev")[0])
        lines.append(
            "- Beats mined negatives on STS-B dev with an interval above zero: "
            f"{', '.join(beats) if beats else 'no variant'}. Highest STS-B dev mean: {best} "
            f"({comparison.summary(best, 'STS-B-dev')[0]:.2f})."
        )
    return lines
