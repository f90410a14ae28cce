"""The tables of benchmarks/hard_correct.py (issue 41): per recorded run, its kept data's shortcut rates and the
independent judge's verdict on it, the held-out tuned - raw generator, and one sentence per question of the issue
from those and the assay's comparison."""

import json
import sys
from pathlib import Path

import numpy as np

from hardcse.art.analysis.judge import SHORTCUT_LABELS, triplet_shortcuts
from hardcse.art.config import ArtRunConfig
from hardcse.art.synthesis.heldout import SHORTCUT_AND_DIFFICULTY
from hardcse.config import load_config
from hardcse.data.nli import LABELS
from hardcse.data.triplets import read_triplets
from hardcse.evaluation.compare import Comparison, interval_cell, verdict
from hardcse.stats import Interval, bootstrap_mean, detectable_difference, paired_bootstrap
from lib.art_evidence_tables import HELDOUT, heldout_rows, name_and_seed
from lib.digests import model_digest
from lib.provenance import NLI_RECORD
from lib.record_assay import read_stored_triplets

GUARDS = ("negative_entailed", "mined_negative_entailed", "positive_is_negative")  # the filter's last checks
GUARD_DROPPED = "round_1/guard_dropped.csv"  # a record's triplets that only GUARDS dropped
UNGUARDED = "+guard-dropped"  # judged-name suffix: a record's kept triplets with those the guards dropped
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
        triplets = read_stored_triplets(record / "round_1" / "triplets.csv")
        rates = triplet_shortcuts(triplets, load_config(ArtRunConfig, record / "config.yaml").generator)
        cells = [f"{rates[k]:.3f}" if rates.get(k) is not None else "-" for k in SHORTCUT_LABELS]
        held = held_out(record)
        cells += [difference(held, k) if held else "-" for k in HELDOUT]
        lines.append(f"| {record.name} | {len(triplets)} | " + " | ".join(cells) + " |")
    return lines


def heldout_detail_rows(records: list[Path]) -> list[str]:
    """Per recorded run that tuned: the held-out tuned - raw generator of issue 41's measures (correctness per kind,
    the cosine of judged-correct answers, the shortcuts; hardcse/art/synthesis/heldout.py), where its round has them."""
    lines = [
        "Held-out, tuned - raw generator (300 anchors; paired 95% intervals):",
        "",
        "| run | " + " | ".join(SHORTCUT_AND_DIFFICULTY) + " |",
        "|---|" + "---:|" * len(SHORTCUT_AND_DIFFICULTY),
    ]
    for record in records:
        held = held_out(record)
        if held is None or SHORTCUT_AND_DIFFICULTY[0] not in held:
            continue
        cells = [difference(held, k) if held[k] else "-" for k in SHORTCUT_AND_DIFFICULTY]
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


Judged = dict[str, dict[str, dict[tuple[str, str], float]]]  # record -> column -> (anchor, answer) -> 1/0


def judged_kept(records: list[Path], judge_dir: Path) -> Judged:
    """Per record, per JUDGED_KEPT column: 1/0 per kept (anchor, answer) (the judge gives it the label or not), by
    the judge at ``judge_dir``, which must be the one the records name (by its weights' SHA-256)."""
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

    def verdicts(triplets: list) -> dict[str, dict[tuple[str, str], float]]:
        columns = {}
        for column, (kind, label) in JUDGED_KEPT.items():
            pairs = [(t[0], answer) for t in triplets for answer in answers_of(t, kind)]
            probs = judge.predict_proba([p[0] for p in pairs], [p[1] for p in pairs])
            hits = probs.argmax(axis=1) == LABELS.index(label)
            columns[column] = {pair: float(hit) for pair, hit in zip(pairs, hits, strict=True)}
        return columns

    judged = {}
    for record in records:
        kept = read_stored_triplets(record / "round_1" / "triplets.csv")
        judged[record.name] = verdicts(kept)
        if (record / GUARD_DROPPED).is_file() and (dropped := read_triplets(record / GUARD_DROPPED)):
            judged[record.name + UNGUARDED] = verdicts(kept + dropped)
    return judged


def percent_cell(interval: Interval) -> str:
    shown = percent(interval)
    return f"{shown.estimate:.1f} [{shown.low:.1f}, {shown.high:.1f}]"


