"""The tables and plot of ART's evidence page (benchmarks/art_rounds.py): per-seed `art compare` tables, held-out
tuned - raw generator per round, each setting's final encoders (the adaptive runs' own) and the assay of each
run's training data, against the raw-LLM baseline, the mined-negative baseline and the faithful setting (the
answers' sentences: art_answers.py)."""

import json
from dataclasses import replace
from pathlib import Path

from hardcse.art.analysis.report import compare_runs
from hardcse.evaluation.compare import Comparison, compare_groups, comparison_markdown, interval_cell
from hardcse.evaluation.results import Result, load_result
from hardcse.folder_checks import round_dirs
from hardcse.stats import Interval
from lib.provenance import machine_line
from lib.record_assay import assayed, training_triplets

BASELINE = "baseline-raw-llm"
MAIN = "cpu-full"
MINED = "baseline-mined-negatives"
ART = (MAIN, "cpu-full-grpo")  # ART itself (PPO, GRPO): also compared with the mined-negative baseline
BOTH = "art-two-negatives"  # ART's data with a generated and a mined negative: also against mined negatives alone
LABELS = {
    MAIN: "ART (PPO, paper's reward)",
    "cpu-full-grpo": "ART (GRPO, smooth r2)",
    BOTH: "generated + mined",
    BASELINE: "raw generator",
    MINED: "mined negatives",
}


HELDOUT = {  # held-out measure: what it answers (heldout.json keys; tuned - raw)
    "reward": "reward",
    "parse_failure": "format: parse failures",
    "reward_parsed": "meaning: reward of parsed answers",
    "p_target_parsed": "meaning: P(target label) of parsed",
    "judged_correct": "judge accuracy",
}


def heldout_rows(folder: Path) -> list[tuple[str, dict]]:
    """(round, heldout.json) for every round of a run that compared the raw and the tuned generator."""
    return [
        (d.name, json.loads((d / "heldout.json").read_text()))
        for d in round_dirs(folder)
        if (d / "heldout.json").is_file()
    ]


def setting_groups(folders: list[Path]) -> dict[str, list[Result]]:
    """Each config's finished records (one per generation seed, each its own cluster: the interval is then widened
    for few runs as the assay's is), named by the config: the groups of ``hardcse compare``."""
    groups: dict[str, list[Result]] = {}
    for folder in folders:
        result = replace(load_result(str(folder)), cluster=seed_of(folder))
        groups.setdefault(setting(folder), []).append(result)
    return groups


def name_and_seed(record_name: str) -> tuple[str, int]:
    """'cpu-full-seed-42' -> ('cpu-full', 42): the config name and generation seed of a record NAME-seed-S."""
    name, _, seed = record_name.rpartition("-seed-")
    return name, int(seed)


def setting(folder: Path) -> str:
    """The config name of a record folder NAME-seed-S."""
    return name_and_seed(folder.name)[0]


def seed_of(folder: Path) -> int:
    """The generation seed of a record folder NAME-seed-S."""
    return name_and_seed(folder.name)[1]


def evidence_pairs(names: list[str]) -> list[tuple[str, str]]:
    """The comparisons of the page (A, B: B - A), for the settings present: every setting against the raw-LLM
    baseline; ART (PPO, GRPO) and generated + mined against mined negatives; the rest against the faithful
    setting (cpu-full)."""
    pairs = [(BASELINE, n) for n in names if BASELINE in names and n != BASELINE]
    pairs += [(MINED, n) for n in (*ART, BOTH) if MINED in names and n in names]
    return pairs + [(MAIN, n) for n in names if MAIN in names and n not in (MAIN, BASELINE, MINED)]


def runs_of(members: list[Result]) -> set[int]:
    """The generation runs (clusters) a group's members come from."""
    return {m.cluster for m in members if m.cluster is not None}


def common_runs(groups: dict[str, list[Result]], a: str, b: str) -> set[int]:
    """The generation runs both groups hold: what a comparison of the two pairs."""
    return runs_of(groups[a]) & runs_of(groups[b])


def evidence_comparison(groups: dict[str, list[Result]]) -> Comparison:
    """``evidence_pairs`` of ``groups`` with paired bootstrap intervals, each pair on the generation seeds both
    sides ran (so an ablation with 3 seeds is paired with the faithful setting's same 3): whole runs resampled,
    paired by generation seed, the interval widened for few runs (hardcse/evaluation/paired.py). The same
    test-pair resamples serve every pair."""
    pairs, differences = [], {}
    for a, b in evidence_pairs(list(groups)):
        common = common_runs(groups, a, b)
        if not common:
            continue
        both = {n: [m for m in groups[n] if m.cluster in common] for n in (a, b)}
        pairs.append((a, b))
        differences[(a, b)] = compare_groups(both, [(a, b)]).differences[(a, b)]
    every = compare_groups(groups, [])  # the columns and the resampling settings
    return Comparison(every.groups, pairs, differences, every.resamples, every.seed, every.columns)


