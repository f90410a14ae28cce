"""ART's answers in one figure: each declared comparison of the evidence and the ablation pages as a point with its
95% interval (avg7 of the assay of each run's training data), drawn from the committed records alone.

    python benchmarks/art_forest.py

Writes benchmarks/results/art_forest.{md,json,png}. The intervals are the evidence pages' own
(art_evidence_tables.evidence_comparison: runs resampled, paired by generation seed, widened for few runs with t);
for each family of declared comparisons (the main page's three questions; the three ablations) the figure also
draws, thinner, the interval corrected for its three comparisons (Bonferroni: the same construction at the
1 - 0.05/6 quantiles), and the table gives it for avg7 and STS-B dev. An ablation's power is the one declared before
its runs where its three runs' own spread gives less (art_answers.DECLARED_ABLATION_POWER), as its page says it."""

import math
from pathlib import Path

from scipy import stats

from art_rounds import ASSAY, RESULTS, record_dir
from hardcse.data.sts import DEV_TASK
from hardcse.evaluation.compare import Comparison
from hardcse.figures import save_png
from hardcse.stats import Interval, clustered_half_width, detectable_difference
from lib.art_answers import ABLATION_SEEDS, DECLARED_ABLATION_POWER, DECLARED_SEEDS
from lib.art_evidence_tables import BASELINE, BOTH, MAIN, MINED, PRIMARY, assay_groups, common_runs, evidence_comparison
from lib.record import write_record
from lib.record_files import unpacked

GRPO = "cpu-full-grpo"
# (A, B, what B - A asks): the main page's three declared answers, what is reported beside them, then the paper's
# ablations (each declared)
MAIN_ROWS = [
    (BASELINE, MAIN, "ART (PPO) - raw generator"),
    (MINED, MAIN, "ART (PPO) - mined negatives"),
    (MINED, BOTH, "generated + mined - mined negatives"),
    (BASELINE, GRPO, "ART (GRPO, smooth r2) - raw generator"),
    (BASELINE, MINED, "mined negatives - raw generator"),
]
ABLATION_ROWS = [
    (MAIN, "ablation-no-filter", "no filter - ART (PPO)"),
    (MAIN, "ablation-one-round", "one round - ART (PPO)"),
    (MAIN, "ablation-no-difficulty", "no difficulty term - ART (PPO)"),
]
DECLARED = {(a, b) for a, b, _ in MAIN_ROWS[:3] + ABLATION_ROWS}
CORRECTED_FOR = 3  # each family of declared comparisons: the three questions, the three ablations


def corrected(d: Interval, runs: int, comparisons: int) -> Interval | None:
    """``d`` at the Bonferroni level 1 - 0.05/comparisons, built as the page builds its 95% interval
    (hardcse.stats.clustered_half_width at the corrected quantile). V_runs and V_pairs come back from the
    interval's standard error and Welch-Satterthwaite degrees of freedom: SE^2 = V_runs + V_pairs, df = (G-1) x
    SE^4 / V_runs^2. None where the interval keeps neither (one run a side, or no spread between runs)."""
    if d.se is None or d.df is None or runs < 2:
        return None
    v_runs = d.se**2 * math.sqrt((runs - 1) / d.df)
    half = clustered_half_width(v_runs, d.se**2 - v_runs, runs, q=1 - 0.05 / comparisons / 2)
    return Interval(d.estimate, d.estimate - half, d.estimate + half, d.n, d.se, d.df)


def per_seed(c: Comparison, a: str, b: str) -> dict[int, float]:
    """B - A of the groups' mean avg7 (each member's eval.json) within each generation seed both ran."""

    def mean(name: str, seed: int) -> float:
        scores = [m.record[PRIMARY] for m in c.groups[name] if m.cluster == seed]
        return sum(scores) / len(scores)

    return {seed: mean(b, seed) - mean(a, seed) for seed in sorted(common_runs(c.groups, a, b))}


def seed_tests(differences: list[float]) -> tuple[float, float]:
    """Two p-values of "no difference" from the per-seed differences alone: a paired t-test, and the exact sign-flip
    test (every assignment of signs to the seeds' differences; the share whose mean is at least as far from 0)."""
    import itertools

    t_p = float(stats.ttest_1samp(differences, 0).pvalue)
    observed = abs(sum(differences))
    flips = list(itertools.product((1, -1), repeat=len(differences)))
    extreme = sum(
        abs(sum(s * d for s, d in zip(signs, differences, strict=True))) >= observed - 1e-12 for signs in flips
    )
    return t_p, extreme / len(flips)


