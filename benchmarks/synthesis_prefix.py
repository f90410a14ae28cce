"""Synthesis in OpenVINO with and without the shared prefix prefilled once: speed, and what it writes.

    python benchmarks/synthesis_prefix.py [--anchors 512] [--repeats 2]

The stage as a run makes it (hardcse.art.synthesis.triplets.synthesize: generation, parsing, the reward, the
filter) on cpu-full's generator settings at its synthesis temperature, the bundled SmolLM2-135M, the first
``--anchors`` training anchors, in OpenVINO at the CPU's precision. The judge is the NLI model the quickstart trains
(copied from this machine's cache when it was trained before: hardcse/discriminator/kept.py); cpu-full's filter.
The two sides alternate (off, on, off, on, ...), each a fresh generator, so a drift of the machine falls on both.

Per anchor, the two sides' first runs are compared on what the stage writes: the kept fraction, parse failures,
rewards and answer lengths, each difference with its 95% paired bootstrap interval over anchors. The prefix's keys
and values are the same numbers computed once instead of once a row, but not bit for bit (another order of
operations), so the samples differ: the question is whether their distribution does.

Writes benchmarks/results/synthesis_prefix.{md,json}. Run it alone on the machine: it times.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

SIDES = {"off": False, "on": True}
MEASURES = {  # per anchor, from a synthetic.jsonl record
    "kept": lambda r: float(r["drop_reason"] is None),
    "positive parse failure": lambda r: float(r["positive_reason"] is not None),
    "negative parse failure": lambda r: float(r["negative_reason"] is not None),
    "positive reward": lambda r: np.nan if r["positive_reward"] is None else r["positive_reward"],
    "negative reward": lambda r: np.nan if r["negative_reward"] is None else r["negative_reward"],
    "positive words": lambda r: np.nan if r["positive"] is None else len(r["positive"].split()),
    "negative words": lambda r: np.nan if r["negative"] is None else len(r["negative"].split()),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--anchors", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=2, help="runs of each side, alternating")
    args = parser.parse_args()
    from hardcse.art.generator import openvino
    from hardcse.art.synthesis.triplets import synthesize
    from hardcse.data.jsonl import read_jsonl
    from lib.record import write_record

    runs: dict[str, list[dict]] = {side: [] for side in SIDES}
    with tempfile.TemporaryDirectory() as tmp:
        config, generation, anchors, reward, engine = stage_inputs(args.anchors, Path(tmp) / "nli")
        records = {}
        for repeat in range(args.repeats):
            for side, on in SIDES.items():
                openvino.PREFIX_CACHING = on  # this process only: the one switch the comparison needs
                out = Path(tmp) / f"{side}-{repeat}"
                report = synthesize(
                    config.generator.model, anchors, generation, reward, config.filter, out, engine=engine
                )
                runs[side].append(report.to_dict())
                print(side, repeat, json.dumps(report.to_dict()), flush=True)
                if repeat == 0:
                    records[side] = read_jsonl(out / "synthetic.jsonl")
    differences = measure_differences(*(records[side] for side in SIDES))
    result = {"anchors": len(anchors), "repeats": args.repeats, "runs": runs, "differences": differences}
    print(
        write_record(
            "synthesis_prefix", "Synthesis with the shared prompt prefix prefilled once", markdown(result), result
        )
    )


def measure_differences(before: list[dict], after: list[dict]) -> dict:
    """Per measure of :data:`MEASURES`, the 95% paired bootstrap of ``after`` - ``before`` over the anchors (two
    synthetic.jsonl's records in the same order), as a record stores it."""
    from hardcse.stats import paired_bootstrap

    differences = {}
    for name, measure in MEASURES.items():
        a, b = (np.array([measure(r) for r in records], dtype=float) for records in (before, after))
        differences[name] = {k: v.to_dict() for k, v in paired_bootstrap(a, b).items()}
    return differences


def add_side_arguments(parser: argparse.ArgumentParser, sides: Sequence[str], anchors: int) -> None:
    """The arguments of a benchmark whose sides run in processes of their own (:func:`run_sides`): --anchors,
    --repeats, and the hidden --side and --out a side's process is called with."""
    parser.add_argument("--anchors", type=int, default=anchors)
    parser.add_argument("--repeats", type=int, default=2, help="runs of each side, alternating")
    parser.add_argument("--side", choices=sides, help=argparse.SUPPRESS)  # one run, in a process of its own
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)


