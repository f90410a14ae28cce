"""Does the raw generator answer in format? Parse rate by reason on fixed dev anchors, for generator set-ups that
cost no training (where a response stops, its token budget, the demonstration, the system prompt).

    python benchmarks/generator_format.py [--config configs/cpu-full.yaml] [--anchors 200]
                                          [--engines openvino torch] [--temperatures 1.0 0.8] [--setups NAME ...]
                                          [--tag NAME]

Dev anchors: the last ``--anchors`` training anchors of the config's anchor split (never the held-out ones, on
which the raw and tuned generators are compared). Each set-up is a list of config overrides on top of the config
(``SETUPS`` below, each naming all it changes from ``paper``, cpu-full's generator before this benchmark). For
each engine and temperature (1.0: RL's rollouts, 0.8: synthesis) the raw generator writes a positive and a
negative per anchor, seeded per row, and the paper's parser (hardcse/art/generator/parsing.py, unchanged)
accepts or rejects each with its reason. Parse rates carry 95% bootstrap intervals over anchors; each set-up's
change against ``paper`` is paired over the same anchors. Chosen: the set-up with the highest mean parse rate
(positives and negatives) at RL's temperature under the first engine. Writes
benchmarks/results/generator_format[-TAG].{json,md}.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from hardcse.art.config import ArtRunConfig
from hardcse.art.generator.parsing import REASONS, parse_response
from hardcse.art.generator.prompts import KINDS, render_prompts
from hardcse.art.generator.sampling import row_seed
from hardcse.art.generator.stopping import token_limits
from hardcse.art.generator.texts import TextGenerator
from hardcse.art.synthesis.anchors import split_anchors
from hardcse.config import load_config
from hardcse.engines import Engine
from hardcse.stats import bootstrap_mean, paired_bootstrap
from lib.record import interval_cell, write_record

DEMO_A = {  # cpu-full's demonstration before this benchmark
    "anchor": "The committee approved the new budget after a long debate.",
    "positive": "After a lengthy discussion, the new budget was approved by the committee.",
    "negative": "The committee rejected the new budget without any debate.",
}
DEMO_B = {  # the same meaning, the positive keeping the anchor's subject first (DEMO_A's "After ..." is copied)
    "anchor": "The committee approved the new budget after a long debate.",
    "positive": "The new budget was approved by the committee following a lengthy discussion.",
    "negative": "The committee rejected the new budget without any debate.",
}
DEMO_C = {
    "anchor": "She moved to Paris in 1998 to study painting.",
    "positive": "In 1998 she relocated to Paris so that she could study painting.",
    "negative": "She left Paris in 1998 and gave up painting.",
}


def few_shot(*demos: dict) -> str:
    return "generator.few_shot=" + json.dumps(list(demos))


PAPER = ["generator.stop=eos", "generator.length_budget=null", "generator.max_new_tokens=40", few_shot(DEMO_A)]
LINE = ["generator.stop=line"]
BUDGET = [*LINE, "generator.length_budget=1.5", "generator.length_extra=8", "generator.max_new_tokens=128"]
BUDGET_2X = [*LINE, "generator.length_budget=2", "generator.length_extra=8", "generator.max_new_tokens=128"]
ONE_SENTENCE = "generator.system_prompt='You rewrite sentences. Answer with one sentence only.'"

# name -> (what it changes, its overrides: each set-up says everything it changes from ``paper``)
SETUPS: dict[str, tuple[str, list[str]]] = {
    "paper": ("cpu-full's generator before: the model's end token only, 40 new tokens, demonstration A", PAPER),
    "stop-line": ("paper + stop at the first line break", [*PAPER, *LINE]),
    "budget": ("stop-line + ceil(1.5 x anchor tokens) + 8 new tokens (at most 128)", [*PAPER, *BUDGET]),
    "budget-2x": ("stop-line + ceil(2 x anchor tokens) + 8 new tokens (at most 128)", [*PAPER, *BUDGET_2X]),
    "budget-2x-demo-b": (
        "budget-2x, demonstration B (the positive keeps the subject first)",
        [*PAPER, *BUDGET_2X, few_shot(DEMO_B)],
    ),
    "budget-2x-no-demo": ("budget-2x, no demonstration", [*PAPER, *BUDGET_2X, "generator.few_shot=[]"]),
    "budget-2x-two-demos": ("budget-2x, demonstrations B and C", [*PAPER, *BUDGET_2X, few_shot(DEMO_B, DEMO_C)]),
    "budget-2x-one-sentence": (
        "budget-2x, the system prompt asks for one sentence",
        [*PAPER, *BUDGET_2X, ONE_SENTENCE],
    ),
}


def measure(config: ArtRunConfig, anchors: list[str], engine: str, temperature: float) -> dict:
    """Per anchor and kind: parsed (1/0) and reason; tokens written per row; seconds."""
    generation = dataclasses.replace(config.generator, sampling_temperature=temperature)
    generator = TextGenerator(generation.model, generation, Engine(engine))
    kinds = [kind for kind in KINDS for _ in anchors]
    rows = anchors * len(KINDS)
    prompts = render_prompts(generator.tokenizer, rows, kinds, generation)
    seeds = [row_seed(generation.seed, kind, anchor) for kind, anchor in zip(kinds, rows, strict=True)]
    limits = token_limits(generator.tokenizer, rows, generation)
    start = time.perf_counter()
    out = generator.generate(prompts, groups=kinds, row_seeds=seeds, limits=limits)
    seconds = time.perf_counter() - start
    reasons = [
        parse_response(text, anchor, truncated=cut).reason
        for text, anchor, cut in zip(out.texts, rows, out.truncated, strict=True)
    ]
    n = len(anchors)
    result: dict = {"tokens_per_row": out.tokens / len(rows), "seconds": round(seconds, 1), "texts": out.texts}
    for k, kind in enumerate(KINDS):
        mine = reasons[k * n : (k + 1) * n]
        result[kind] = {
            "parsed": [int(r is None) for r in mine],
            "reasons": {r: c for r, c in collections.Counter(mine).items() if r is not None},
        }
    return result


def summary(measured: dict, reference: dict | None) -> dict:
    out: dict = {"tokens_per_row": round(measured["tokens_per_row"], 1), "seconds": measured["seconds"]}
    for kind in KINDS:
        parsed = np.array(measured[kind]["parsed"], dtype=float)
        entry = {"parse_rate": bootstrap_mean(parsed).to_dict(), "reasons": measured[kind]["reasons"]}
        if reference is not None:
            before = np.array(reference[kind]["parsed"], dtype=float)
            entry["change_vs_paper"] = paired_bootstrap(before, parsed)["difference"].to_dict()
        out[kind] = entry
    both = np.array(measured["positive"]["parsed"] + measured["negative"]["parsed"], dtype=float)
    out["parse_rate"] = float(both.mean())
    return out


def markdown(record: dict) -> list[str]:
    """The page's lines under the record's header."""

    lines = [
        f"Config `{record['config']}`, {record['anchors']} dev anchors (the last of the training split, never "
        "held-out ones), a positive and a negative each, seeded per row; the paper's parser unchanged. Parse rates: "
        "95% bootstrap intervals over anchors; change vs `paper` paired over the same anchors (* excludes zero).",
        "",
        "Set-ups:",
        "",
    ]
    lines += [f"- `{name}`: {SETUPS[name][0]}" for name in record["setups"]]
    for engine, by_temperature in record["results"].items():
        for temperature, by_setup in by_temperature.items():
            lines += [
                "",
                f"## {engine}, temperature {temperature}",
                "",
                "| set-up | parsed positives | change | parsed negatives | change | tokens/row | rejected positives "
                "| rejected negatives |",
                "|---|---:|---:|---:|---:|---:|---|---|",
            ]
            for name, s in by_setup.items():
                cells = [f"`{name}`"]
                for kind in KINDS:
                    change = s[kind].get("change_vs_paper")
                    mark = " *" if change and (change["low"] > 0 or change["high"] < 0) else ""
                    cells += [interval_cell(s[kind]["parse_rate"]), interval_cell(change) + mark if change else "-"]
                cells.append(f"{s['tokens_per_row']:.1f}")
                for kind in KINDS:
                    reasons = s[kind]["reasons"]
                    cells.append(", ".join(f"{r} {reasons[r]}" for r in REASONS if r in reasons) or "-")
                lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Chosen (highest mean parse rate at temperature {record['rl_temperature']}, "
        f"{record['engines'][0]}): `{record['chosen']}`.",
        "",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="configs/cpu-full.yaml")
    parser.add_argument("--anchors", type=int, default=200)
    parser.add_argument("--engines", nargs="+", default=["openvino", "torch"])
    parser.add_argument("--temperatures", nargs="+", type=float, default=[1.0, 0.8])
    parser.add_argument("--setups", nargs="+", default=list(SETUPS), choices=list(SETUPS))
    parser.add_argument("--tag", default="", help="suffix of the results files, to keep several records")
    parser.add_argument("--keep-texts", type=Path, help="write every response here (JSON), to read them")
    args = parser.parse_args()
    if "paper" not in args.setups:
        args.setups.insert(0, "paper")
    dev = split_anchors(load_config(ArtRunConfig, args.config).anchors).train[-args.anchors :]
    results: dict = {}
    texts: dict = {}
    for engine in args.engines:
        for temperature in args.temperatures:
            measured: dict = {}
            for name in args.setups:
                config = load_config(ArtRunConfig, args.config, SETUPS[name][1])
                measured[name] = measure(config, dev, engine, temperature)
                texts[f"{engine} {temperature} {name}"] = measured[name]["texts"]
                s = summary(measured[name], measured["paper"] if name != "paper" else None)
                results.setdefault(engine, {}).setdefault(str(temperature), {})[name] = s
                rates = ", ".join(f"{k} {s[k]['parse_rate']['estimate']:.3f}" for k in KINDS)
                print(f"{engine} T={temperature} {name}: {rates}, {s['tokens_per_row']} tokens/row", flush=True)
    first = results[args.engines[0]][str(args.temperatures[0])]
    record = {
        "config": args.config,
        "anchors": len(dev),
        "engines": args.engines,
        "rl_temperature": args.temperatures[0],
        "setups": args.setups,
        "overrides": {name: SETUPS[name][1] for name in args.setups},
        "results": results,
        "chosen": max(first, key=lambda name: first[name]["parse_rate"]),
    }
    name = "generator_format" + (f"-{args.tag}" if args.tag else "")
    text = write_record(name, "The raw generator's format on dev anchors", markdown(record), record)
    if args.keep_texts:
        args.keep_texts.write_text(json.dumps({"anchors": dev, "texts": texts}, indent=1))
    print(text)


if __name__ == "__main__":
    main()
