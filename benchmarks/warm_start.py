"""Does a supervised warm start make the bundled generator do ART's task? The raw generator (as cpu-full ships it,
one demonstration; one drawn per anchor from a pool of ten; none) against the warm-started one (no demonstration),
each with best of k (``filter.candidates``) and each with mined negatives (the baseline), on the same held-out
corpus anchors, judged by an NLI model that never saw the warm start's pairs nor the discriminator's.

    python benchmarks/warm_start.py --out DIR [--anchors 300] [--steps 150] [--short-steps 50] [--seed 5]
        [--candidates 4] [--judge whole-share|quickstart] [--name warm_start] [--warm-dtype float32]
        [--sides SIDE ...]

Per side it writes a positive and a negative for each anchor (the mined sides: a positive, the negative mined) at
cpu-full's synthesis settings and filters them with the paper's rule (argmax) by the reward's discriminator.
Measures, each with a 95% bootstrap interval over anchors (and warm - raw paired,
hardcse/art/synthesis/heldout.py):

- synthetic accuracy (the paper's Table 4): the share of anchors whose positive the judge labels entailment, whose
  negative it labels contradiction, and their mean; a response the parser rejected counts as wrong;
- kept fraction (anchors with a kept triplet / anchors) and kept triplets per minute of generation and filtering;
- false negatives (kept negatives the judge labels entailment), the shortcuts (deletion positives, added-negation
  negatives, demonstration words), parse failures and the cosines of correct answers (Table 5's difficulty).

The NLI models are trained here, once per machine and code (hardcse/discriminator/kept.py's cache), each on its own
third of the NLI training pairs by premise (hardcse/data/nli.py SHARES): the discriminator on ``discriminator``, the
judge on ``judge``, the warm start reads ``warm_start``. The discriminator is the quickstart's (8,000 pairs, what a
first run trains); the judge by default every pair of its third for two epochs (configs/nli-judge.yaml).
Run it alone on the cores. Writes benchmarks/results/NAME.md and NAME.json (command, date, CPU flags).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from lib.record import interval_cell, number_cell, signed_interval, write_record
from lib.warm import false_negatives, graders, nli_accuracy, nli_model, record_of, synthesis_settings, warm_generator
from lib.warm_pages import nli_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="work folder (NLI models, the warm start, each side's texts)")
    parser.add_argument("--anchors", type=int, default=300, help="held-out corpus anchors each side writes for")
    parser.add_argument("--steps", type=int, default=150, help="warm-start steps of 8 pairs")
    parser.add_argument("--short-steps", type=int, default=50, help="a shorter warm start beside it; 0: none")
    parser.add_argument("--seed", type=int, default=5, help="the generator's sampling seed")
    parser.add_argument("--candidates", type=int, default=4, help="k of the best-of-k sides (filter.candidates)")
    parser.add_argument(
        "--judge",
        choices=("whole-share", "quickstart"),
        default="whole-share",
        help="the judge's training: every pair of its share for two epochs (configs/nli-judge.yaml), or the "
        "quickstart's 8,000 pairs",
    )
    parser.add_argument("--name", default="warm_start", help="the record's name in benchmarks/results")
    parser.add_argument(
        "--warm-dtype",
        choices=("float32", "bfloat16"),
        default="float32",
        help="the base model's weights while a warm start trains (warm_start.dtype; bfloat16: where the CPU has it)",
    )
    parser.add_argument(
        "--sides", nargs="+", help="only these sides (and the comparisons between them); default: every side"
    )
    args = parser.parse_args()

    from hardcse.art.config import ArtRunConfig
    from hardcse.art.synthesis.anchors import split_anchors
    from hardcse.art.synthesis.heldout import SYNTHETIC_ACCURACY, compare, per_anchor
    from hardcse.art.synthesis.triplets import synthesize
    from hardcse.config import load_config
    from hardcse.data.jsonl import read_jsonl
    from hardcse.engines import Engine
    from hardcse.stats import bootstrap_mean

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    config = load_config(ArtRunConfig, "cpu-full")
    engine = Engine.resolve(config.engine)
    generation = synthesis_settings(config, args.seed)
    no_demonstration = dataclasses.replace(generation, few_shot=[])
    # hard-correct's pool of ten demonstrations, one drawn per anchor and kind: no one demonstration's words go with
    # every anchor
    pool = load_config(ArtRunConfig, "hard-correct").generator
    rotating = dataclasses.replace(generation, few_shot=pool.few_shot, demonstrations=pool.demonstrations)
    best_of = dataclasses.replace(config.filter, candidates=args.candidates)
    k = f"best_of_{args.candidates}"
    started = time.perf_counter()
    discriminator_dir = nli_model("discriminator", out / "discriminator")
    # named by its training, so warm_rl.py (which grades with the whole-share judge) never takes the other
    whole = args.judge == "whole-share"
    judge_dir = nli_model("judge", out / ("judge" if whole else "judge_quickstart"), whole_share=whole)
    nli_minutes = (time.perf_counter() - started) / 60
    short = f"warm_{args.short_steps}_steps"
    wanted = set(args.sides or ()) or None

    def asked(*names: str) -> bool:
        return wanted is None or bool(wanted & set(names))

    config = dataclasses.replace(config, warm_start=dataclasses.replace(config.warm_start, dtype=args.warm_dtype))
    warm_dir = warm_generator(config, no_demonstration, args.steps, out)
    short_dir = (
        warm_generator(config, no_demonstration, args.short_steps, out, short)
        if args.short_steps and asked(short)
        else None
    )
    # the same warm start without the pairs that teach a shortcut (warm_start.drop_shortcuts)
    clean_dir = (
        warm_generator(config, no_demonstration, args.steps, out, "warm_start_clean", drop_shortcuts=True)
        if asked("warm_clean", f"warm_clean_{k}", "warm_clean_mined_negatives")
        else None
    )

    anchors = split_anchors(config.anchors).held_out[: args.anchors]
    discriminator, judge, encoder, reward = graders(config, discriminator_dir, judge_dir, engine)
    raw = config.generator.model
    sides = {  # side: (generator, its prompts' settings, the filter)
        "raw": (raw, generation, config.filter),
        "raw_rotating_demonstration": (raw, rotating, config.filter),
        "raw_no_demonstration": (raw, no_demonstration, config.filter),
        "warm": (str(warm_dir), no_demonstration, config.filter),
        **({short: (str(short_dir), no_demonstration, config.filter)} if short_dir else {}),
        f"raw_{k}": (raw, generation, best_of),
        f"warm_{k}": (str(warm_dir), no_demonstration, best_of),
        # the baseline a user tries first (baseline-mined-negatives): the raw generator's positives, each negative
        # mined from the training corpus by the encoder (the filter then checks the positive only)
        "raw_mined_negatives": (raw, generation, config.filter),
        "warm_mined_negatives": (str(warm_dir), no_demonstration, config.filter),
        **(
            {
                "warm_clean": (str(clean_dir), no_demonstration, config.filter),
                f"warm_clean_{k}": (str(clean_dir), no_demonstration, best_of),
            }
            if clean_dir
            else {}
        ),
    }
    unknown = sorted((wanted or set()) - set(sides))
    if unknown:
        parser.error(f"--sides: {unknown[0]} is not a side; choose from {', '.join(sides)}")
    sides = {side: value for side, value in sides.items() if asked(side)}
    corpus = split_anchors(config.anchors).train
    results, records = {}, {}
    for side, (source, side_generation, side_filter) in sides.items():
        folder = out / side
        mined = {"mine_from": corpus, "mining": config.mining} if side.endswith("_mined_negatives") else {}
        if not (folder / "synthesis.json").is_file():
            synthesize(source, anchors, side_generation, reward, side_filter, folder, engine=engine, **mined)
        records[side] = read_jsonl(folder / "synthetic.jsonl")
        report = json.loads((folder / "synthesis.json").read_text())
        minutes = report["seconds"] / 60  # generation, scoring and filtering (the model's loading aside)
        measured = per_anchor(records[side], judge, encoder, generator=side_generation, engine=engine)
        kept = measured["kept"]
        results[side] = {
            "source": source,
            "demonstrations": len(side_generation.few_shot),
            "shown": side_generation.demonstrations or len(side_generation.few_shot),
            "candidates": side_filter.candidates,
            **{k: bootstrap_mean(measured[k]).to_dict() for k in SYNTHETIC_ACCURACY},
            "kept_fraction": bootstrap_mean(kept).to_dict(),
            "kept": int(kept.sum()),
            "synthesis_minutes": round(minutes, 2),
            "kept_per_minute": round(kept.sum() / minutes, 1),
            "false_negatives": false_negatives(records[side], judge),
            "measures": {k: float(np.nanmean(v)) if np.isfinite(v).any() else None for k, v in measured.items()},
            "synthesis": {k: report.get(k) for k in ("kept", "drop_reasons", "seconds", "tokens_per_second")},
        }
    comparisons = [  # (after, before): after - before, paired by anchor
        ("warm", "raw"),
        ("warm", "raw_no_demonstration"),
        ("raw_rotating_demonstration", "raw"),
        *([("warm", short)] if short_dir else []),
        (f"raw_{k}", "raw"),
        (f"warm_{k}", "warm"),
        (f"warm_{k}", "raw_mined_negatives"),
        ("warm_clean", "warm"),
        (f"warm_clean_{k}", f"warm_{k}"),
        (f"warm_clean_{k}", "raw_mined_negatives"),
    ]
    comparisons = [(after, before) for after, before in comparisons if after in sides and before in sides]
    terms = [t.name for t in reward.terms]
    paired = {}
    for after, before in comparisons:
        name = f"{after} - {before}"
        prompts = sides[after][1] if sides[after][1] == sides[before][1] else None  # leaks: one prompt set only
        paired[name] = compare(records[before], records[after], judge, encoder, terms, prompts, engine)
    payload = {
        "anchors": len(anchors),
        "seed": args.seed,
        "candidates": args.candidates,
        "judge_training": args.judge,
        "warm_start": record_of(warm_dir),
        "short_warm_start": None
        if short_dir is None
        else record_of(short_dir, ("config", "loss_first", "loss_last", "seconds")),
        "clean_warm_start": None if clean_dir is None else record_of(clean_dir),
        "nli_minutes": round(nli_minutes, 1),
        "nli": {
            "discriminator": nli_accuracy(discriminator, out / "discriminator_eval.json"),
            "judge": nli_accuracy(judge, judge_dir.with_name(judge_dir.name + "_eval.json")),
        },
        "sides": results,
        "paired": paired,
    }
    (out / "payload.json").write_text(json.dumps(payload, indent=2))  # the page can be made again from it
    write_record(args.name, "A supervised warm start of the generator", page(payload), payload)


def page(p: dict) -> list[str]:
    w = p["warm_start"]
    lines = [
        f"{p['anchors']} held-out corpus anchors, cpu-full's synthesis settings (temperature 0.8, the paper's argmax "
        f"filter), sampling seed {p['seed']}. Warm start: {w['config']['steps']} steps of {w['config']['batch_size']} "
        f"NLI pairs (its third of the pairs), lr {w['config']['learning_rate']}, LoRA r 16 on all seven projections, "
        f"base weights in {w['config']['dtype']}, "
        f"loss {w['loss_first']:.3f} -> {w['loss_last']:.3f}, {w['seconds'] / 60:.1f} min. The reward's "
        "discriminator (it filters): the quickstart's (8,000 pairs of its third, one epoch). The judge (it grades): "
        + (
            "every pair of its own third, two epochs (configs/nli-judge.yaml)."
            if p.get("judge_training") == "whole-share"
            else "the quickstart's size on its own third."
        )
        + f" Best of k: k = {p.get('candidates')}."
        + (
            f" A shorter warm start beside it: {sw['config']['steps']} steps, loss {sw['loss_first']:.3f} -> "
            f"{sw['loss_last']:.3f}, {sw['seconds'] / 60:.1f} min."
            if (sw := p.get("short_warm_start"))
            else ""
        )
        + (
            f" The warm_clean sides' warm start leaves out the pairs that teach a shortcut "
            f"(warm_start.drop_shortcuts: {cw['pairs']['shortcut']} of the pairs read), otherwise the same: loss "
            f"{cw['loss_first']:.3f} -> {cw['loss_last']:.3f}, {cw['seconds'] / 60:.1f} min."
            if (cw := p.get("clean_warm_start"))
            else ""
        )
        + " The NLI models' accuracy:",
        "",
        *nli_table(p["nli"]),
        "",
        "| side | demonstrations (shown) | candidates | accuracy positive | accuracy negative | accuracy avg | "
        "kept fraction | kept a minute | false negatives |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for side, r in p["sides"].items():
        fn = r["false_negatives"]
        fn_cell = f"{fn['entailed']} of {fn['kept']}" if fn["kept"] else "-"
        shown = f"{r['demonstrations']} ({r.get('shown', r['demonstrations'])})"
        lines.append(
            f"| {side} | {shown} | {r.get('candidates', 1)} | {interval_cell(r['synthetic_accuracy_positive'])} | "
            f"{interval_cell(r['synthetic_accuracy_negative'])} | "
            f"{interval_cell(r['synthetic_accuracy'])} | {interval_cell(r['kept_fraction'])} | "
            f"{r['kept_per_minute']} | {fn_cell} |"
        )
    lines += [
        "",
        "Paired differences over anchors (95% bootstrap):",
        "",
        "| comparison | measure | difference |",
        "|---|---|---:|",
    ]
    for name, d in p["paired"].items():
        for k in (
            "synthetic_accuracy_positive",
            "synthetic_accuracy_negative",
            "synthetic_accuracy",
            "kept",
            "positive_deletion",
            "negative_added_negation",
            "parse_failure",
        ):
            v = d[k]["difference"] if isinstance(d.get(k), dict) and "difference" in d[k] else d.get(k)
            if v:
                lines.append(f"| {name} | {k} | {signed_interval(v)} |")
    lines += [
        "",
        "Shortcuts and difficulty (means over anchors where defined):",
        "",
        "| side | deletion positives | added negation | positive leak | negative leak | parse failure | "
        "cos correct positive | cos correct negative |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]

    for side, r in p["sides"].items():
        m = r["measures"]
        lines.append(
            f"| {side} | {number_cell(m['positive_deletion'])} | {number_cell(m['negative_added_negation'])} | "
            f"{number_cell(m['positive_leak'])} | {number_cell(m['negative_leak'])} | "
            f"{number_cell(m['parse_failure'])} | "
            f"{number_cell(m['positive_cosine_judged'])} | {number_cell(m['negative_cosine_judged'])} |"
        )
    return [*lines, ""]


if __name__ == "__main__":
    main()
