"""What does ART's RL add on top of a warm-started generator? For each RL seed, PPO tunes the warm-started generator
(cpu-full's RL, its reward with the run's own discriminator and the starting encoder), then the warm-started and
the tuned generator write for the same held-out anchors with the same sampling seed; each side is filtered by the
paper's rule and judged by the NLI model that saw neither the discriminator's pairs nor the warm start's.

    python benchmarks/warm_rl.py --work DIR [--seeds 1 2 3 4 5] [--anchors 300] [--steps 150] [--candidates 4]
        [--name warm_rl]

``--work``: benchmarks/warm_start.py's work folder (its discriminator, judge and warm-started generator; made there
first if missing, with its defaults). Per seed and anchor: tuned - warm of each measure (synthetic accuracy of the
positive, the negative and their mean, kept or not); over the seeds: the mean with an interval that counts the
seeds' spread (t, G - 1 degrees of freedom) and the anchors' (hardcse.stats.seeds_by_items_mean). With
``--candidates`` k > 1 the tuned generator also writes best of k, against its one answer. Also each side's kept
fraction and kept triplets a minute of synthesis, false negatives and shortcut rates.

Run it alone on the cores. Writes benchmarks/results/NAME.md and NAME.json (command, date, CPU flags).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from lib.record import interval_cell, signed_interval, write_record
from lib.warm import (
    ALL_PROJECTIONS,
    false_negatives,
    graders,
    nli_model,
    synthesis_settings,
    warm_generator,
)

MEASURES = ("synthetic_accuracy_positive", "synthetic_accuracy_negative", "synthetic_accuracy", "kept")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True, help="benchmarks/warm_start.py's work folder")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5], help="RL and sampling seeds")
    parser.add_argument("--anchors", type=int, default=300, help="held-out corpus anchors each side writes for")
    parser.add_argument("--steps", type=int, default=150, help="the warm start's steps (its folder's, if made)")
    parser.add_argument("--candidates", type=int, default=4, help="best of k for the tuned side too; 1: not")
    parser.add_argument("--name", default="warm_rl", help="the record's name in benchmarks/results")
    args = parser.parse_args()

    from hardcse.art.config import ArtRunConfig
    from hardcse.art.rl.tuning import tune_generator
    from hardcse.art.rl.warm_start import read_record
    from hardcse.art.synthesis.anchors import split_anchors
    from hardcse.art.synthesis.heldout import per_anchor
    from hardcse.art.synthesis.triplets import synthesize
    from hardcse.config import load_config
    from hardcse.data.jsonl import read_jsonl
    from hardcse.engines import Engine
    from hardcse.stats import seeds_by_items_mean

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    config = load_config(ArtRunConfig, "cpu-full")
    engine = Engine.resolve(config.engine)
    discriminator_dir = nli_model("discriminator", work / "discriminator")
    judge_dir = nli_model("judge", work / "judge", whole_share=True)
    warm_prompts = dataclasses.replace(synthesis_settings(config, 5), few_shot=[])  # warm_start.py's default seed
    warm_dir = warm_generator(config, warm_prompts, args.steps, work)
    anchors = split_anchors(config.anchors).held_out[: args.anchors]
    discriminator, judge, encoder, reward = graders(config, discriminator_dir, judge_dir, engine)
    best_of = dataclasses.replace(config.filter, candidates=args.candidates)

    def written(source: str, seed: int, folder: Path, filter_config=config.filter) -> tuple[list[dict], float]:
        """A side's records for the anchors, and the minutes its synthesis took (generation, scoring, filtering)."""
        generation = dataclasses.replace(synthesis_settings(config, seed), few_shot=[])
        if not (folder / "synthesis.json").is_file():
            synthesize(source, anchors, generation, reward, filter_config, folder, engine=engine)
        report = json.loads((folder / "synthesis.json").read_text())
        return read_jsonl(folder / "synthetic.jsonl"), report["seconds"] / 60

    def measured(records: list[dict], seed: int) -> dict[str, np.ndarray]:
        prompts = dataclasses.replace(synthesis_settings(config, seed), few_shot=[])
        return per_anchor(records, judge, encoder, generator=prompts, engine=engine)

    sides: dict[str, list[dict]] = {"warm": [], "tuned": [], **({"tuned_best_of": []} if args.candidates > 1 else {})}
    per_seed = []
    for seed in args.seeds:
        folder = work / f"rl_seed{seed}"
        rl_config = dataclasses.replace(
            config,
            discriminator=str(discriminator_dir),
            generator=dataclasses.replace(
                config.generator, model=str(warm_dir), few_shot=[], seed=seed, lora_target_modules=ALL_PROJECTIONS
            ),
            rl=dataclasses.replace(config.rl, seed=seed, reference=str(warm_dir)),  # the KL keeps near the warm start
            reuse=False,
        )
        rl_minutes = None  # tuned by an earlier, interrupted call of this script: its time not known here
        if not (folder / "generator" / "rl_log.jsonl").is_file():
            rl_start = time.perf_counter()
            tune_generator(rl_config, folder / "rl", folder / "generator", discriminator=discriminator, engine=engine)
            rl_minutes = round((time.perf_counter() - rl_start) / 60, 2)
        rl_log = read_jsonl(folder / "generator" / "rl_log.jsonl")
        row = {"seed": seed, "rl_minutes": rl_minutes, "rl_steps": len(rl_log)}
        row["reward_first_last"] = [round(rl_log[0]["reward"], 4), round(rl_log[-1]["reward"], 4)]
        for side, source, filter_config in (
            ("warm", str(warm_dir), config.filter),
            ("tuned", str(folder / "generator"), config.filter),
            ("tuned_best_of", str(folder / "generator"), best_of),
        ):
            if side not in sides:
                continue
            records, minutes = written(source, seed, folder / side, filter_config)
            values = measured(records, seed)
            sides[side].append({"records": records, "values": values, "minutes": minutes})
            row[side] = {
                **{m: float(np.mean(values[m])) for m in MEASURES},
                "kept_per_minute": round(values["kept"].sum() / minutes, 1),
                "false_negatives": false_negatives(records, judge),
            }
        per_seed.append(row)

    def table(side: str, measure: str) -> np.ndarray:
        return np.stack([run["values"][measure] for run in sides[side]])

    differences = {}
    for after, before in (("tuned", "warm"), ("tuned_best_of", "tuned")):
        if after in sides:
            differences[f"{after} - {before}"] = {
                m: seeds_by_items_mean(table(after, m) - table(before, m)).to_dict() for m in MEASURES
            }
    summary = {}
    for side, runs in sides.items():
        summary[side] = {
            **{m: seeds_by_items_mean(table(side, m)).to_dict() for m in MEASURES},
            "kept_per_minute": float(np.mean([run["values"]["kept"].sum() / run["minutes"] for run in runs])),
            "false_negative_share": _mean_share([false_negatives(run["records"], judge) for run in runs]),
            "shortcuts": {
                k: float(np.nanmean(np.concatenate([run["values"][k] for run in runs])))
                for k in ("positive_deletion", "negative_added_negation", "parse_failure")
            },
        }
    payload = {
        "anchors": len(anchors),
        "seeds": args.seeds,
        "candidates": args.candidates,
        "warm_start": {k: read_record(warm_dir)[k] for k in ("config", "pairs", "loss_first", "loss_last")},
        "rl": {k: getattr(config.rl, k) for k in ("algorithm", "steps", "batch_size", "learning_rate", "epochs")},
        "per_seed": per_seed,
        "sides": summary,
        "differences": differences,
    }
    (work / "warm_rl_payload.json").write_text(json.dumps(payload, indent=2))
    write_record(args.name, "ART's RL on top of the warm start", page(payload), payload)


