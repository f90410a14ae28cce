"""The report of an ART run folder (``report.md`` + ``plots/*.png``), and runs side by side.

The paper's analyses at the run's scale: STS per round with the delta to round 0 (Table 3 form), synthetic data
accuracy by an independent judge (Table 4), mean cosines of positives and negatives (Table 5), example triplets
(Table 6), plus what the encoder training did each round and the time every stage took.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from hardcse.art.analysis.tuning_report import plot_reward_per_round, reward_formula, rl_markdown  # noqa: E402
from hardcse.art.config import TRAIN_IN_RUN  # noqa: E402
from hardcse.atomic import write_text_atomic  # noqa: E402
from hardcse.data.jsonl import read_json_mapping  # noqa: E402
from hardcse.data.sts import DEV_TASK, SEVEN_TASKS  # noqa: E402
from hardcse.errors import HardcseError  # noqa: E402
from hardcse.figures import save_png  # noqa: E402
from hardcse.folder_checks import check_written_by, round_dirs, saved_config_values  # noqa: E402


def _read_json(path: Path) -> dict | None:
    return read_json_mapping(path) if path.is_file() else None


def _fmt(x: float | None, digits: int = 2) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def sts_rows(run_dir: Path) -> list[tuple[str, dict]]:
    """(round name, {task: score, avg7, delta}) for every evaluated round."""
    rows = []
    base = None
    for d in round_dirs(run_dir):
        ev = _read_json(d / "eval.json")
        if ev is None:
            continue
        row = dict(ev["scores"]) | {"avg7": ev.get("avg7")}
        if base is None:
            base = row
        if row["avg7"] is not None and base.get("avg7") is not None:
            row["delta"] = row["avg7"] - base["avg7"]
        rows.append((d.name, row))
    return rows


def sts_table(rows: list[tuple[str, dict]]) -> str:
    columns = [t for t in [*SEVEN_TASKS, "avg7", "delta", DEV_TASK] if any(r.get(t) is not None for _, r in rows)]
    header = [("Δavg7 vs round 0" if c == "delta" else c) for c in columns]
    lines = ["| round | " + " | ".join(header) + " |", "|---|" + "---:|" * len(columns)]
    for name, row in rows:
        cells = [
            (f"{row[c]:+.2f}" if c == "delta" else f"{row[c]:.2f}") if row.get(c) is not None else "" for c in columns
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _synthetic_table(rounds: list[Path]) -> str:
    lines = [
        "| round | anchors | kept triplets | eval matches dropped | parse fail pos | parse fail neg | judge acc pos % "
        "| judge acc neg % | cos(x,y+) | cos(x,y-) | reward pos | reward neg |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for d in rounds:
        m, s = _read_json(d / "measures.json"), _read_json(d / "synthesis.json")
        if m is None or s is None:
            continue
        cells = [
            str(s["anchors"]),
            f"{s['kept']} ({s['kept_fraction'] * 100:.1f}%)",
            # triplets that passed the filter but matched an STS test/dev text (exact / near), listed in
            # synthetic.jsonl with the text they matched
            "{} / {}".format(*(s["drop_reasons"].get(f"eval_{k}", 0) for k in ("exact", "near"))),
            _fmt(m["positive_parse_failure_rate"], 3),
            _fmt(m["negative_parse_failure_rate"], 3),
            _fmt(m["positive_accuracy"], 1),
            _fmt(m["negative_accuracy"], 1),
            _fmt(m["positive_mean_cosine"], 3),
            _fmt(m["negative_mean_cosine"], 3),
            _fmt(m["positive_mean_reward"], 3),
            _fmt(m["negative_mean_reward"], 3),
        ]
        lines.append(f"| {d.name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _used_triplets(training: dict) -> str:
    """``training.json``'s triplet count; under ``triplets_per_round``, of how many kept, or short of it."""
    used, budget = training["triplets"], training.get("triplets_per_round")
    if budget is None:
        return str(used)
    return f"{used} of {training['kept']} kept" if used >= budget else f"{used} (short of {budget})"


