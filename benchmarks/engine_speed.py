"""PyTorch against OpenVINO on this machine, in one run: synthesis, RL rollouts, evaluation, and agreement.

    python benchmarks/engine_speed.py [--anchors 256] [--agreement-anchors 200] [--greedy-prompts 100]
                                      [--rollout-steps 3] [--parts synthesis rollouts ...]

``--parts`` measures only the parts named and keeps the others' figures in the record (each part's command and
date are recorded beside it).

Every setting runs one after the other in this process (nothing else may run on the machine meanwhile):

- synthesis: ``synthesize`` for ``--anchors`` held-out anchors (a positive and a negative each) with the
  quickstart config's generator (bundled SmolLM2-135M, 40 new tokens, the synthesis temperature 0.8): generated
  tokens per second of the whole stage (loading, generation, parsing, scoring), for torch at the generator's
  dtype (auto = bfloat16 where the CPU computes it, float32) and OpenVINO (auto and float32 precision, float and
  int8 weights), at batches of 64 rows (cpu-full's ``generator.batch_size``, the reference) and more. The
  scoring encoder runs in the same engine. The OpenVINO export is made (and timed) before the timed run.
- RL rollouts: seconds to sample 16 rollouts from the policy as the trainer does (torch), against OpenVINO
  generating the same 16 prompts, alone and with the export of the updated policy that every RL step would need.
- evaluation: the seven STS tasks and STS-B dev with the bundled encoder: sentences/s of the encoding, the scores'
  largest difference from torch, and the whole ``hardcse eval`` process against a plain sentence-transformers
  evaluation of the same sentences (``SentenceTransformer(path).encode`` then Spearman), wall seconds.
- agreement: greedy decoding (float32) token for token on ``--greedy-prompts`` prompts; sampled synthesis of
  ``--agreement-anchors`` held-out anchors by both engines at auto precision, per anchor parse failures, reward
  and response length, the paired difference with its 95% bootstrap interval; a seeded OpenVINO rerun byte for
  byte.

The NLI discriminator is the bundled MiniLM with a random 3-way head (a trained one costs the same; its
probabilities are meaningless here, so the reward agreement compares like with like only). Writes
benchmarks/results/engine_speed.{json,md}.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
from lib.record import RESULTS, signed_interval  # noqa: E402

PLAIN_EVAL = """
import sys, time
from scipy.stats import spearmanr
from sentence_transformers import SentenceTransformer
from hardcse.data.sts import ALL_TASKS, load_sts_task
from hardcse.resources import resolve_model
tasks = [load_sts_task(t) for t in ALL_TASKS]
model = SentenceTransformer(str(resolve_model("bundled:minilm-l6")), device="cpu")
sentences = sorted({s for t in tasks for s in (*t.sentences1, *t.sentences2)})
vectors = dict(zip(sentences, model.encode(sentences, normalize_embeddings=True)))
for t in tasks:
    cos = [float(vectors[a] @ vectors[b]) for a, b in zip(t.sentences1, t.sentences2)]
    print(t.name, round(spearmanr(cos, t.scores).statistic * 100, 2))