def _mean_share(rows: list[dict]) -> float | None:
    kept = sum(r["kept"] for r in rows)
    return sum(r["entailed"] or 0 for r in rows) / kept if kept else None


def page(p: dict) -> list[str]:
    rl = p["rl"]
    lines = [
        f"{p['anchors']} held-out corpus anchors, RL seeds {p['seeds']} (each also the two sides' sampling seed), "
        f"{rl['algorithm']} {rl['steps']} steps of {rl['batch_size']} rollouts, lr {rl['learning_rate']}, from the "
        f"warm start of {p['warm_start']['config']['steps']} steps (benchmarks/results/warm_start.md's), the KL's "
        "reference the warm-started generator (rl.reference). cpu-full's "
        "synthesis settings and the paper's argmax filter by the run's own discriminator (the quickstart's size); "
        "the judge trained on every pair of its own third. Intervals: over seeds (t) and anchors, 95%.",
        "",
        "| side | accuracy positive | accuracy negative | accuracy avg | kept fraction | kept a minute | "
        "false negatives | deletion positives | added negation | parse failure |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for side, r in p["sides"].items():
        sc, fn = r["shortcuts"], r["false_negative_share"]
        lines.append(
            f"| {side} | {interval_cell(r['synthetic_accuracy_positive'])} | "
            f"{interval_cell(r['synthetic_accuracy_negative'])} | "
            f"{interval_cell(r['synthetic_accuracy'])} | "
            f"{interval_cell(r['kept'])} | {r['kept_per_minute']:.1f} | {'-' if fn is None else f'{fn:.3f}'} | "
            f"{sc['positive_deletion']:.3f} | {sc['negative_added_negation']:.3f} | {sc['parse_failure']:.3f} |"
        )
    lines += [
        "",
        "Paired differences (per anchor and seed):",
        "",
        "| comparison | measure | difference |",
        "|---|---|---:|",
    ]
    for name, d in p["differences"].items():
        for measure, v in d.items():
            mark = " *" if v["low"] > 0 or v["high"] < 0 else ""
            lines.append(f"| {name} | {measure} | {signed_interval(v)}{mark} |")
    lines += ["", "\\* the interval excludes zero.", "", "Per seed:", ""]
    lines += ["| seed | RL minutes | reward first -> last | warm avg | tuned avg | warm kept | tuned kept |"]
    lines += ["|---:|---:|---|---:|---:|---:|---:|"]
    for row in p["per_seed"]:
        first, last = row["reward_first_last"]
        w, t = row["warm"], row["tuned"]
        lines.append(
            f"| {row['seed']} | {row['rl_minutes']} | {first:+.3f} -> {last:+.3f} | {w['synthetic_accuracy']:.3f} | "
            f"{t['synthetic_accuracy']:.3f} | {w['kept']:.3f} | {t['kept']:.3f} |"
        )
    return [*lines, ""]


if __name__ == "__main__":
    main()