def assay_groups(folders: list[Path], assay: Path, train_seeds: list[int]) -> dict[str, list[Result]]:
    """Each setting's assayed encoders (a run's training data x each training seed), clustered by generation seed."""
    groups: dict[str, list[Result]] = {}
    for folder in folders:
        data = training_triplets(folder)
        members = assayed(folder.name, assay, train_seeds, seed_of(folder), data, cluster=True)
        groups.setdefault(setting(folder), []).extend(members)
    return groups


def label(name: str) -> str:
    return f"{LABELS[name]} (`{name}`)" if name in LABELS else f"`{name}`"


PRIMARY = "avg7"  # the answer's measure: the seven STS test sets (STS-B dev selected settings and checkpoints)


def interim_note(c: Comparison) -> str:
    """A sentence naming the compared pairs with one generation run in common (their intervals cover the test pairs
    alone), or '' where there are none."""
    single = [f"{b} - {a}" for a, b in c.pairs if len(common_runs(c.groups, a, b)) < 2]
    if not single:
        return ""
    return (
        f" With one generation run a side ({', '.join(single)}) an interval covers the test pairs alone, not the "
        "spread between runs: its * is not a finding."
    )


def assay_lines(
    c: Comparison, train_seeds: list[int], steps: int, assays: list[dict], rows: dict[str, int]
) -> list[str]:
    """The assay's tables (every setting's scores, every difference) and how the assays ran; ``rows``: each record's
    assayed triplets (the records with fewer than the most are named)."""
    most = max(rows.values())
    fewer = [f"{name} {n}" for name, n in rows.items() if n < most]
    short = f" ({most} a run; fewer where a round kept fewer than it trains on: {', '.join(fewer)})" if fewer else ""
    minutes = sum(a["minutes"] for a in assays)
    machines = "; ".join(sorted({machine_line(a["machine"], a["date"]) for a in assays}))
    return [
        "## The assay of each run's training data",
        "",
        f"Each run's training triplets{short} (every round's first `triplets_per_round` kept, rounds in order) "
        f"train the bundled encoder for {steps} steps at batch 32 (configs/assay.yaml, no dev gating) at training "
        f"seeds {', '.join(map(str, train_seeds))}. Intervals: paired bootstrap 95% over test pairs and generation "
        "runs, each drawn run with all its training seeds (its mean already holds their spread), paired by generation "
        "seed (a seed sets a setting's anchors, sampling, RL and training), and widened for few runs: the estimate "
        "+- sqrt(t_{G-1}^2 x G/(G-1) x V_runs + 1.96^2 x V_pairs), G the runs a side, V_runs the variance over the "
        "run draws on the test pairs themselves, V_pairs over the test-pair resamples (hardcse/evaluation/paired.py;"
        f" conservative); * excludes zero.{interim_note(c)} The assays ran "
        f"{minutes:.1f} min in all ({machines}); each one's command: art_evidence/assay/NAME.json.",
        "",
        "Scores: mean +- sd over a setting's members (n: its generation seeds x training seeds, all it ran; a"
        " member's seed is its generation seed x 100 + its training seed); each difference below is over the"
        " generation seeds both sides ran.",
        "",
        # every interval, without compare's verdict lines: the verdicts are the Answers' (one declared per
        # question; none with one run a side)
        *(line for line in comparison_markdown(c).splitlines() if not line.startswith("- ")),
        "",
    ]


def per_seed_tables(folders: list[Path]) -> list[str]:
    """One `art compare` table per seed: each run against its round 0 and the same seed's raw-LLM baseline."""
    lines = [
        "Per seed (`art compare`): one run a side, so each interval covers the STS test pairs alone, not the spread"
        " between generation runs: a * there is not a finding (the Answers above are).",
        "",
    ]
    seeds = list(dict.fromkeys(seed_of(f) for f in folders))
    for seed in seeds:
        members = [f for f in folders if seed_of(f) == seed]
        baseline = next((f for f in members if setting(f) == BASELINE), None)
        title = [f"Seed {seed}:", ""] if len(seeds) > 1 else []
        lines += [*title, compare_runs(members, baseline=baseline), ""]
    return lines


def evidence_lines(folders: list[Path], comparison: Comparison, png: Path) -> list[str]:
    """ART's questions in one table each (held-out tuned - raw per round; final encoders - the raw-LLM baseline's
    and - cpu-full's, ART's also - the mined-negative baseline's) and one plot of both."""
    import matplotlib

    from hardcse.figures import save_png

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [3, 2]})
    lines = [*heldout_evidence(folders, left), *final_evidence(comparison, right)]
    fig.tight_layout()
    save_png(fig, png, dpi=120)
    return [*lines, f"![evidence]({png.parent.name}/{png.name})", ""]


