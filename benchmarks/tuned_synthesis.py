"""A tuned generator's synthesis in OpenVINO: its adapter merged and the model exported, or fused into the base
model's export as GenAI builds the pipeline. Speed, and what the stage writes.

    python benchmarks/tuned_synthesis.py --generator RUN/round_1/generator [--anchors 1024] [--repeats 2]

``--generator``: a generator folder a run tuned (base + LoRA adapter). The sides: ``merged export`` (PEFT merges
the adapter into the base weights and the merged model is exported, as hardcse did before) and ``fused adapter``
(the base model's export, the saved adapter fused by GenAI: what hardcse does now). Each run is the stage a
round makes (hardcse.art.synthesis.triplets.synthesize: the generator's OpenVINO pipeline built, generation,
parsing, the reward, the filter) on cpu-full's generator settings at its synthesis temperature, the first
``--anchors`` training anchors, the quickstart's discriminator as the judge (benchmarks/synthesis_prefix.py).
The base model's export is made once before any side (``hardcse prepare`` makes it on a user's machine); the
merged side's export of the tuned generator is removed after each of its runs, so every run pays it as a round
does (a round's generator is new). The sides alternate, the order reversed on every other repeat, each run a
process of its own.

Per anchor, the fused side's first run is compared with the merged side's first run, each difference with its 95%
paired bootstrap interval over anchors: the two round the adapted weights differently, so the samples differ and
the question is whether their distribution does.

Writes benchmarks/results/tuned_synthesis.{md,json}. Run it alone on the machine: it times.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from synthesis_prefix import add_side_arguments

SIDES = ("merged export", "fused adapter")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--generator", type=Path, required=True, help="a generator folder a run tuned")
    add_side_arguments(parser, SIDES, anchors=1024)
    args = parser.parse_args()
    if args.side:
        return run_side(args.side, args.generator, args.anchors, args.out)
    from hardcse.art.config import ArtRunConfig
    from hardcse.art.generator.model import base_model_source, is_generator_folder
    from hardcse.art.generator.openvino import export_generator
    from hardcse.config import load_config
    from lib.record import write_record
    from synthesis_prefix import judge_once, measure_differences, run_sides

    if not is_generator_folder(str(args.generator)):
        sys.exit(f"error: {args.generator} is not a generator folder (a run's round_N/generator); give one")
    generator = load_config(ArtRunConfig, "configs/cpu-full.yaml", []).generator
    export_generator(base_model_source(str(args.generator)), generator)  # once, before any side (as prepare does)
    judge_once()  # each side's process copies it
    runs, records = run_sides(__file__, SIDES, args.repeats, args.anchors, ["--generator", str(args.generator)])
    differences = measure_differences(*(records[side] for side in SIDES))
    result = {"generator": str(args.generator), "anchors": len(records[SIDES[0]]), "repeats": args.repeats}
    result |= {"runs": runs, "differences": differences}
    title = "A tuned generator's synthesis: adapter merged and exported, or fused by GenAI"
    print(write_record("tuned_synthesis", title, markdown(result), result))


def run_side(side: str, generator: Path, n_anchors: int, out: Path) -> None:
    """One run of ``side``'s stage into ``out`` (synthetic.jsonl, and run.json: the stage's report, whether the
    tuned generator was exported in it)."""
    from hardcse.art.generator import adapters, openvino
    from hardcse.art.synthesis.triplets import synthesize
    from hardcse.paths import cache_dir
    from synthesis_prefix import stage_inputs

    if side == "merged export":  # this process only: every adapter goes the merged way
        adapters.saved_adapter = lambda folder: None
    merged = cache_dir() / "openvino" / openvino.export_key(str(generator))
    with tempfile.TemporaryDirectory() as tmp:
        config, generation, anchors, reward, engine = stage_inputs(n_anchors, Path(tmp) / "nli")
        report = synthesize(str(generator), anchors, generation, reward, config.filter, out, engine=engine)
    exported = merged.is_dir()
    shutil.rmtree(merged, ignore_errors=True)  # the next run pays the export again, as a new round's generator does
    (out / "run.json").write_text(json.dumps({**report.to_dict(), "tuned_export": exported}))


def markdown(result: dict) -> list[str]:
    from lib.record import difference_cell

    runs = result["runs"]

    def median(side: str, key: str) -> float:
        return statistics.median(run[key] for run in runs[side])

    seconds = {side: median(side, "seconds") for side in runs}

    def row(side: str) -> str:
        each = ", ".join(f"{r['seconds']:.1f}" for r in runs[side])
        exported = [r["tuned_export"] for r in runs[side]]
        export = "every run" if all(exported) else "none" if not any(exported) else "some runs"
        kept = statistics.median(60 * r["kept"] / r["seconds"] for r in runs[side])
        speed = median(side, "tokens_per_second")
        return f"| {side} | {seconds[side]:.1f} ({each}) | {speed:.0f} | {kept:.1f} | {export} |"

    lines = [
        f"The generator: `{result['generator']}`. {result['anchors']} anchors, a positive and a negative each, "
        f"cpu-full's generator settings (OpenVINO, the CPU's precision); {result['repeats']} runs a side, "
        "alternating; medians. Stage seconds include building the generator's pipeline, and on the merged side "
        "the tuned generator's export (every run, as a round pays it).",
        "",
        "| side | stage seconds (each run) | generated tokens/s (whole stage) | kept triplets a minute "
        "| tuned export |",
        "|---|---:|---:|---:|---|",
        *(row(side) for side in runs),
        "",
        f"The fused side took {seconds['fused adapter'] - seconds['merged export']:+.1f} s against the merged side "
        "(medians).",
        "",
        "What the stage writes, per anchor (the sides' first runs; 95% paired bootstrap intervals over anchors):",
        "",
        "| measure | merged export | fused adapter - merged export |",
        "|---|---:|---|",
    ]
    for name, by in result["differences"].items():
        lines.append(f"| {name} | {by['a']['estimate']:.3f} | {difference_cell(by['difference'])} |")
    lines += [
        "",
        "The judge is the quickstart's discriminator (8,000 NLI pairs), so the kept fraction is this judge's, not "
        "cpu-full's.",
        "",
    ]
    return lines


if __name__ == "__main__":
    main()
