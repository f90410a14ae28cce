"""Does a supervised warm start make the bundled generator do ART's task? The raw generator (as cpu-full ships it,
one demonstration; and without it) against the warm-started one (no demonstration), on the same held-out corpus
anchors, judged by an NLI model that never saw the warm start's pairs.

    python benchmarks/warm_start.py --out DIR [--anchors 300] [--steps 150] [--seed 5] [--name warm_start]

Per side it writes a positive and a negative for each anchor at cpu-full's synthesis settings and filters them with
the paper's rule (argmax) by the reward's discriminator. Measures, each with a 95% bootstrap interval over anchors
(and warm - raw paired, hardcse/art/synthesis/heldout.py):

- synthetic accuracy (the paper's Table 4): the share of anchors whose positive the judge labels entailment, whose
  negative it labels contradiction, and their mean; a response the parser rejected counts as wrong;
- kept fraction (anchors with a kept triplet / anchors) and kept triplets per minute of generation and filtering;
- false negatives (kept negatives the judge labels entailment), the shortcuts (deletion positives, added-negation
  negatives, demonstration words), parse failures and the cosines of correct answers (Table 5's difficulty).

The NLI models are trained here, once per machine and code (hardcse/discriminator/kept.py's cache), each on its own
third of the NLI training pairs by premise (hardcse/data/nli.py SHARES): the discriminator on ``discriminator``, the
judge on ``judge``, the warm start reads ``warm_start``. Both are the quickstart's size (8,000 pairs): small judges.
Run it alone on the cores. Writes benchmarks/results/NAME.md and NAME.json (command, date, CPU flags).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from record import write_record

NLI_SEEDS = {"discriminator": 42, "judge": 7}
ALL_PROJECTIONS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def nli_model(share: str, out: Path) -> Path:
    """The quickstart's discriminator training on ``share``'s pairs, in ``out`` (copied from the cache if kept)."""
    from hardcse.art.config import ArtRunConfig
    from hardcse.config import load_config
    from hardcse.discriminator.kept import train_or_copy

    if (out / "training.json").is_file():
        return out
    training = load_config(ArtRunConfig, "quickstart").discriminator_training
    training = dataclasses.replace(
        training, share=share, training=dataclasses.replace(training.training, seed=NLI_SEEDS[share])
    )
    partial = out.with_name(out.name + ".partial")
    train_or_copy(training, partial)
    partial.rename(out)
    return out


def nli_accuracy(model, path: Path) -> dict:
    """The model's accuracy and per-class F1 on the held-out NLI sets (SNLI test, MNLI dev, SICK test), kept in
    ``path``."""
    from hardcse.atomic import write_json_atomic
    from hardcse.discriminator.nli import evaluate_nli

    if not path.is_file():
        write_json_atomic(path, evaluate_nli(model))
    return json.loads(path.read_text())


def synthetic_accuracy(records: list[dict], judge) -> dict[str, np.ndarray]:
    """Per anchor: 1 where the judge labels the kind's response as asked, 0 where it does not or the parser
    rejected it; and the mean of the two (the paper's avg)."""
    from hardcse.art.reward.dual import TARGET_LABEL, judged

    out = {}
    for kind, target in TARGET_LABEL.items():
        rows = [i for i, r in enumerate(records) if r[kind] is not None]
        correct = np.zeros(len(records))
        if rows:
            probs = judge.predict_proba([records[i]["anchor"] for i in rows], [records[i][kind] for i in rows])
            correct[rows] = judged(probs, target)
        out[f"accuracy_{kind}"] = correct
    out["accuracy_avg"] = (out["accuracy_positive"] + out["accuracy_negative"]) / 2
    return out


def false_negatives(records: list[dict], judge) -> dict:
    """Kept negatives the judge labels entailment: paraphrases the encoder would be trained to push away."""
    from hardcse.data.nli import LABEL_ID

    kept = [r for r in records if r["drop_reason"] is None]
    if not kept:
        return {"kept": 0, "entailed": None}
    probs = judge.predict_proba([r["anchor"] for r in kept], [r["negative"] for r in kept])
    entailed = int((np.argmax(probs, axis=1) == LABEL_ID["entailment"]).sum())
    return {"kept": len(kept), "entailed": entailed, "share": entailed / len(kept)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="work folder (NLI models, the warm start, each side's texts)")
    parser.add_argument("--anchors", type=int, default=300, help="held-out corpus anchors each side writes for")
    parser.add_argument("--steps", type=int, default=150, help="warm-start steps of 8 pairs")
    parser.add_argument("--seed", type=int, default=5, help="the generator's sampling seed")
    parser.add_argument("--name", default="warm_start", help="the record's name in benchmarks/results")
    args = parser.parse_args()

    from hardcse.art.config import ArtRunConfig
    from hardcse.art.reward.dual import Reward
    from hardcse.art.rl.warm_start import read_record, warm_started
    from hardcse.art.synthesis.anchors import split_anchors
    from hardcse.art.synthesis.heldout import compare, per_anchor
    from hardcse.art.synthesis.triplets import synthesize
    from hardcse.config import load_config
    from hardcse.data.jsonl import read_jsonl
    from hardcse.discriminator.nli import NLIDiscriminator, load_discriminator
    from hardcse.encoder.build import load_encoder
    from hardcse.engines import Engine
    from hardcse.stats import bootstrap_mean

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    config = load_config(ArtRunConfig, "cpu-full")
    engine = Engine.resolve(config.engine)
    generation = dataclasses.replace(
        config.generator,
        seed=args.seed,
        sampling_temperature=config.synthesis_temperature or config.generator.sampling_temperature,
        lora_target_modules=ALL_PROJECTIONS,
    )
    no_demonstration = dataclasses.replace(generation, few_shot=[])
    warm_config = dataclasses.replace(config.warm_start, steps=args.steps)
    started = time.perf_counter()
    discriminator_dir = nli_model("discriminator", out / "discriminator")
    judge_dir = nli_model("judge", out / "judge")
    nli_minutes = (time.perf_counter() - started) / 60
    warm_dir = out / "warm_start"
    if not warm_dir.is_dir():
        warm_started(warm_config, no_demonstration, config.decontamination, out / "warm_start.partial")
        (out / "warm_start.partial").rename(warm_dir)
    warm_record = read_record(warm_dir)

    anchors = split_anchors(config.anchors).held_out[: args.anchors]
    discriminator = load_discriminator(str(discriminator_dir), config.device)
    judge = NLIDiscriminator.load(str(judge_dir), device=config.device)
    encoder = load_encoder(config.encoder, config.pooling, device=config.device)
    reward = Reward(discriminator, encoder, config.reward, engine)
    sides = {
        "raw": (config.generator.model, generation),
        "raw_no_demonstration": (config.generator.model, no_demonstration),
        "warm": (str(warm_dir), no_demonstration),
    }
    results, records = {}, {}
    for side, (source, side_generation) in sides.items():
        folder = out / side
        start = time.perf_counter()
        if not (folder / "synthesis.json").is_file():
            synthesize(source, anchors, side_generation, reward, config.filter, folder, engine=engine)
        minutes = (time.perf_counter() - start) / 60
        records[side] = read_jsonl(folder / "synthetic.jsonl")
        report = json.loads((folder / "synthesis.json").read_text())
        accuracy = synthetic_accuracy(records[side], judge)
        measured = per_anchor(records[side], judge, encoder, generator=side_generation, engine=engine)
        kept = np.array([r["drop_reason"] is None for r in records[side]], dtype=float)
        results[side] = {
            "source": source,
            "demonstrations": len(side_generation.few_shot),
            **{k: bootstrap_mean(v).to_dict() for k, v in accuracy.items()},
            "kept_fraction": bootstrap_mean(kept).to_dict(),
            "kept": int(kept.sum()),
            "synthesis_minutes": round(minutes, 2),
            "kept_per_minute": round(kept.sum() / minutes, 1) if minutes > 0.05 else None,
            "false_negatives": false_negatives(records[side], judge),
            "measures": {k: float(np.nanmean(v)) if np.isfinite(v).any() else None for k, v in measured.items()},
            "synthesis": {k: report.get(k) for k in ("kept", "drop_reasons", "seconds", "tokens_per_second")},
        }
    paired = {
        f"warm - {side}": compare(records[side], records["warm"], judge, encoder, [t.name for t in reward.terms])
        for side in ("raw", "raw_no_demonstration")
    }
    for side in ("raw", "raw_no_demonstration"):  # synthetic accuracy, paired by anchor
        a, b = synthetic_accuracy(records[side], judge), synthetic_accuracy(records["warm"], judge)
        for k in a:
            paired[f"warm - {side}"][k] = bootstrap_mean(b[k] - a[k]).to_dict()
    payload = {
        "anchors": len(anchors),
        "seed": args.seed,
        "warm_start": {k: warm_record[k] for k in ("config", "pairs", "loss_first", "loss_last", "seconds")},
        "nli_minutes": round(nli_minutes, 1),
        "nli": {
            "discriminator": nli_accuracy(discriminator, out / "discriminator_eval.json"),
            "judge": nli_accuracy(judge, out / "judge_eval.json"),
        },
        "sides": results,
        "paired": paired,
    }
    (out / "payload.json").write_text(json.dumps(payload, indent=2))  # the page can be made again from it
    write_record(args.name, "A supervised warm start of the generator", page(payload), payload)


def page(p: dict) -> list[str]:
    def cell(d: dict) -> str:
        return f"{d['estimate']:.3f} [{d['low']:.3f}, {d['high']:.3f}]"

    w = p["warm_start"]
    lines = [
        f"{p['anchors']} held-out corpus anchors, cpu-full's synthesis settings (temperature 0.8, the paper's argmax "
        f"filter), sampling seed {p['seed']}. Warm start: {w['config']['steps']} steps of {w['config']['batch_size']} "
        f"NLI pairs (its third of the pairs), lr {w['config']['learning_rate']}, LoRA r 16 on all seven projections, "
        f"loss {w['loss_first']:.3f} -> {w['loss_last']:.3f}, {w['seconds'] / 60:.1f} min. The discriminator and the "
        "judge: the quickstart's size (8,000 pairs), each on its own third. Their accuracy:",
        "",
        "| model | " + " | ".join(p["nli"]["judge"]) + " |",
        "|---|" + "---:|" * len(p["nli"]["judge"]),
        *(
            f"| {name} | " + " | ".join(f"{v['accuracy']:.2f}" for v in r.values()) + " |"
            for name, r in p["nli"].items()
        ),
        "",
        "| side | demonstrations | accuracy positive | accuracy negative | accuracy avg | kept fraction | "
        "kept a minute | false negatives |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for side, r in p["sides"].items():
        fn = r["false_negatives"]
        fn_cell = f"{fn['entailed']} of {fn['kept']}" if fn["kept"] else "-"
        lines.append(
            f"| {side} | {r['demonstrations']} | {cell(r['accuracy_positive'])} | {cell(r['accuracy_negative'])} | "
            f"{cell(r['accuracy_avg'])} | {cell(r['kept_fraction'])} | {r['kept_per_minute']} | {fn_cell} |"
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
            "accuracy_positive",
            "accuracy_negative",
            "accuracy_avg",
            "positive_deletion",
            "negative_added_negation",
            "parse_failure",
        ):
            v = d[k]["difference"] if isinstance(d.get(k), dict) and "difference" in d[k] else d.get(k)
            if v:
                lines.append(f"| {name} | {k} | {v['estimate']:+.3f} [{v['low']:+.3f}, {v['high']:+.3f}] |")
    lines += [
        "",
        "Shortcuts and difficulty (means over anchors where defined):",
        "",
        "| side | deletion positives | added negation | positive leak | negative leak | parse failure | "
        "cos correct positive | cos correct negative |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def num(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    for side, r in p["sides"].items():
        m = r["measures"]
        lines.append(
            f"| {side} | {num(m['positive_deletion'])} | {num(m['negative_added_negation'])} | "
            f"{num(m['positive_leak'])} | {num(m['negative_leak'])} | {num(m['parse_failure'])} | "
            f"{num(m['positive_cosine_judged'])} | {num(m['negative_cosine_judged'])} |"
        )
    return [*lines, ""]


if __name__ == "__main__":
    main()