def heldout_evidence(folders: list[Path], ax) -> list[str]:
    """The held-out table (every run that tunes, every round) and its panel: reward, format and meaning."""
    lines = [
        "Held-out anchors, tuned - raw generator per round (95% bootstrap intervals over anchors, paired; * excludes"
        " zero): is the tuned generator's data better, and is the gain format or meaning?",
        "",
        "| run | round | " + " | ".join(HELDOUT.values()) + " |",
        "|---|---|" + "---:|" * len(HELDOUT),
    ]
    keys = {"reward": "reward", "parse_failure": "parse fail", "p_target_parsed": "P(target)"}  # panel: short names
    tuned = [(f, rows) for f in folders if (rows := heldout_rows(f))]
    n_rounds = max((len(rows) for _, rows in tuned), default=0)
    width = 0.8 / max(1, len(tuned))
    # one colour per setting, one marker per seed
    colours = {name: f"C{i}" for i, name in enumerate(dict.fromkeys(setting(f) for f, _ in tuned))}
    markers = {seed: "osD^v"[i % 5] for i, seed in enumerate(dict.fromkeys(seed_of(f) for f, _ in tuned))}
    for i, (folder, rows) in enumerate(tuned):
        for r, (name, record) in enumerate(rows):
            # a measure the run could not take is None (judge accuracy without a judge: the ablation seeds)
            diff = {key: Interval(**record[key]["difference"]) for key in HELDOUT if record.get(key) is not None}
            cells = [interval_cell(diff[key], digits=3) if key in diff else "undefined" for key in HELDOUT]
            lines.append(f"| {folder.name} | {name} | " + " | ".join(cells) + " |")
            for k, key in enumerate(keys):
                d = diff[key]
                x = k * (n_rounds + 1) + r + (i - (len(tuned) - 1) / 2) * width
                label = folder.name if (k, r) == (0, 0) else None
                style = {"fmt": markers[seed_of(folder)], "color": colours[setting(folder)]}
                ax.errorbar(x, d.estimate, yerr=_error_bar(d), capsize=3, label=label, **style)
    ax.axis("on" if tuned else "off")
    if tuned:
        ticks = [k * (n_rounds + 1) + r for k in range(len(keys)) for r in range(n_rounds)]
        ax.set_xticks(ticks, [f"{name}\nround {r + 1}" for name in keys.values() for r in range(n_rounds)], fontsize=7)
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_title("held-out: tuned - raw generator (95% CI; P(target): of parsed answers)")
        ax.legend(fontsize=7)
    return [*lines, ""]


def final_evidence(c: Comparison, ax) -> list[str]:
    """The final-encoder table (avg7 against each reference; STS-B dev chose these checkpoints) and its panel (the
    first reference)."""
    references = list(dict.fromkeys(a for a, _ in c.pairs))
    ax.axis("on" if c.pairs else "off")
    if not c.pairs:
        return []
    lines = [
        "Final encoders, avg7 (the adaptive runs' own: STS-B dev chose their checkpoints, so it is not compared),"
        " mean over the generation seeds both sides ran (paired bootstrap 95% intervals over test pairs and runs,"
        f" widened for few runs; * excludes zero).{interim_note(c)}",
        "",
        f"| run | seeds | {' | '.join(f'avg7 - {ref}' for ref in references)} |",
        "|---|---|" + "---:|" * len(references),
    ]
    for name, members in c.groups.items():
        diffs = [c.differences.get((ref, name)) for ref in references]
        if not any(diffs):
            continue
        cells = [interval_cell(d[PRIMARY] if d else None) for d in diffs]
        seeds = ", ".join(str(m.cluster) for m in members)
        lines.append(f"| {name} | {seeds} | " + " | ".join(cells) + " |")
    shown = [(b, diff) for (a, b), diff in c.differences.items() if a == references[0]]
    for j, (_, diff) in enumerate(shown):
        d = diff[PRIMARY]
        ax.errorbar(d.estimate, len(shown) - j, xerr=_error_bar(d), fmt="o", color="C0", capsize=3)
    runs = [len(common_runs(c.groups, references[0], b)) for b, _ in shown]
    ax.set_yticks(range(len(shown), 0, -1), [f"{b} ({g})" for (b, _), g in zip(shown, runs, strict=True)], fontsize=7)
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_title(f"final encoder - {references[0]}, avg7 (95% CI; generation runs)")
    return [*lines, ""]


def _error_bar(d: Interval) -> list[list[float]]:
    """matplotlib's asymmetric error bar of one interval."""
    return [[d.estimate - d.low], [d.high - d.estimate]]


def seed_groups(c: Comparison) -> list[str]:
    """With several seeds of a setting: each setting's final encoders per task as mean ± sd over its seeds (the
    differences are the final-encoder table's: avg7 only)."""
    if all(len(members) < 2 for members in c.groups.values()):
        return []
    scores = Comparison(c.groups, [], {}, c.resamples, c.seed, c.columns)
    return ["Across seeds (`hardcse compare`, final round of each run):", "", comparison_markdown(scores), ""]