def percent(interval: Interval) -> Interval:
    """A share's interval in percent."""
    return Interval(interval.estimate * 100, interval.low * 100, interval.high * 100, interval.n)


def judged_rows(judged: Judged) -> list[str]:
    """The judge's verdict on each run's kept answers, % with bootstrap 95% intervals over the answers."""
    lines = [
        "The independent judge on the kept training data (% of kept answers; bootstrap 95% over answers; a run "
        "with two negatives counts both):",
        "",
        "| run | " + " | ".join(JUDGED_KEPT) + " |",
        "|---|" + "---:|" * len(JUDGED_KEPT),
    ]
    for name, columns in judged.items():
        if name.endswith(UNGUARDED):
            name = f"{name.removesuffix(UNGUARDED)}, before the guards (kept + {GUARD_DROPPED})"
        lines.append(
            f"| {name} | "
            + " | ".join(percent_cell(bootstrap_mean(np.array(list(v.values())))) for v in columns.values())
            + " |"
        )
    return lines


def kept_difference(judged: Judged, a: list[str], b: list[str], column: str) -> Interval:
    """Share of kept answers the judge gives ``column``'s label, records ``b`` - records ``a``, over the pool of
    (generation seed, anchor, answer) either side kept: an answer one side dropped counts for the other only, and
    one resample of the pool serves both sides (:func:`hardcse.stats.paired_bootstrap`), since two variants that
    share their generator and synthesis (``reuse``) keep overlapping sets of the same answers."""

    def shares(records: list[str]) -> dict[tuple, float]:
        return {(variant_of(r)[1], *pair): hit for r in records for pair, hit in judged[r][column].items()}

    side_a, side_b = shares(a), shares(b)
    pool = sorted(side_a.keys() | side_b.keys())
    values_a = np.array([side_a.get(k, np.nan) for k in pool])
    values_b = np.array([side_b.get(k, np.nan) for k in pool])
    return paired_bootstrap(values_a, values_b)["difference"]


def variant_of(record_name: str) -> tuple[str, int]:
    """'paper-seed-42' -> ('paper', 42) (a judged name's UNGUARDED suffix aside)."""
    return name_and_seed(record_name.removesuffix(UNGUARDED))


def assay_pairs(variants: list[str]) -> list[tuple[str, str]]:
    """Every variant against each reference present (B - A, A the reference); the references against each other."""
    pairs = [(a, b) for a, b in REFERENCE_PAIRS if a in variants and b in variants]
    pairs += [(a, b) for b in variants if b not in REFERENCES for a in REFERENCES if a in variants]
    return pairs + [(a, b) for a, b, _ in GENERATED_AND_MINED if (a, b) not in pairs and {a, b} <= set(variants)]


JUDGED_HELDOUT = (
    "judged_correct",
    "negative_judged",
    "negative_cosine_judged",
    "positive_judged",
    "positive_cosine_judged",
)
GENERATED_AND_MINED = (  # (A, B): what B - A isolates
    ("mined", "art-mined-negatives", "RL-tuned positives in place of the raw generator's, both with mined negatives"),
    (
        "art-mined-negatives",
        "art-two-negatives",
        "a generated negative added to the mined one; the positives are other samples",
    ),
    ("mined", "art-two-negatives", "both"),
)


