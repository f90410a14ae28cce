"""Does the warm-started generator's data train a better encoder than mined negatives, once its yield affords a
real training set? Each side writes for the training corpus' anchors (in order, in chunks, until each has
``--rows`` kept triplets or the anchors run out), then ``hardcse assay`` trains the bundled encoder on the first
``--rows`` of each, at every training seed, on one fixed schedule:

- ``mined``: the raw generator's positives (cpu-full's one demonstration) and each negative mined from the corpus by
  the encoder (baseline-mined-negatives; the filter checks the positive);
- ``warm``: the warm-started generator (no demonstration), best of k;
- ``art``: the same warm start tuned by ART's RL (cpu-full's PPO, one RL seed, the KL's reference the warm start),
  best of k;
- ``warm_edit``: the warm side's warm start, but only with the contradictions that share at least ``--edit-cover``
  (default 0.5) of their content words with their premise (warm_start.negative_min_cover: edits of the premise,
  not another scene), and the entailments that share at least ``--edit-positive-cover`` (default 0: every one;
  warm_start.positive_min_cover: restatements, nothing added), best of k;
- ``warm_long``: the warm side's warm start trained for ``--long-steps`` steps (default 580: each of the share's
  contradictions read about once, where ``--steps`` reads a quarter of them), best of k;
- ``warm_long_strong``: warm_long's generator, but its filter's discriminator is the strong one
  (``discriminator_whole``: the discriminator's share trained with configs/nli-judge.yaml's recipe, still apart from
  the judge's pairs) under the threshold rule: P(entailment) at least ``--strong-entailment`` (default 0.9),
  P(contradiction) at least ``--strong-contradiction`` (default 0.5), best of k;
- ``warm_long_strong_argmax``: the same strong discriminator under the paper's argmax rule: which of the two changes
  (the discriminator, the rule) moves warm_long_strong;
- ``art_strong``: warm_long's generator tuned by ART's RL (cpu-full's PPO, the KL's reference warm_long) against the
  dual reward of the strong discriminator, filtered as warm_long_strong: RL's own effect on the stronger path
  (art_strong - warm_long_strong);
- ``warm_strong``: the warm side's generator (``--steps``), filtered as warm_long_strong;
- ``art_warm_strong``: the warm side's generator tuned by ART's RL against the strong discriminator's dual reward,
  filtered as warm_long_strong: what configs/cpu-full-warm.yaml's first round does, at this side's size.

``--sides`` picks among them (default: mined, warm, art).
With ``--penalties`` the art side's RL adds the reward's shortcut penalties to the dual reward (hard-correct.yaml's
terms: -0.3 for a deletion positive, -0.3 for a negative that adds a negation word). With ``--reject-shortcuts`` the
generated sides' filter fails a deletion positive and a negative adding a negation word (filter.reject_shortcuts:
best of k keeps another candidate instead); the mined side keeps the shipped baseline's filter.

    python benchmarks/warm_assay.py --work DIR [--rows 2000] [--chunk 500] [--max-anchors 8000] [--rl-seed 1]
        [--sample-seed S] [--rl-steps N] [--train-seeds 1 2 3 4 5] [--steps 150] [--candidates 4] [--clean]
        [--penalties]
        [--reject-shortcuts] [--warm-dtype float32] [--edit-cover C] [--edit-positive-cover P] [--long-steps 580]
        [--strong-entailment 0.9] [--strong-contradiction 0.5] [--sides SIDE ...] [--name warm_assay]

``--work``: benchmarks/warm_start.py's work folder (its discriminator, judge and warm starts; made there first if
missing). ``--clean``: the warm start without the pairs that teach a shortcut (warm_start.py's warm_clean sides).
Each chunk is a synthesis folder of its own, so an interrupted call goes on from the last finished chunk; a side's
chunks lie in a folder named by a hash of what decides them (the generator's files, prompts, filter, the weights of
the discriminator that filters, the reward's settings and encoder, mining, chunk size, anchors, engine), so a call
with other settings or retrained models never reads another's chunks. Measures
per side: kept fraction and kept triplets a minute of synthesis, the judge's synthetic accuracy over the side's
anchors, false negatives, the shortcut rates of the assayed rows and how much of its anchor a kept negative keeps
(anchor_cover); the judge's measures paired over shared anchors (art - warm: RL's own effect; warm_edit - warm;
warm_long - warm; each strong side - warm_long; warm_long_strong - warm_long_strong_argmax); the assay's paired
differences (bootstrap over test pairs and training seeds) of the pairs in PAIRS that the call made (each generated
side against mined, art - warm, ...). With a strong side, the NLI models' accuracy, the strong one beside the
others.

Run it alone on the cores. Writes benchmarks/results/NAME.md and NAME.json (command, date, CPU flags).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

from lib.digests import model_digest
from lib.record import write_record
from lib.warm import (
    ALL_PROJECTIONS,
    false_negatives,
    graders,
    nli_accuracy,
    nli_model,
    record_of,
    synthesis_settings,
    warm_generator,
)
from lib.warm_pages import page

SIDES = (
    "mined",
    "warm",
    "art",
    "warm_edit",
    "warm_long",
    "warm_long_strong",
    "warm_long_strong_argmax",
    "art_strong",
    "warm_strong",
    "art_warm_strong",
)
PAIRS = (  # B - A
    ("mined", "art"),
    ("mined", "warm"),
    ("warm", "art"),
    ("mined", "warm_edit"),
    ("warm", "warm_edit"),
    ("mined", "warm_long"),
    ("warm", "warm_long"),
    ("mined", "warm_long_strong"),
    ("warm_long", "warm_long_strong"),
    ("warm_long", "warm_long_strong_argmax"),
    ("warm_long_strong_argmax", "warm_long_strong"),
    ("mined", "art_strong"),
    ("warm_long_strong", "art_strong"),
    ("mined", "warm_strong"),
    ("warm_strong", "warm_long_strong"),
    ("warm_strong", "art_warm_strong"),
    ("mined", "art_warm_strong"),
)
SHORTCUT_PENALTIES = (
    {"fn": "hardcse.art.reward.shortcuts:deletion_positive", "weight": -0.3},
    {"fn": "hardcse.art.reward.shortcuts:cue_word_negative", "weight": -0.3},
)  # configs/hard-correct.yaml's


def chunks(anchors: list[str], size: int) -> list[list[str]]:
    return [anchors[i : i + size] for i in range(0, len(anchors), size)]


def chunk_key(*parts) -> str:
    """A short hash of what decides a folder's content (dataclasses by their fields, lists by their items)."""
    text = json.dumps([dataclasses.asdict(p) if dataclasses.is_dataclass(p) else p for p in parts], default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True, help="benchmarks/warm_start.py's work folder")
    parser.add_argument("--rows", type=int, default=2000, help="triplets each side trains on")
    parser.add_argument("--chunk", type=int, default=500, help="anchors a synthesis folder writes for")
    parser.add_argument("--max-anchors", type=int, default=8000, help="at most this many corpus anchors a side")
    parser.add_argument("--rl-seed", type=int, default=1, help="the RL seed of the tuned sides")
    parser.add_argument(
        "--sample-seed",
        type=int,
        help="synthesis' sampling seed (default: the RL seed); fixed, the untuned sides' "
        "chunks serve calls of several RL seeds",
    )
    parser.add_argument("--train-seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5], help="the assay's seeds")
    parser.add_argument("--steps", type=int, default=150, help="the warm start's steps")
    parser.add_argument("--rl-steps", type=int, help="RL steps (default: cpu-full's); fewer for a smoke run only")
    parser.add_argument("--candidates", type=int, default=4, help="best of k of the generated sides")
    parser.add_argument("--clean", action="store_true", help="the warm start without shortcut-teaching pairs")
    parser.add_argument("--penalties", action="store_true", help="the art side's RL with the shortcut penalties")
    parser.add_argument("--reject-shortcuts", action="store_true", help="the generated sides' filter rejects them")
    parser.add_argument("--warm-dtype", choices=("float32", "bfloat16"), default="float32", help="warm_start.dtype")
    parser.add_argument(
        "--edit-cover", type=float, default=0.5, help="warm_edit's warm_start.negative_min_cover (with --sides)"
    )
    parser.add_argument(
        "--edit-positive-cover", type=float, default=0.0, help="warm_edit's warm_start.positive_min_cover"
    )
    parser.add_argument("--long-steps", type=int, default=580, help="warm_long's warm start's steps")
    parser.add_argument(
        "--strong-entailment", type=float, default=0.9, help="warm_long_strong's filter: P(entailment) at least"
    )
    parser.add_argument(
        "--strong-contradiction", type=float, default=0.5, help="warm_long_strong's filter: P(contradiction) at least"
    )
    parser.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES[:3]), help="the sides to make")
    parser.add_argument("--name", default="warm_assay", help="the record's name in benchmarks/results")
    args = parser.parse_args()
    sample_seed = args.rl_seed if args.sample_seed is None else args.sample_seed

    from hardcse.art.analysis.judge import triplet_shortcuts
    from hardcse.art.config import ArtRunConfig
    from hardcse.art.reward.config import RewardTermConfig
    from hardcse.art.reward.shortcuts import anchor_cover
    from hardcse.art.rl.tuning import tune_generator
    from hardcse.art.synthesis.anchors import split_anchors
    from hardcse.art.synthesis.heldout import SYNTHETIC_ACCURACY, per_anchor
    from hardcse.art.synthesis.triplets import synthesize
    from hardcse.assay import AssayConfig, assay_run
    from hardcse.config import load_config
    from hardcse.data.jsonl import read_jsonl
    from hardcse.data.triplets import read_triplets, write_triplets
    from hardcse.engines import Engine
    from hardcse.evaluation.compare import compare_groups, comparison_json, comparison_markdown
    from hardcse.evaluation.results import Result
    from hardcse.stats import bootstrap_mean, paired_bootstrap

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    config = load_config(ArtRunConfig, "cpu-full")
    config = dataclasses.replace(config, warm_start=dataclasses.replace(config.warm_start, dtype=args.warm_dtype))
    engine = Engine.resolve(config.engine)
    discriminator_dir = nli_model("discriminator", work / "discriminator")
    judge_dir = nli_model("judge", work / "judge", whole_share=True)
    no_demonstration = dataclasses.replace(synthesis_settings(config, sample_seed), few_shot=[])
    base, settings = ("warm_start_clean", {"drop_shortcuts": True}) if args.clean else ("warm_start", {})
    # the folder named by what trains it beyond the cache's own key (steps, dtype), so a call with others trains anew
    name = f"{base}_{args.steps}_{args.warm_dtype}"
    warm_dir = warm_generator(config, no_demonstration, args.steps, work, name, **settings)
    if "warm_edit" in args.sides:  # the same warm start, whose contradictions edit their premise
        positive = f"_pcover{args.edit_positive_cover:g}" if args.edit_positive_cover else ""
        edit_name = f"{base}_cover{args.edit_cover:g}{positive}_{args.steps}_{args.warm_dtype}"
        edit_settings = settings | {
            "negative_min_cover": args.edit_cover,
            "positive_min_cover": args.edit_positive_cover,
        }
        edit_dir = warm_generator(config, no_demonstration, args.steps, work, edit_name, **edit_settings)
    strong_sides = {"warm_long_strong", "warm_long_strong_argmax", "art_strong", "warm_strong", "art_warm_strong"}
    long_sides = {"warm_long", "warm_long_strong", "warm_long_strong_argmax", "art_strong"}
    if long_sides & set(args.sides):  # the same warm start, read further
        long_name = f"{base}_{args.long_steps}_{args.warm_dtype}"
        long_dir = warm_generator(config, no_demonstration, args.long_steps, work, long_name, **settings)
    discriminator, judge, encoder, reward = graders(config, discriminator_dir, judge_dir, engine)
    strong_dir = strong_reward = strong = None
    if strong_sides & set(args.sides):  # the reward's terms as the others', the strong discriminator's probabilities
        from hardcse.art.reward.dual import Reward
        from hardcse.discriminator.nli import load_discriminator

        strong_dir = nli_model("discriminator", work / "discriminator_whole", whole_share=True)
        strong = load_discriminator(str(strong_dir), config.device)
        strong_reward = Reward(strong, encoder, config.reward, engine)

    rl_steps = args.rl_steps or config.rl.steps
    rl_minutes = {}  # per tuned side; absent: tuned by an earlier call (its time is in that call's log)

    def tuned(side: str, start_dir: Path, nli_dir: Path, nli, reward_config) -> Path:
        """``start_dir``'s generator tuned by cpu-full's RL against the dual reward of the NLI model ``nli`` (kept in
        ``nli_dir``), the KL's reference the start, in a folder named by them."""
        suffix = "_penalised" if args.penalties else ""
        by = "" if nli_dir == discriminator_dir else f"_{nli_dir.name}"  # the reward's own discriminator: unnamed
        tuned_dir = work / f"{start_dir.name}_rl_seed{args.rl_seed}_{rl_steps}_steps{suffix}{by}" / "generator"
        if not (tuned_dir / "rl_log.jsonl").is_file():
            rl_config = dataclasses.replace(
                config,
                discriminator=str(nli_dir),
                generator=dataclasses.replace(
                    config.generator,
                    model=str(start_dir),
                    few_shot=[],
                    seed=args.rl_seed,
                    lora_target_modules=ALL_PROJECTIONS,
                ),  # fmt: skip
                rl=dataclasses.replace(config.rl, seed=args.rl_seed, reference=str(start_dir), steps=rl_steps),
                reward=reward_config,
                reuse=False,
            )
            start = time.perf_counter()
            tune_generator(rl_config, tuned_dir.parent / "rl", tuned_dir, discriminator=nli, engine=engine)
            rl_minutes[side] = round((time.perf_counter() - start) / 60, 2)
        return tuned_dir

    rl_reward = config.reward
    if args.penalties:
        terms = [*config.reward.terms, *(RewardTermConfig(**t) for t in SHORTCUT_PENALTIES)]
        rl_reward = dataclasses.replace(config.reward, terms=terms)
    art_dir = tuned("art", warm_dir, discriminator_dir, discriminator, rl_reward) if "art" in args.sides else None
    art_strong_dir = (
        tuned("art_strong", long_dir, strong_dir, strong, rl_reward) if "art_strong" in args.sides else None
    )
    art_warm_strong_dir = (
        tuned("art_warm_strong", warm_dir, strong_dir, strong, rl_reward) if "art_warm_strong" in args.sides else None
    )

    best_of = dataclasses.replace(config.filter, candidates=args.candidates, reject_shortcuts=args.reject_shortcuts)
    raw_prompts = synthesis_settings(config, sample_seed)
    strong_filter = dataclasses.replace(
        best_of, rule="threshold", min_entailment=args.strong_entailment, min_contradiction=args.strong_contradiction
    )
    long_source = str(long_dir) if long_sides & set(args.sides) else None
    by_quickstart, by_strong = (reward, discriminator_dir), (strong_reward, strong_dir)  # a reward, the model it reads
    sides = {  # side: (generator, its prompts, the filter, its reward and its NLI folder, mining or not)
        "mined": (config.generator.model, raw_prompts, config.filter, by_quickstart, True),
        "warm": (str(warm_dir), no_demonstration, best_of, by_quickstart, False),
        "art": (str(art_dir), no_demonstration, best_of, by_quickstart, False),
        "warm_edit": (
            str(edit_dir) if "warm_edit" in args.sides else None,
            no_demonstration,
            best_of,
            by_quickstart,
            False,
        ),
        "warm_long": (long_source, no_demonstration, best_of, by_quickstart, False),
        "warm_long_strong": (long_source, no_demonstration, strong_filter, by_strong, False),
        "warm_long_strong_argmax": (long_source, no_demonstration, best_of, by_strong, False),
        "art_strong": (str(art_strong_dir), no_demonstration, strong_filter, by_strong, False),
        "warm_strong": (str(warm_dir), no_demonstration, strong_filter, by_strong, False),
        "art_warm_strong": (str(art_warm_strong_dir), no_demonstration, strong_filter, by_strong, False),
    }
    sides = {side: value for side, value in sides.items() if side in args.sides}
    sides_order = list(sides)
    corpus = split_anchors(config.anchors).train
    anchors = corpus[: args.max_anchors]
    results, data, per_side, anchors_of = {}, {}, {}, {}
    for side, (source, prompts, filter_config, (side_reward, side_nli), mined) in sides.items():
        records, triplets, seconds = [], [], 0.0
        # what decides the side's chunks: its generator (a folder by its files), prompts, filter, the weights of the
        # discriminator that filters it, the reward's settings and encoder (best of k keeps the highest r2), mining,
        # chunk size, anchors and engine; a model trained again in its folder gives another key
        generator = model_digest(source) or source
        settings = (prompts, filter_config, mined, args.chunk, anchors, config.reward, config.encoder, config.mining)
        key = chunk_key(source, generator, *settings, model_digest(str(side_nli)), engine)
        for i, block in enumerate(chunks(anchors, args.chunk)):
            if len(triplets) >= args.rows:
                break
            folder = work / f"assay_{name}" / f"{side}-{key}" / f"chunk-{i:03d}"
            mining = {"mine_from": corpus, "mining": config.mining} if mined else {}
            if not (folder / "synthesis.json").is_file():
                synthesize(source, block, prompts, side_reward, filter_config, folder, engine=engine, **mining)
            records += read_jsonl(folder / "synthetic.jsonl")
            triplets += read_triplets(folder / "triplets.csv")
            seconds += json.loads((folder / "synthesis.json").read_text())["seconds"]
        data[side] = work / f"assay_{name}" / f"{side}-{key}" / "triplets.csv"
        write_triplets(data[side], triplets)
        anchors_of[side] = [r["anchor"] for r in records]
        measured = per_side[side] = per_anchor(records, judge, encoder, generator=prompts, engine=engine)
        kept = measured["kept"]
        results[side] = {
            "source": source,
            "anchors": len(records),
            "kept": len(triplets),
            "kept_fraction": bootstrap_mean(kept).to_dict(),
            "kept_per_minute": round(len(triplets) / (seconds / 60), 1),
            "synthesis_minutes": round(seconds / 60, 1),
            **{m: bootstrap_mean(measured[m]).to_dict() for m in SYNTHETIC_ACCURACY},
            "false_negatives": false_negatives(records, judge),
            "shortcuts": triplet_shortcuts(triplets[: args.rows], prompts),
            "negative_cover": float(np.mean([anchor_cover(t[0], t[2]) for t in triplets[: args.rows]])),
        }

    def paired_judged(before: str, after: str) -> dict:
        """after - before by the judge, paired over the anchors both wrote for (the corpus' first, in order)."""
        shared = min(len(per_side[before]["kept"]), len(per_side[after]["kept"]))
        if anchors_of[before][:shared] != anchors_of[after][:shared]:
            sys.exit(f"error: the {before} and {after} sides wrote for other anchors or in another order")
        return {
            "anchors": shared,
            **{
                m: paired_bootstrap(per_side[before][m][:shared], per_side[after][m][:shared])["difference"].to_dict()
                for m in (*SYNTHETIC_ACCURACY, "kept")
            },
        }

    judged = {f"{b} - {a}": paired_judged(a, b) for a, b in PAIRS if a != "mined" and {a, b} <= set(sides)}
    rows = min(args.rows, *(r["kept"] for r in results.values()))
    if rows == 0:
        empty = next(side for side, r in results.items() if not r["kept"])
        sys.exit(f"error: the {empty} side kept no triplet of {results[empty]['anchors']} anchors; raise --max-anchors")
    assay_config = dataclasses.replace(
        load_config(AssayConfig, "assay"),
        data=[str(data[s]) for s in sides_order],
        names=sides_order,
        seeds=args.train_seeds,
        rows=rows,
    )
    assay_dir = work / f"assay_{name}" / f"assay_{rows}_{chunk_key(*(str(data[s]) for s in sides_order))}"
    assay_run(assay_config, assay_dir, resume=(assay_dir / "manifest.json").is_file())
    groups = {
        side: [
            Result(side, json.loads((assay_dir / side / f"seed-{s}" / "eval.json").read_text()), {"seed": s})
            for s in args.train_seeds
        ]
        for side in sides_order
    }
    comparison = compare_groups(groups, [(a, b) for a, b in PAIRS if {a, b} <= set(sides)])
    payload = {
        "rows": rows,
        "rows_asked": args.rows,
        "train_seeds": args.train_seeds,
        "rl_seed": args.rl_seed,
        "sample_seed": sample_seed,
        "rl_minutes": rl_minutes,
        "rl_steps": rl_steps,
        "reward_penalties": list(SHORTCUT_PENALTIES) if args.penalties else [],
        "reject_shortcuts": args.reject_shortcuts,
        "candidates": args.candidates,
        "warm_start": record_of(warm_dir),
        "sides": results,
        **({"rl_effect": judged["art - warm"]} if "art - warm" in judged else {}),
        "judged_pairs": judged,
        **({"edit_warm_start": record_of(edit_dir)} if "warm_edit" in sides else {}),
        **({"long_warm_start": record_of(long_dir)} if long_source else {}),
        **(
            {
                "strong_filter": {
                    "min_entailment": args.strong_entailment,
                    "min_contradiction": args.strong_contradiction,
                },
                "nli": {  # each model's accuracy kept beside its folder, measured once
                    name: nli_accuracy(
                        model, folder.with_name(f"{folder.name}_eval_{model_digest(str(folder))[:12]}.json")
                    )
                    for name, model, folder in (
                        ("discriminator", discriminator, discriminator_dir),
                        ("judge", judge, judge_dir),
                        ("discriminator_whole", strong, strong_dir),
                    )
                },
            }
            if strong_dir
            else {}
        ),
        "assay_dir": str(assay_dir.relative_to(work)),  # its eval.json files, for a later pooling over RL seeds
        "assay": comparison_json(comparison),
        "assay_table": comparison_markdown(comparison),
    }
    (work / f"{args.name}_payload.json").write_text(json.dumps(payload, indent=2))
    write_record(args.name, "The warm start's data in the assay, at the size its yield affords", page(payload), payload)


if __name__ == "__main__":
    main()