def run_sides(
    script: str, sides: Sequence[str], repeats: int, anchors: int, arguments: Sequence[str] = ()
) -> tuple[dict[str, list[dict]], dict[str, list[dict]]]:
    """Each side's run, ``repeats`` times, alternating (the order reversed on every other repeat), each
    ``script --side SIDE *arguments --anchors N --out DIR`` in a process of its own, which writes run.json and
    synthetic.jsonl into DIR. Returns each side's run.json's and its first run's synthetic.jsonl records."""
    from hardcse.data.jsonl import read_jsonl

    runs: dict[str, list[dict]] = {side: [] for side in sides}
    records = {}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(repeats):
            for side in sides if repeat % 2 == 0 else list(reversed(sides)):
                out = Path(tmp) / f"{side}-{repeat}".replace(" ", "-")
                command = [sys.executable, script, "--side", side, *arguments]
                subprocess.run([*command, "--anchors", str(anchors), "--out", str(out)], check=True)
                runs[side].append(json.loads((out / "run.json").read_text()))
                print(side, repeat, json.dumps(runs[side][-1]), flush=True)
                if repeat == 0:
                    records[side] = read_jsonl(out / "synthetic.jsonl")
    return runs, records


def judge_once() -> None:
    """The quickstart's discriminator trained (or found) in this machine's cache once, before the sides' processes
    copy it (stage_inputs)."""
    from hardcse.art.config import ArtRunConfig
    from hardcse.config import load_config
    from hardcse.discriminator.kept import train_or_copy

    quickstart = load_config(ArtRunConfig, "configs/quickstart.yaml", [])
    with tempfile.TemporaryDirectory() as tmp:
        train_or_copy(quickstart.discriminator_training, Path(tmp) / "nli")


def stage_inputs(n_anchors: int, nli_dir: Path) -> tuple:
    """What the synthesis benchmarks give the stage: cpu-full's config, its generator settings at its synthesis
    temperature, the first ``n_anchors`` training anchors, the reward (the quickstart's discriminator, trained into
    or copied to ``nli_dir`` from this machine's cache; the bundled MiniLM) and the OpenVINO engine."""
    import dataclasses

    from hardcse.art.config import ArtRunConfig
    from hardcse.art.reward.dual import Reward
    from hardcse.art.synthesis.anchors import split_anchors
    from hardcse.config import load_config
    from hardcse.discriminator.kept import train_or_copy
    from hardcse.discriminator.nli import NLIDiscriminator
    from hardcse.encoder.build import load_encoder
    from hardcse.engines import Engine

    config = load_config(ArtRunConfig, "configs/cpu-full.yaml", [])
    quickstart = load_config(ArtRunConfig, "configs/quickstart.yaml", [])
    generation = dataclasses.replace(config.generator, sampling_temperature=config.synthesis_temperature)
    anchors = split_anchors(config.anchors).train[:n_anchors]
    engine = Engine("openvino")
    train_or_copy(quickstart.discriminator_training, nli_dir)
    reward = Reward(NLIDiscriminator.load(str(nli_dir)), load_encoder(config.encoder), config.reward, engine)
    return config, generation, anchors, reward, engine


def markdown(result: dict) -> list[str]:
    from lib.record import difference_cell

    def median(side: str, key: str) -> float:
        return statistics.median(run[key] for run in result["runs"][side])

    speed = {side: median(side, "tokens_per_second") for side in SIDES}
    seconds = {side: median(side, "seconds") for side in SIDES}
    kept_per_minute = {
        side: statistics.median(60 * r["kept"] / r["seconds"] for r in result["runs"][side]) for side in SIDES
    }
    lines = [
        f"{result['anchors']} anchors, a positive and a negative each, cpu-full's generator settings (OpenVINO, the "
        f"CPU's precision); {result['repeats']} runs a side, alternating; medians.",
        "",
        "| shared prefix | stage seconds | generated tokens/s (whole stage) | kept triplets a minute |",
        "|---|---:|---:|---:|",
        *(
            f"| {'prefilled once' if SIDES[side] else 'prefilled with every row'} | {seconds[side]:.1f} | "
            f"{speed[side]:.0f} | {kept_per_minute[side]:.1f} |"
            for side in SIDES
        ),
        "",
        f"The stage takes {seconds['on'] / seconds['off']:.2f}x the time. Tokens a second count the stage's whole time "
        "(generation, parsing, the reward, the filter), as a run's synthesis.json does.",
        "",
        "What the stage writes, per anchor (first run of each side; 95% paired bootstrap intervals over anchors):",
        "",
        "| measure | without | with | with - without |",
        "|---|---:|---:|---|",
    ]
    for name, d in result["differences"].items():
        diff = d["difference"]
        lines.append(f"| {name} | {d['a']['estimate']:.3f} | {d['b']['estimate']:.3f} | {difference_cell(diff)} |")
    lines += [
        "",
        "The judge is the quickstart's discriminator (8,000 NLI pairs, 56% dev accuracy: "
        "[discriminator_sizes.md](discriminator_sizes.md)), so the kept fraction is this judge's, not cpu-full's.",
        "",
    ]
    return lines


if __name__ == "__main__":
    main()