"""


def wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, env={**os.environ, "TQDM_DISABLE": "1"})
    return time.perf_counter() - start


def synthesis_speed(config, anchors, reward_parts, work: Path, settings: list[tuple[str, str, str, int]]) -> list[dict]:
    from hardcse.art.generator.openvino import export_generator
    from hardcse.art.reward.dual import Reward
    from hardcse.art.synthesis.triplets import synthesize
    from hardcse.engines import Engine
    from hardcse.paths import cache_dir

    # a fresh export cache, so each export below is made and timed (the bundled float checkpoint is reused)
    cache = work / "cache"
    cache.mkdir()
    for entry in cache_dir().iterdir():
        if entry.name != "openvino":
            (cache / entry.name).symlink_to(entry)
    os.environ["HARDCSE_CACHE"] = str(cache)
    rows = []
    for engine, dtype, weights, batch in settings:
        generation = dataclasses.replace(
            config.generator, dtype=dtype, openvino_weights=weights, batch_size=batch, openvino_batch_size=batch
        )
        row = {"engine": engine, "dtype": dtype, "weights": weights if engine == "openvino" else "-", "rows": batch}
        if engine == "openvino":
            start = time.perf_counter()
            export_generator(generation.model, generation)
            row["export_s"] = round(time.perf_counter() - start, 1)
        reward = Reward(*reward_parts, config.reward, Engine(engine))
        out = work / f"synth-{engine}-{dtype}-{weights}-{batch}"
        report = synthesize(generation.model, anchors, generation, reward, config.filter, out, engine=Engine(engine))
        rows.append(
            row | {"tokens_per_second": round(report.tokens_per_second, 1), "seconds": round(report.seconds, 1)}
        )
        print(rows[-1], flush=True)
    return rows


def rollout_speed(config, anchors: list[str], repeats: int) -> dict:
    import torch

    from hardcse.art.generator.model import load_generator, save_generator
    from hardcse.art.generator.openvino import OpenVINOGenerator, export_generator
    from hardcse.art.generator.prompts import render_prompts
    from hardcse.art.generator.sampling import generation_eos_ids, sample
    from hardcse.art.generator.stopping import stop_ids
    from hardcse.resources import resolve_model

    generation = config.generator
    model, tokenizer = load_generator(generation.model, generation, trainable=True)
    kinds = ["positive", "negative"] * 8
    prompts = render_prompts(tokenizer, anchors[:16], kinds, generation)
    torch_s, ov_s, export_s = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for step in range(repeats + 1):
            start = time.perf_counter()
            sample(model, tokenizer, prompts, generation, groups=kinds)
            torch_s.append(time.perf_counter() - start)
            start = time.perf_counter()  # what an RL step would pay: the updated policy saved, merged, exported
            with torch.no_grad():
                for name, p in model.named_parameters():
                    if "lora_B" in name:
                        p.add_(1e-4)
            folder = Path(tmp) / f"policy-{step}"
            save_generator(model, generation.model, folder)
            export = export_generator(str(folder), generation)
            eos_ids = generation_eos_ids(resolve_model(generation.model), tokenizer)
            engine = OpenVINOGenerator(export, eos_ids, stop_ids(tokenizer, eos_ids, generation), generation)
            export_s.append(time.perf_counter() - start)
            ids = tokenizer(prompts, add_special_tokens=False)["input_ids"]
            start = time.perf_counter()
            engine.generate(ids, seed=step)
            ov_s.append(time.perf_counter() - start)
    med = lambda xs: round(float(np.median(xs[1:])), 2)  # noqa: E731  (the first is a warm-up)
    return {
        "torch_s": med(torch_s),
        "openvino_generate_s": med(ov_s),
        "openvino_export_s": med(export_s),
        "openvino_step_s": med([a + b for a, b in zip(ov_s, export_s, strict=True)]),
        "repeats": repeats,
    }


def trained_encoder(work: Path) -> str:
    """An encoder that differs from the bundled one: 30 steps of unsupervised SimCSE on the Wikipedia sample at
    lr 1e-4, its only evaluation at the last step (so the trained weights are what is saved)."""
    from hardcse.paths import data_dir

    out = work / "simcse"
    argv = [str(Path(sys.executable).parent / "hardcse"), "simcse", "train", "--config", "simcse-sup"]
    argv += ["--data", str(data_dir() / "unlabeled" / "wiki_sentences.txt"), "--out", str(out), "mode=unsup"]
    argv += ["training.max_steps=30", "training.eval_steps=30", "training.learning_rate=1e-4"]
    wall(argv)
    return str(out / "model")


def eval_speed(source: str = "bundled:minilm-l6") -> list[dict]:
    from hardcse.encoder.build import load_encoder
    from hardcse.engines import Engine
    from hardcse.evaluation.sts import evaluate_sts

    rows, reference = [], None
    for engine, precision in (("torch", "auto"), ("openvino", "auto"), ("openvino", "float32")):
        chosen = Engine(engine, precision)
        model = load_encoder(source)
        evaluate_sts(model, ["STS-B-dev"], show_progress=False, engine=chosen)  # warm-up (and OpenVINO's conversion)
        result = evaluate_sts(model, show_progress=False, engine=chosen)
        reference = reference or result.scores
        diff = max(abs(result.scores[t] - reference[t]) for t in reference)
        per_task = {t: round(result.scores[t] - reference[t], 4) for t in reference}
        rows.append(
            {
                "engine": engine,
                "precision": precision if engine == "openvino" else "float32",
                "sentences_per_second": round(result.n_sentences / result.seconds, 1),
                "max_score_difference": round(diff, 4),
                "avg7": round(result.average, 2),
                "differences": per_task,
            }
        )
        print(rows[-1], flush=True)
    return rows


def agreement(config, anchors: list[str], reward_parts, work: Path, greedy_prompts: int) -> dict:
    from hardcse.art.generator.prompts import render_prompts
    from hardcse.art.generator.texts import TextGenerator
    from hardcse.art.reward.dual import Reward
    from hardcse.art.synthesis.heldout import per_anchor
    from hardcse.art.synthesis.triplets import synthesize
    from hardcse.data.jsonl import read_jsonl
    from hardcse.engines import Engine
    from hardcse.stats import paired_bootstrap

    greedy = dataclasses.replace(config.generator, dtype="float32", top_k=1)
    texts = {}
    for engine in ("torch", "openvino"):
        generator = TextGenerator(greedy.model, greedy, Engine(engine))
        half = greedy_prompts // 2
        kinds = ["positive"] * half + ["negative"] * (greedy_prompts - half)
        prompts = render_prompts(generator.tokenizer, (anchors * 2)[:greedy_prompts], kinds, greedy)
        texts[engine] = [t for i in range(0, len(prompts), 16) for t in generator.generate(prompts[i : i + 16]).texts]
    identical = sum(a == b for a, b in zip(texts["torch"], texts["openvino"], strict=True))

    measures, files = {}, {}
    for name, engine in (("torch", "torch"), ("openvino", "openvino"), ("openvino-rerun", "openvino")):
        out = work / f"agree-{name}"
        synthesize(
            greedy.model,
            anchors,
            config.generator,
            Reward(*reward_parts, config.reward, Engine(engine)),
            config.filter,
            out,
            engine=Engine(engine),
        )
        files[name] = (out / "synthetic.jsonl").read_bytes()
        records = read_jsonl(out / "synthetic.jsonl")
        held_out = per_anchor(records, None, reward_parts[1], engine=Engine(engine))  # the held-out stage's measures
        measures[name] = {
            "parse_failure": held_out["parse_failure"],
            "reward": held_out["reward"],
            "words": np.array([(len(r["positive_raw"].split()) + len(r["negative_raw"].split())) / 2 for r in records]),
        }
    differences = {}
    for key in ("parse_failure", "reward", "words"):
        d = paired_bootstrap(measures["torch"][key], measures["openvino"][key])
        differences[key] = {side: d[side].to_dict() for side in ("a", "b", "difference")}
    return {
        "greedy_prompts": greedy_prompts,
        "greedy_identical": identical,
        "sampled_anchors": len(anchors),
        "sampled": differences,
        "seeded_rerun_identical": files["openvino"] == files["openvino-rerun"],
    }


def process_speed(work: Path) -> dict:
    """Whole processes, each started fresh: hardcse eval per engine, and a plain sentence-transformers evaluation."""
    hardcse = str(Path(sys.executable).parent / "hardcse")
    plain = wall([sys.executable, "-c", PLAIN_EVAL])
    runs = {"plain_sentence_transformers_s": round(plain, 1)}
    for engine in ("torch", "openvino"):
        seconds = wall(
            [hardcse, "eval", "--model", "bundled:minilm-l6", "--engine", engine, "--out", str(work / f"eval-{engine}")]
        )
        runs[f"hardcse_eval_{engine}_s"] = round(seconds, 1)
        runs[f"hardcse_eval_{engine}_ratio"] = round(seconds / plain, 2)
    return runs


def _runs(runs: dict) -> str:
    """Which command made which parts, one entry per command and date."""
    made: dict[tuple, list[str]] = {}
    for part, w in runs.items():
        made.setdefault((w["command"], w["date"]), []).append(part)
    return "; ".join(f"{', '.join(parts)}: `{command}` ({date})" for (command, date), parts in made.items())


def markdown(r: dict) -> list[str]:
    """The page's lines under the record's header."""
    lines = [
        "## Synthesis (bundled SmolLM2-135M, 40 new tokens, temperature 0.8, the whole stage)",
        "",
        "| engine | precision | weights | rows a batch | tokens/s | x the first row | export s (once a model) |",
        "|---|---|---|---:|---:|---:|---:|",
    ]
    base = r["synthesis"][0]["tokens_per_second"]
    for s in r["synthesis"]:
        ratio = s["tokens_per_second"] / base
        cells = [s["engine"], s["dtype"], s["weights"], s["rows"], s["tokens_per_second"], f"{ratio:.2f}"]
        cells.append(s.get("export_s", "-"))
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    ro = r["rollouts"]
    lines += [
        "",
        "## RL rollouts (16 a step, median of the steps after a warm-up)",
        "",
        "| | seconds |",
        "|---|---:|",
        f"| torch: the trainer's sampler | {ro['torch_s']} |",
        f"| OpenVINO: generating | {ro['openvino_generate_s']} |",
        f"| OpenVINO: saving, merging and exporting the updated policy | {ro['openvino_export_s']} |",
        f"| OpenVINO: a step's total | {ro['openvino_step_s']} |",
        "",
    ]
    for key, name in (("evaluation", "the bundled MiniLM-L6"), ("evaluation_trained", "a trained encoder")):
        if key not in r:
            continue
        lines += [
            f"## Evaluation, {name} (seven STS tasks + STS-B dev)",
            "",
            "| engine | precision | sentences/s | largest score difference from torch | avg7 |",
            "|---|---|---:|---:|---:|",
        ]
        for e in r[key]:
            cells = [e["engine"], e["precision"], e["sentences_per_second"], e["max_score_difference"], e["avg7"]]
            lines.append("| " + " | ".join(str(c) for c in cells) + " |")
        lines.append("")
    p = r["processes"]
    lines += [
        "Whole processes (start, load, encode, score), wall seconds: plain sentence-transformers "
        f"{p['plain_sentence_transformers_s']}, `hardcse eval --engine torch` {p['hardcse_eval_torch_s']} "
        f"({p['hardcse_eval_torch_ratio']}x), `hardcse eval --engine openvino` {p['hardcse_eval_openvino_s']} "
        f"({p['hardcse_eval_openvino_ratio']}x).",
        "",
        "## Agreement",
        "",
        f"- Greedy decoding, float32: {r['agreement']['greedy_identical']} of {r['agreement']['greedy_prompts']} "
        "responses identical between the engines.",
        f"- Seeded OpenVINO synthesis rerun byte for byte identical: {r['agreement']['seeded_rerun_identical']}.",
        f"- Sampled synthesis, {r['agreement']['sampled_anchors']} held-out anchors, auto precision, per anchor "
        "(torch, OpenVINO, OpenVINO - torch with its 95% paired bootstrap interval):",
        "",
        "| measure | torch | OpenVINO | difference |",
        "|---|---:|---:|---:|",
    ]
    for key, d in r["agreement"]["sampled"].items():
        diff = d["difference"]
        verdict = "" if diff["low"] > 0 or diff["high"] < 0 else " (no detectable difference)"
        lines.append(
            f"| {key} | {d['a']['estimate']:.3f} | {d['b']['estimate']:.3f} | {signed_interval(diff)}{verdict} |"
        )
    return [*lines, ""]


PARTS = ("synthesis", "rollouts", "evaluation", "trained", "processes", "agreement")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--anchors", type=int, default=256, help="anchors of the timed synthesis (x2 generations)")
    parser.add_argument("--agreement-anchors", type=int, default=200, help="anchors of the sampled agreement")
    parser.add_argument("--greedy-prompts", type=int, default=100)
    parser.add_argument("--rollout-steps", type=int, default=3, help="timed rollout steps after one warm-up")
    parser.add_argument(
        "--parts", nargs="+", choices=PARTS, default=PARTS, help="measure these only; the record keeps the others"
    )
    args = parser.parse_args()
    os.environ["TQDM_DISABLE"] = "1"
    from hardcse.art.config import ArtRunConfig
    from hardcse.art.synthesis.anchors import split_anchors
    from hardcse.config import load_config
    from hardcse.discriminator.nli import NLIDiscriminator
    from hardcse.encoder.build import load_encoder
    from lib.stand_ins import random_discriminator

    config = load_config(ArtRunConfig, REPO / "configs" / "quickstart.yaml")
    # cpu-full's synthesis batch and the synthesis temperature, as art run's synthesis stage uses them
    generator = dataclasses.replace(config.generator, batch_size=64, sampling_temperature=config.synthesis_temperature)
    config = dataclasses.replace(config, generator=generator)
    held_out = split_anchors(config.anchors).held_out
    settings = [  # the first is the PyTorch path as configured before the engines (batch 64): the reference
        ("torch", "auto", "float", 64),
        ("torch", "auto", "float", 128),
        ("torch", "float32", "float", 64),
        ("openvino", "auto", "float", 64),
        ("openvino", "auto", "float", 256),
        ("openvino", "float32", "float", 256),
        ("openvino", "auto", "int8", 256),
    ]
    from lib.provenance import machine_line
    from lib.record import stamp, write_record

    record_file = RESULTS / "engine_speed.json"
    # the parts this run does not measure are kept from the record, each with the command, date and machine of its run
    kept = json.loads(record_file.read_text()) if record_file.is_file() else {}
    result = {k: v for k, v in kept.items() if k not in ("command", "date", "machine", "cpu_flags", "platform")}
    made = stamp()
    when = {"command": made["command"], "date": made["date"], "machine": machine_line(made["machine"])}
    result["runs"] = {**result.get("runs", {}), **{part: when for part in args.parts}}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        random_discriminator(work / "nli")
        parts = (NLIDiscriminator.load(str(work / "nli")), load_encoder("bundled:minilm-l6"))
        if "synthesis" in args.parts:
            result["synthesis"] = synthesis_speed(config, held_out[: args.anchors], parts, work, settings)
        if "rollouts" in args.parts:
            result["rollouts"] = rollout_speed(config, held_out, args.rollout_steps)
            print(result["rollouts"], flush=True)
        if "evaluation" in args.parts:
            result["evaluation"] = eval_speed()
        if "trained" in args.parts:
            result["evaluation_trained"] = eval_speed(trained_encoder(work))
        if "processes" in args.parts:
            result["processes"] = process_speed(work)
            print(result["processes"], flush=True)
        if "agreement" in args.parts:
            result["agreement"] = agreement(
                config, held_out[: args.agreement_anchors], parts, work, args.greedy_prompts
            )
    text = write_record(
        "engine_speed",
        "Inference engines: PyTorch and OpenVINO on this machine (2 cores)",
        markdown(result),
        result | {"platform": platform.platform()},
        about=". Each part ran in one process, one setting after the other, nothing else on the machine: "
        + _runs(result["runs"])
        + ".",
    )
    print(text)


if __name__ == "__main__":
    main()
