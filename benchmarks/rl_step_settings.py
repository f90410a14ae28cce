"""An RL step at cpu-full's sizes under each setting that may speed it up, each in a process of its own.

    python benchmarks/rl_step_settings.py [--steps 6] [--repeats 2]

Settings (SETTINGS): who samples the rollouts (``rl.rollout_engine``: the policy in PyTorch, or OpenVINO GenAI with
the policy's current LoRA adapter) and the process's allocator (glibc's default, or freed memory kept in the
process: :func:`keep_freed_memory`, a candidate for hardcse's commands, not kept: it made no detectable difference).
The allocator is a setting of the whole process, so every setting runs in a fresh process: ``--steps`` timed RL
steps after one warm-up, at
configs/cpu-full.yaml's sizes (16 rollouts in minibatches of 4, the bundled SmolLM2-135M, its stop and length rules),
a random-head NLI cross-encoder on the bundled MiniLM judging (the same cost as the trained one; its numbers unused;
its head drawn from one seed in every process).
The settings run in turn, the order reversed on every other repeat (drift on the machine falls on all alike).

Per setting: the median step and each part (the loop's own timer), response tokens a rollout, the page faults of a
step (the kernel handing the process fresh pages) and the process's peak resident memory. The allocator changes no
number, so the processes of one rollout engine run the same steps on the same samples (the record checks it: the
same response lengths at every step) and their difference is the allocator's alone; the two rollout engines draw
other samples, so their response lengths are shown beside them.

Writes benchmarks/results/rl_step_settings.{md,json}. Nothing else may run on the machine meanwhile.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
SETTINGS = {  # name: (rl.rollout_engine, keep freed memory)
    "PyTorch rollouts, default allocator": ("torch", False),
    "PyTorch rollouts, freed memory kept": ("torch", True),
    "OpenVINO rollouts, default allocator": ("openvino", False),
    "OpenVINO rollouts, freed memory kept": ("openvino", True),
}


def keep_freed_memory() -> None:
    """glibc's malloc told to keep freed memory: blocks up to 32 MiB (its largest mmap threshold) from and back to
    the heap, not fresh pages from the kernel each time, and the heap's top trimmed only above 1 GiB. PyTorch takes
    its activations from malloc, and a forward of the generator faulted in ~0.9 GB of fresh pages a pass (a probe)."""
    import ctypes

    libc = ctypes.CDLL("libc.so.6")
    assert libc.mallopt(M_MMAP_THRESHOLD, 32 << 20) and libc.mallopt(M_TRIM_THRESHOLD, 1 << 30), "glibc expected"


def child(setting: str, steps: int, out: Path) -> None:
    """One setting in this process: ``steps`` timed RL steps after a warm-up; their numbers written to ``out``."""
    rollouts, keep = SETTINGS[setting]
    if keep:
        keep_freed_memory()
    sys.path.insert(0, str(HERE))
    import torch

    from art_profile import median_seconds
    from hardcse.art.config import ArtRunConfig
    from hardcse.art.rl import loop
    from hardcse.art.rl.tuning import tune_generator
    from hardcse.config import load_config
    from hardcse.data.jsonl import read_jsonl
    from hardcse.discriminator.nli import NLIDiscriminator
    from lib.stand_ins import random_discriminator

    work = out.with_suffix(".work")
    torch.manual_seed(0)  # the same random head in every process: one setting's steps are another's samples
    random_discriminator(work / "nli")
    overrides = [f"discriminator={work / 'nli'}", "judge=null", "reuse=false", f"rl.rollout_engine={rollouts}"]
    overrides += [f"rl.steps={steps + 1}", f"rl.save_every={steps + 1}"]
    config = load_config(ArtRunConfig, "configs/cpu-full.yaml", overrides)
    discriminator = NLIDiscriminator.load(str(work / "nli"))
    faults: list[int] = []
    step = loop.RLTrainer.step

    def counting_step(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        stats = step(self, *args, **kwargs)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
        return stats

    loop.RLTrainer.step = counting_step
    final = tune_generator(config, work / "rl", work / "generator", discriminator=discriminator)
    rows = read_jsonl(final / "rl_log.jsonl")[1:]  # the warm-up step left out
    parts, step_seconds = median_seconds(rows)
    result = {
        "step_seconds": round(step_seconds, 2),
        "parts": {name: round(seconds, 3) for name, seconds in parts.items()},
        "response_tokens": round(statistics.mean(r["response_tokens"] for r in rows), 1),
        "page_faults_per_step": int(statistics.median(faults[1:])),
        "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2, 2),
        "steps": [round(sum(r[f"{p}_s"] for p in parts), 2) for r in rows],
        "step_response_tokens": [r["response_tokens"] for r in rows],
    }
    out.write_text(json.dumps(result), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=6, help="timed RL steps per process, after one warm-up")
    parser.add_argument("--repeats", type=int, default=2, help="processes per setting")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.steps, args.out)
        return
    sys.path.insert(0, str(HERE))
    from lib.record import write_record

    runs: dict[str, list[dict]] = {name: [] for name in SETTINGS}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            order = list(SETTINGS) if repeat % 2 == 0 else list(reversed(SETTINGS))
            for i, name in enumerate(order):
                out = Path(tmp) / f"{repeat}-{i}.json"
                command = [sys.executable, __file__, "--child", name, "--steps", str(args.steps), "--out", str(out)]
                subprocess.run(command, check=True, cwd=HERE.parent)
                runs[name].append(json.loads(out.read_text(encoding="utf-8")))
                print(name, runs[name][-1]["step_seconds"], flush=True)
    result = {"runs": runs, "steps": args.steps, "repeats": args.repeats}
    title = "An RL step under each setting, a process each"
    print(write_record("rl_step_settings", title, markdown(result), result))


def markdown(result: dict) -> list[str]:
    from art_profile import PARTS
    from hardcse.stats import paired_bootstrap
    from lib.record import verdict

    runs = result["runs"]
    lines = [
        f"An RL step at cpu-full's sizes (16 rollouts in minibatches of 4), {result['steps']} timed steps after a "
        f"warm-up in each of {result['repeats']} processes a setting, the order reversed every other repeat; the "
        "median over all of a setting's steps, its parts the median of the processes' medians.",
        "",
        "| setting | step s | generation | scoring | policy forward | reference | optimisation | response tokens "
        "| page faults a step | peak RSS GB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, rs in runs.items():
        cells = [f"{statistics.median(s for r in rs for s in r['steps']):.2f}"]
        cells += [f"{statistics.median(r['parts'][p] for r in rs):.2f}" for p in PARTS]
        cells += [f"{statistics.mean(r['response_tokens'] for r in rs):.1f}"]
        cells += [f"{int(statistics.median(r['page_faults_per_step'] for r in rs)):,}"]
        cells += [f"{max(r['peak_rss_gb'] for r in rs):.2f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "The allocator, per engine: kept - default over the same steps (95% paired bootstrap interval):", ""]
    for engine in ("torch", "openvino"):
        default, kept = (name for name, (rollouts, _) in SETTINGS.items() if rollouts == engine)
        lengths = {json.dumps(r["step_response_tokens"]) for name in (default, kept) for r in runs[name]}
        same = (
            "the same response lengths at every step" if len(lengths) == 1 else "differing response lengths (unpaired)"
        )
        a, b = ([s for r in runs[name] for s in r["steps"]] for name in (default, kept))
        d = paired_bootstrap(a, b)["difference"].to_dict()
        lines.append(
            f"- {engine} rollouts: {d['estimate']:+.2f} s a step [{d['low']:+.2f}, {d['high']:+.2f}] ({verdict(d)}); "
            f"its {len(runs[default]) + len(runs[kept])} processes wrote {same}."
        )
    lines += [
        "",
        "The two rollout engines draw other samples (their response tokens differ): compare their training parts "
        "per token.",
        "",
    ]
    return lines


if __name__ == "__main__":
    main()