def answers(comparison: Comparison, judged: Judged, records: list[Path]) -> list[str]:
    """One sentence per question of issue 41, from the tables above; a question whose variants are not recorded
    says which are missing."""
    of_variant: dict[str, list[Path]] = {}
    for record in records:
        of_variant.setdefault(variant_of(record.name)[0], []).append(record)
    lines = ["## Answers", ""]
    question = "Does the filter fix remove false negatives?"
    if {"paper", "filter-argmax"} <= of_variant.keys():
        paper = [r.name for r in of_variant["paper"]]
        unguarded = [name + UNGUARDED if name + UNGUARDED in judged else name for name in paper]
        argmax = [r.name for r in of_variant["filter-argmax"]]
        false_negatives, correct = "negatives judged entailment % (false negatives)", "negatives judged contradiction %"
        lines.append(
            f"- {question} Kept negatives the judge calls entailed, the paper's argmax rule with the guards against "
            "the recorded threshold rule without them (the paper's reward, the same texts): "
            f"{verdict(percent(kept_difference(judged, unguarded, argmax, false_negatives)), 1)} percentage points; "
            "against the threshold rule with the guards: "
            f"{verdict(percent(kept_difference(judged, paper, argmax, false_negatives)), 1)}. Kept negatives it "
            "calls contradictions, the same two comparisons: "
            f"{verdict(percent(kept_difference(judged, unguarded, argmax, correct)), 1)} and "
            f"{verdict(percent(kept_difference(judged, paper, argmax, correct)), 1)} (95% bootstrap over the negatives "
            "either side kept)."
        )
    else:
        lines.append(f"- {question} Not measured: needs paper and filter-argmax.")
    for variant in ("paper", "mined"):
        kept = [r.name for r in of_variant.get(variant, [])]
        if kept and all(name + UNGUARDED in judged for name in kept):
            unguarded = [name + UNGUARDED for name in kept]
            change = kept_difference(judged, unguarded, kept, "negatives judged entailment % (false negatives)")
            lines.append(
                f"- {question} The guards alone, {variant}: kept negatives the judge calls entailed, with - without "
                f"them: {verdict(percent(change), 1)} percentage points."
            )
    question = "Does the new reward keep difficulty while RL gains correctness?"
    paper_of_seed = {variant_of(r.name)[1]: r for r in of_variant.get("paper", [])}
    for variant in ("r2-gated", "hard-correct"):
        pairs = [(r, paper_of_seed.get(variant_of(r.name)[1])) for r in of_variant.get(variant, [])]
        helds = [(r, held_out(r), held_out(p) if p else None) for r, p in pairs]
        measured = [(r, h, p) for r, h, p in helds if h and p and all(h.get(k) and p.get(k) for k in JUDGED_HELDOUT)]
        if not measured:
            lines.append(f"- {question} Not measured: needs {variant} and paper of one generation seed.")
        for record, held, paper_held in measured:
            cell = {k: f"{difference(held, k)} ({difference(paper_held, k)})" for k in JUDGED_HELDOUT}
            lines.append(
                f"- {question} {record.name}, held-out tuned - raw generator (the paper's reward in brackets; * the "
                f"interval excludes zero): judge accuracy {cell['judged_correct']}, on negatives "
                f"{cell['negative_judged']}, on positives {cell['positive_judged']}; the cosine of judged-correct "
                f"negatives (higher: harder) {cell['negative_cosine_judged']}, of positives "
                f"{cell['positive_cosine_judged']}."
            )
    question = "Does generation add to mining?"
    for a, b, what in GENERATED_AND_MINED:
        if (a, b) not in comparison.differences:
            lines.append(f"- {question} ({what}) Not measured: needs {a} and {b}.")
            continue
        diff = comparison.differences[(a, b)]
        lines.append(
            f"- {question} {b} - {a} ({what}): STS-B dev {verdict(diff['STS-B-dev'])}, avg7 {verdict(diff['avg7'])}; "
            f"with 80% power this comparison finds a true STS-B dev difference of "
            f"{detectable_difference(diff['STS-B-dev']):.2f} or more."
        )
    if "mined" in comparison.groups:
        beats = [b for (a, b), d in comparison.differences.items() if a == "mined" and d["STS-B-dev"].low > 0]
        means = {g: summary[0] for g in comparison.groups if (summary := comparison.summary(g, "STS-B-dev"))}
        best = max(means, key=means.get)
        lines.append(
            f"- Beats mined negatives on STS-B dev with an interval above zero: {', '.join(beats) or 'no variant'} "
            f"(of {sum(a == 'mined' for a, _ in comparison.differences)} comparisons, none corrected for the others). "
            f"Highest STS-B dev mean: {best} ({means[best]:.2f})."
        )
    return lines


def difference(held: dict, measure: str) -> str:
    """A held-out measure's tuned - raw cell (3 decimals, * where its interval excludes zero)."""
    return interval_cell(Interval(**held[measure]["difference"]), 3)


def held_out(record: Path) -> dict | None:
    """Round 1's held-out tuned - raw comparison of a recorded run, if it tuned a generator."""
    return dict(heldout_rows(record)).get("round_1")
