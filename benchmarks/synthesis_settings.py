"""Synthesis in OpenVINO under GenAI's settings before and after: speed, and what it writes.

    python benchmarks/synthesis_settings.py [--anchors 1024] [--repeats 2]

The sides: ``before`` (256 rows a batch, keys and values cached in OpenVINO's 8-bit default), ``bf16 cache``
(256 rows, keys and values in bfloat16, the model's precision here: what hardcse does) and ``512 rows`` (512 rows,
bfloat16 cache). The stage is the one a run makes
(hardcse.art.synthesis.triplets.synthesize: generation, parsing, the reward, the filter) on cpu-full's generator
settings at its synthesis temperature, the bundled SmolLM2-135M, the first ``--anchors`` training anchors, in
OpenVINO at the CPU's precision; the judge is the NLI model the quickstart trains (copied from this machine's cache
when it was trained before). The sides alternate, the order reversed on every other repeat, each a fresh generator.

Per anchor, each side's first run is compared with ``before``'s on what the stage writes (the measures of
benchmarks/synthesis_prefix.py), each difference with its 95% paired bootstrap interval over anchors: another
batch and another cache precision round otherwise, so the samples differ and the question is whether their
distribution does. Each run is a process of its own, whose peak resident memory is recorded.

Writes benchmarks/results/synthesis_settings.{md,json}. Run it alone on the machine: it times.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

# side -> (openvino_batch_size, keys and values in the model's precision)
from synthesis_prefix import add_side_arguments

SIDES = {"before": (256, False), "bf16 cache": (256, True), "512 rows": (512, True)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_side_arguments(parser, list(SIDES), anchors=1024)
    args = parser.parse_args()
    if args.side:
        return run_side(args.side, args.anchors, args.out)
    from hardcse.art.config import ArtRunConfig
    from hardcse.art.generator.openvino import export_generator
    from hardcse.config import load_config
    from lib.record import write_record
    from synthesis_prefix import judge_once, measure_differences, run_sides

    generator = load_config(ArtRunConfig, "configs/cpu-full.yaml", []).generator
    export_generator(generator.model, generator)  # once, before any side: no side pays the export
    judge_once()  # each side's process copies it
    runs, records = run_sides(__file__, list(SIDES), args.repeats, args.anchors)
    anchors = len(records["before"])
    differences = {side: measure_differences(records["before"], records[side]) for side in SIDES if side != "before"}
    result = {"anchors": anchors, "repeats": args.repeats, "sides": SIDES, "runs": runs}
    result["differences"] = differences
    print(
        write_record(
            "synthesis_settings", "Synthesis under GenAI's settings, before and after", markdown(result), result
        )
    )


def run_side(side: str, n_anchors: int, out: Path) -> None:
    """One run of ``side``'s stage into ``out`` (synthetic.jsonl, and run.json: the stage's report and this
    process's peak resident memory)."""
    import dataclasses

    from hardcse.art.generator import openvino
    from hardcse.art.synthesis.triplets import synthesize
    from synthesis_prefix import stage_inputs

    rows, in_model_precision = SIDES[side]
    openvino.KV_CACHE_IN_MODEL_PRECISION = in_model_precision  # this process only
    with tempfile.TemporaryDirectory() as tmp:
        config, generation, anchors, reward, engine = stage_inputs(n_anchors, Path(tmp) / "nli")
        generation = dataclasses.replace(generation, openvino_batch_size=rows)
        report = synthesize(config.generator.model, anchors, generation, reward, config.filter, out, engine=engine)
    # this process's own peak (VmHWM starts afresh at exec; ru_maxrss can carry the parent's peak over)
    status = Path("/proc/self/status").read_text().splitlines()
    peak_gb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 2**20  # kB
    (out / "run.json").write_text(json.dumps({**report.to_dict(), "peak_rss_gb": round(peak_gb, 2)}))


def markdown(result: dict) -> list[str]:
    from lib.record import difference_cell

    sides = result["runs"]

    def median(side: str, key: str) -> float:
        return statistics.median(run[key] for run in sides[side])

    speed = {side: median(side, "tokens_per_second") for side in sides}
    seconds = {side: median(side, "seconds") for side in sides}
    kept_per_minute = {side: statistics.median(60 * r["kept"] / r["seconds"] for r in sides[side]) for side in sides}
    # the smaller peak of a side's runs: in the record of 2026-11-28 the first process also trained the judge
    peak = {side: min(r["peak_rss_gb"] for r in sides[side]) for side in sides}
    lines = [
        f"{result['anchors']} anchors, a positive and a negative each, cpu-full's generator settings (OpenVINO, the "
        f"CPU's precision); {result['repeats']} runs a side, alternating; medians.",
        "",
        "| side | rows a batch | key/value cache | stage seconds | generated tokens/s (whole stage) | x before "
        "| kept triplets a minute | peak memory (GB) |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
        *(
            f"| {side} | {result['sides'][side][0]} | "
            f"{'the model precision (bf16)' if result['sides'][side][1] else 'OpenVINO default (8-bit)'} | "
            f"{seconds[side]:.1f} | {speed[side]:.0f} | {speed[side] / speed['before']:.2f} | "
            f"{kept_per_minute[side]:.1f} | {peak[side]:.1f} |"
            for side in sides
        ),
        "",
        "Tokens a second count the stage's whole time (generation, parsing, the reward, the filter), as a run's "
        "synthesis.json does. Peak memory: the smaller peak resident set of the side's processes (models, the "
        "reward's encoder and judge included).",
        "",
        "What the stage writes, per anchor (each side's first run against before's; 95% paired bootstrap intervals "
        "over anchors):",
        "",
        "| measure | before | " + " | ".join(f"{side} - before" for side in result["differences"]) + " |",
        "|---|---:|" + "---|" * len(result["differences"]),
    ]
    first = next(iter(result["differences"].values()))
    for name in first:
        cells = [f"{first[name]['a']['estimate']:.3f}"]
        for by_measure in result["differences"].values():
            diff = by_measure[name]["difference"]
            cells.append(difference_cell(diff))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "The judge is the quickstart's discriminator (8,000 NLI pairs, as the quickstart trains it on this machine; "
        "its dev accuracy: [training_precision.md](training_precision.md)), so the kept fraction is this judge's, "
        "not cpu-full's.",
        "",
    ]
    return lines


if __name__ == "__main__":
    main()