def _training_table(rounds: list[Path]) -> str:
    lines = [
        "| round | training triplets | best step | best STS-B dev | previous dev | handed on |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for d in rounds:
        t = _read_json(d / "training.json")
        if t is None:
            continue
        handed = t["handed_on"] + (f" ({t['why']})" if t.get("why") else "")
        lines.append(
            f"| {d.name} | {_used_triplets(t)} | {'' if t.get('best_step') is None else t['best_step']} "
            f"| {_fmt(t.get('best_dev'))} "
            f"| {_fmt(t['previous_dev'])} | {handed} |"
        )
    return "\n".join(lines)


def _examples(rounds: list[Path]) -> str:
    parts = []
    for d in rounds:
        m = _read_json(d / "measures.json")
        if not m or not m.get("examples"):
            continue
        parts.append(f"**{d.name}**\n\n| anchor x | positive y+ | negative y- |\n|---|---|---|")
        for e in m["examples"]:
            cells = [e[k].replace("|", "\\|") for k in ("anchor", "positive", "negative")]
            parts.append("| " + " | ".join(cells) + " |")
        parts.append("")
    return "\n".join(parts)


def _time_table(manifest: dict | None) -> str:
    if not manifest or not manifest.get("stages"):
        return ""
    lines = ["| stage | minutes (last attempt) | attempts |", "|---|---:|---:|"]
    total = 0.0
    for name, s in manifest["stages"].items():
        total += s.get("seconds", 0.0)
        minutes = f"{s['seconds'] / 60:.1f}" if "seconds" in s else "not finished"
        lines.append(f"| {name} | {minutes} | {s['attempts']} |")
    lines.append(f"| **total** | **{total / 60:.1f}** | |")
    return "\n".join(lines)


def plot_run(run_dir: Path, rounds: list[Path]) -> list[Path]:
    """reward_per_round.png, sts_per_round.png, cosine_histograms.png (those with data)."""
    plots = run_dir / "plots"
    plots.mkdir(exist_ok=True)
    written = []

    reward_plot = plot_reward_per_round(rounds, plots / "reward_per_round.png")
    written += [reward_plot] if reward_plot else []

    rows = sts_rows(run_dir)
    if rows:
        fig, ax = plt.subplots(figsize=(6, 4))
        x = list(range(len(rows)))
        for key, label in (("avg7", "average of the 7 STS tasks"), (DEV_TASK, "STS-B dev")):
            values = [r.get(key) for _, r in rows]
            if any(v is not None for v in values):
                ax.plot(x, [np.nan if v is None else v for v in values], marker="o", label=label)
        ax.set_xticks(x, [name for name, _ in rows])
        ax.set_ylabel("Spearman x 100")
        ax.set_title("STS per round")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        written.append(_save(fig, plots / "sts_per_round.png"))

    measured = [(d.name, _read_json(d / "measures.json")) for d in rounds]
    measured = [(n, m) for n, m in measured if m and (m.get("positive_cosines") or m.get("negative_cosines"))]
    if measured:
        fig, axes = plt.subplots(1, len(measured), figsize=(4.5 * len(measured), 3.8), squeeze=False, sharey=True)
        bins = np.linspace(-0.2, 1.0, 31)
        for ax, (name, m) in zip(axes[0], measured, strict=True):
            ax.hist(m.get("positive_cosines") or [], bins=bins, alpha=0.6, label="cos(x, y+)")
            ax.hist(m.get("negative_cosines") or [], bins=bins, alpha=0.6, label="cos(x, y-)")
            ax.set_title(name)
            ax.set_xlabel("cosine (starting encoder)")
            ax.legend()
        axes[0][0].set_ylabel("synthetic sentences")
        fig.tight_layout()
        written.append(_save(fig, plots / "cosine_histograms.png"))
    return written


def _save(fig: plt.Figure, path: Path) -> Path:
    return save_png(fig, path, dpi=100)


def _nli_model(run_dir: Path, config: dict, role: str) -> str:
    """The run's discriminator or judge in words: its folder, or how the run got the one it trained."""
    if config[role] != TRAIN_IN_RUN:
        return f"`{config[role]}`"
    training = config.get(f"{role}_training") or {}
    record = _read_json(run_dir / role / "training.json") or {}
    how = "copied from an earlier run's identical training" if "reused_from" in record else "trained in the run"
    pairs = f"{training.get('max_examples') or 'all'} NLI pairs"
    share = f" of the share `{training['share']}`" if training.get("share") else ""
    return f"{how} (`{role}/`: `{training.get('base_model')}`, {pairs}{share})"


def filter_description(config: dict) -> str:
    """The filter of a run's config.yaml in words (a config from before ``filter.rule`` is the threshold rule)."""
    k = config.get("candidates", 1)
    best_of = f"; best of {k} (the hardest of {k} answers per kind that passes)" if k > 1 else ""
    rule = config.get("rule", "threshold")
    if rule == "none":
        return "none (every parsed pair)" + best_of
    if rule == "argmax":
        margin = config.get("margin", 0.0)
        judged = "entailment / contradiction" + (f" by a margin of {margin}" if margin else "")
        kept = f"the discriminator's predicted label is {judged}"
    else:
        kept = f"P(entailment) >= {config['min_entailment']}, P(contradiction) >= {config['min_contradiction']}"
    if "max_pair_overlap" not in config:
        return kept + best_of
    overlap = f"positive and negative under {config['max_pair_overlap']} word overlap"
    return f"{kept}; no entailed negative, {overlap}{best_of}"


def art_run_config(run_dir: Path) -> dict:
    """The saved config of an ``art run`` folder; another command's folder is refused by name."""
    check_written_by(run_dir, "art run", "`hardcse art report` and `art compare` read `hardcse art run` folders")
    config = saved_config_values(run_dir)
    if not {"rl", "rounds", "generator"} <= set(config):
        raise HardcseError(f"{run_dir}: not a `hardcse art run` folder (its config.yaml has no rounds, rl, generator)")
    return config


def build_report(run_dir: str | Path) -> str:
    """The Markdown report of a run folder (complete or not); also writes the plots."""
    run_dir = Path(run_dir)
    config = art_run_config(run_dir)
    manifest = _read_json(run_dir / "manifest.json")
    rounds = [d for d in round_dirs(run_dir) if d.name != "round_0"]
    rl = config["rl"]
    tuned = config.get("tune_generator", True)  # a folder from before the key: RL always tuned
    generator = (
        f"`{config['generator']['model']}` tuned with {rl['algorithm'].upper()} "
        f"({rl['steps']} steps x {rl['batch_size']} rollouts a round)"
        if tuned
        else f"`{config['generator']['model']}` without RL (raw LLM baseline)"
    )
    discriminator = _nli_model(run_dir, config, "discriminator")
    judge = _nli_model(run_dir, config, "judge") if config["judge"] else "`none` (no judged accuracy)"
    from hardcse.art.synthesis.heldout import compare_markdown, effect_line

    heldout = [(d.name, _read_json(d / "heldout.json")) for d in rounds]
    out = [
        f"# ART run `{run_dir.name}`",
        "",
        effect_line(config, [(name, h) for name, h in heldout if h]),
        "",
        f"- encoder: `{config['encoder']}`; generator: {generator}",
        f"- discriminator: {discriminator}; judge: {judge}",
        f"- {config['rounds']} round(s), {config['synthesis_anchors']} new anchors each; filter: "
        f"{filter_description(config['filter'])}; reward {reward_formula(config['reward'])}",
        "",
        "## STS per round (Spearman x 100)",
        "",
        sts_table(sts_rows(run_dir)),
        "",
        "## Synthetic data per round",
        "",
        "Judged accuracy: the judge's argmax label is the target (entailment for y+, contradiction for y-), over "
        "parsed outputs. Cosines by the starting encoder, the same for every round.",
        "",
        _synthetic_table(rounds),
        "",
        "## Encoder training per round",
        "",
        _training_table(rounds),
        "",
    ]
    rl_table = rl_markdown(rounds, config)
    if rl_table:
        out += ["## Generator tuning per round", "", rl_table, ""]
    if any(h for _, h in heldout):
        out += ["## Raw vs tuned generator on held-out anchors", ""]
        out += [f"{name}:\n\n{compare_markdown(h)}\n" for name, h in heldout if h]
    examples = _examples(rounds)
    if examples:
        out += ["## Example triplets", "", examples]
    times = _time_table(manifest)
    if times:
        out += ["## Time per stage", "", times, ""]
    plots = plot_run(run_dir, rounds)
    if plots:
        out += ["## Plots", ""] + [f"![{p.stem}](plots/{p.name})" for p in plots] + [""]
    return "\n".join(out)


def write_report(run_dir: str | Path) -> Path:
    run_dir = Path(run_dir)
    return write_text_atomic(run_dir / "report.md", build_report(run_dir))


def pooled_measures(measures: list[dict]) -> dict:
    """Judged accuracy and mean cosines over several rounds' synthetic data together (weighted by parsed outputs)."""
    out: dict = {}
    for kind in ("positive", "negative"):
        parsed = [m["anchors"] * (1 - m[f"{kind}_parse_failure_rate"]) for m in measures]
        judged = [
            (m[f"{kind}_accuracy"], n)
            for m, n in zip(measures, parsed, strict=True)
            if m[f"{kind}_accuracy"] is not None
        ]
        cosines = [c for m in measures for c in m.get(f"{kind}_cosines", [])]
        total = sum(n for _, n in judged)
        out[f"{kind}_accuracy"] = sum(a * n for a, n in judged) / total if total else None
        out[f"{kind}_mean_cosine"] = sum(cosines) / len(cosines) if cosines else None
    return out


def _final_eval(run_dir: Path) -> dict:
    from hardcse.evaluation.results import last_round_eval

    record = last_round_eval(run_dir)
    if record is None:
        raise HardcseError(f"{run_dir}: no evaluated round (no round_*/eval.json)")
    return record


def _interval_cell(a: dict, b: dict, names: tuple[str, str]) -> str:
    """B - A in avg7 with its paired bootstrap interval; marked * when the interval excludes zero."""
    from hardcse.evaluation.compare import interval_cell
    from hardcse.evaluation.paired import paired_sts_bootstrap

    if a.get("avg7") is None or b.get("avg7") is None:
        return "-"
    return interval_cell(paired_sts_bootstrap(a, b, names=names)["avg7"])


def compare_runs(run_dirs: list[str | Path], baseline: str | Path | None = None) -> str:
    """One row per run: its last evaluated round against its round 0 (avg7 difference with its paired bootstrap
    95% interval over test pairs), against ``baseline``'s final encoder when given, and the synthetic-data
    measures over all its rounds together (runs with the same anchor budget compare like for like); an
    unfinished run is marked."""
    base = _final_eval(Path(baseline)) if baseline is not None else None
    header = "| run | rounds | round 0 avg7 | final avg7 | Δ vs round 0 [95%] |"
    header += f" Δ vs {Path(baseline).name} [95%] |" if base is not None else ""
    header += " final STS-B dev | kept triplets | training triplets | judge acc pos % | judge acc neg % |"
    header += " cos(x,y+) | cos(x,y-) |"
    lines = [header, "|---|" + "---:|" * (header.count("|") - 2)]
    for run_dir in map(Path, run_dirs):
        art_run_config(run_dir)
        rows = sts_rows(run_dir)
        if not rows:
            raise HardcseError(f"{run_dir}: no evaluated round (no round_*/eval.json)")
        rounds = [d for d in round_dirs(run_dir) if d.name != "round_0"]
        kept = sum((_read_json(d / "synthesis.json") or {}).get("kept", 0) for d in rounds)
        trained = sum((_read_json(d / "training.json") or {}).get("triplets", 0) for d in rounds)
        pooled = pooled_measures([m for m in (_read_json(d / "measures.json") for d in rounds) if m])
        final = rows[-1][1]
        manifest = _read_json(run_dir / "manifest.json") or {}
        finished = bool(manifest.get("runs")) and "finished" in manifest["runs"][-1]
        name = run_dir.name + ("" if finished else " (unfinished)")
        final_eval, first_eval = _final_eval(run_dir), _read_json(run_dir / "round_0" / "eval.json") or {}
        cells = [name, str(len(rows) - 1), _fmt(rows[0][1].get("avg7")), _fmt(final.get("avg7"))]
        cells.append(_interval_cell(first_eval, final_eval, (f"{run_dir}/round_0", str(run_dir))))
        if base is not None:
            cells.append(_interval_cell(base, final_eval, (str(baseline), str(run_dir))))
        cells += [_fmt(final.get(DEV_TASK)), str(kept), str(trained), _fmt(pooled["positive_accuracy"], 1)]
        cells += [_fmt(pooled["negative_accuracy"], 1), _fmt(pooled["positive_mean_cosine"], 3)]
        cells.append(_fmt(pooled["negative_mean_cosine"], 3))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(
        "\n(Δ: avg7 difference of the final encoder, with the paired bootstrap 95% interval over STS test pairs, "
        "1,000 resamples; * the interval excludes zero. Judged accuracy and cosines: all rounds' synthetic data "
        "together.)"
    )
    return "\n".join(lines)