def comparisons(names: list[str], seeds: tuple[int, ...], rows: list[tuple[str, str, str]]) -> list[dict]:
    """Each row's assay difference B - A (avg7 and STS-B dev) over the generation seeds both sides ran."""
    folders = [record_dir(n, s) for n in names for s in seeds]
    with unpacked(folders) as plain:
        c = evidence_comparison(assay_groups(plain, ASSAY, [1, 2, 3]))
    found = []
    for a, b, what in rows:
        diff = c.differences[(a, b)]
        differences = per_seed(c, a, b)
        t_p, sign_p = seed_tests(list(differences.values()))
        found.append(
            {
                "a": a,
                "b": b,
                "what": what,
                "generation_seeds": sorted(common_runs(c.groups, a, b)),
                PRIMARY: diff[PRIMARY].to_dict(),
                DEV_TASK: diff[DEV_TASK].to_dict(),
                "detectable_80": round(detectable_difference(diff[PRIMARY]), 4),
                "declared": (a, b) in DECLARED,
                "per_seed": {str(seed): round(d, 4) for seed, d in differences.items()},
                "paired_t_p": round(t_p, 4),
                "sign_flip_p": round(sign_p, 4),
                "interval": diff[PRIMARY],
            }
        )
        if (a, b) in DECLARED:
            runs = len(found[-1]["generation_seeds"])
            for key, column in (("corrected", PRIMARY), ("corrected_dev", DEV_TASK)):
                if (fixed := corrected(diff[column], runs, CORRECTED_FOR)) is not None:
                    found[-1][key] = fixed
    return found


def draw(rows: list[dict], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(rows) + 1.4))
    for y, row in enumerate(reversed(rows)):
        d: Interval = row["interval"]
        colour = "C0" if d.excludes_zero() else "grey"
        if "corrected" in row:
            c = row["corrected"]
            ax.plot([c.low, c.high], [y, y], color=colour, lw=1, alpha=0.5)
        ax.errorbar(d.estimate, y, xerr=[[d.estimate - d.low], [d.high - d.estimate]], fmt="o", color=colour, capsize=3)
    labels = [f"{r['what']} ({len(r['generation_seeds'])} seeds)" for r in reversed(rows)]
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.axvline(0, color="black", lw=0.8)
    ax.axhline(len(ABLATION_ROWS) - 0.5, color="lightgrey", lw=0.8)
    ax.set_xlabel("difference in avg7 of the assayed encoders (Spearman x 100)")
    ax.set_title("95% intervals, blue where they exclude 0; thin: corrected for 3 comparisons", fontsize=9)
    fig.tight_layout()
    save_png(fig, png, dpi=120)


def main() -> None:
    settings = [BASELINE, MINED, MAIN, GRPO, BOTH]
    rows = comparisons(settings, DECLARED_SEEDS, MAIN_ROWS)
    ablations = comparisons([MAIN, *(b for _, b, _ in ABLATION_ROWS)], ABLATION_SEEDS, ABLATION_ROWS)
    for row in ablations:  # the power its page says: the declared one, where three runs' own spread gives less
        row["power_said"] = max(row["detectable_80"], DECLARED_ABLATION_POWER)
    rows += ablations
    draw(rows, RESULTS / "art_forest.png")
    lines = [
        "The evidence pages' answers (art_evidence.md, art_ablations.md), computed again from their records: the "
        "assay of each run's training triplets (3 training seeds a run), avg7 and STS-B dev, B - A over the "
        "generation seeds both sides ran. 95% intervals over generation runs and test pairs (runs resampled, paired "
        "by seed, widened with t for few runs); for each declared comparison also corrected for the three of its "
        f"family, the main questions or the ablations (Bonferroni, {100 * (1 - 0.05 / CORRECTED_FOR):.2f}%). An "
        f"ablation's 80% power is the {DECLARED_ABLATION_POWER:.2f} declared before its runs where its three runs' "
        "own spread (in brackets) gives less. Beside them, from the per-seed differences alone "
        "(each seed's mean over its training seeds): a paired t-test's p and the exact sign-flip test's p (with n "
        "seeds it cannot go below 2 / 2^n).",
        "",
        "![forest plot](art_forest.png)",
        "",
        "| comparison | seeds | avg7 | STS-B dev | 80% power at | avg7, corrected for 3 | STS-B dev, corrected for 3 "
        "| avg7 per seed | paired t p | sign-flip p |",
        "|---|---|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for row in rows:
        d, dev = row["interval"], Interval(**row[DEV_TASK])
        fixed = row["corrected"].signed() if "corrected" in row else ""
        fixed_dev = row["corrected_dev"].signed() if "corrected_dev" in row else ""
        seeds = ", ".join(map(str, row["generation_seeds"]))
        power = f"{row['detectable_80']:.2f}"
        if row.get("power_said", row["detectable_80"]) != row["detectable_80"]:
            power = f"{row['power_said']:.2f} ({power})"
        lines.append(
            f"| {row['what']} | {seeds} | {d.signed()} | {dev.signed()} | {power} | {fixed} | {fixed_dev} | "
            + ", ".join(f"{v:+.3f}" for v in row["per_seed"].values())
            + f" | {row['paired_t_p']:.3f} | {row['sign_flip_p']:.3f} |"
        )
    payload = {
        "machine": None,  # figures of the records, whose pages name their machines
        "rows": [
            {k: v for k, v in row.items() if k not in ("interval", "corrected", "corrected_dev")}
            | {k: row[k].to_dict() for k in ("corrected", "corrected_dev") if k in row}
            for row in rows
        ],
    }
    write_record(
        "art_forest",
        "ART's answers with their intervals, from the records",
        [*lines, ""],
        payload,
        machine=[
            "Machine: any (no machine decides these figures: they are computed from the committed records "
            "(benchmarks/results/art_evidence/), whose pages name the machines that made them)."
        ],
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
