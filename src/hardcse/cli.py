"""The ``hardcse`` command: one sub-command per stage."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from hardcse.atomic import write_text_atomic
from hardcse.errors import HardcseError

if TYPE_CHECKING:
    from hardcse.config import AnchorConfig


def _quiet_libraries() -> None:
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def _write_json(path: Path, data: dict) -> None:
    write_text_atomic(path, json.dumps(data, indent=2))


def _run_sts(model_source: str, model: object, tasks: list, out: Path | None, label: str) -> dict:
    from hardcse.evaluation.sts import evaluate_sts
    from hardcse.report.tables import sts_table_markdown

    result = evaluate_sts(model, tasks)
    row = {**result.scores, "avg7": result.average}
    table = sts_table_markdown({label: row})
    print(table)
    print(f"({result.n_sentences} distinct sentences, {result.seconds:.1f} s)")
    record = {"model": model_source, **result.to_dict()}
    if out is not None:
        _write_json(out / "eval.json", record)
        (out / "eval.md").write_text(f"# STS evaluation of `{model_source}`\n\n{table}\n", encoding="utf-8")
    return record


def cmd_eval(args: argparse.Namespace) -> None:
    from hardcse.data.sts import ALL_TASKS, read_scored_pairs
    from hardcse.encoder.build import load_encoder

    unknown = [t for t in args.tasks if t not in ALL_TASKS]
    if unknown:
        raise HardcseError(f"unknown task(s) {unknown}; known: {', '.join(ALL_TASKS)}")
    on_error = "skip" if args.skip_bad_rows else "raise"
    tasks = [read_scored_pairs(path, on_error=on_error) for path in args.pairs] if args.pairs else args.tasks
    model = load_encoder(args.model, args.pooling)
    _run_sts(args.model, model, tasks, Path(args.out) if args.out else None, args.model)


def _fresh_output(path: str, overwrite: bool) -> Path:
    out = Path(path)
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise HardcseError(f"{out} exists and is not empty; choose another --out or pass --overwrite")
    return out


def cmd_train_encoder(args: argparse.Namespace) -> None:
    from hardcse.config import EncoderTrainConfig, load_config
    from hardcse.data.sts import ALL_TASKS
    from hardcse.encoder.build import load_encoder
    from hardcse.encoder.train import read_training_data, train_encoder

    overrides = list(args.overrides)
    for key in ("model", "mode", "pooling"):
        if getattr(args, key) is not None:
            overrides.append(f"{key}={getattr(args, key)}")
    config = load_config(EncoderTrainConfig, args.config, overrides)
    out = _fresh_output(args.out, args.overwrite)
    tasks = [] if args.no_eval else args.eval_tasks.split(",") if args.eval_tasks else ALL_TASKS
    unknown = [t for t in tasks if t not in ALL_TASKS]
    if unknown:
        raise HardcseError(f"unknown task(s) {unknown}; known: {', '.join(ALL_TASKS)}")
    data = read_training_data(config.mode, args.data, "skip" if args.skip_bad_rows else "raise")
    before = None
    if tasks:
        print("before training:")
        before = _run_sts(config.model, load_encoder(config.model, config.pooling), tasks, None, f"{config.model}")
    outcome = train_encoder(config, data, out)
    print(f"best STS-B dev {outcome.best_dev:.2f} at step {outcome.best_step}; saved to {out}")
    if tasks:
        print("after training:")
        after = _run_sts(str(out), outcome.model, tasks, out, str(out))
        _write_json(out / "eval_before_after.json", {"before": before, "after": after})


def cmd_train_nli(args: argparse.Namespace) -> None:
    from hardcse.config import NLITrainConfig, load_config
    from hardcse.discriminator.nli import evaluate_nli, train_nli
    from hardcse.report.tables import nli_table_markdown

    overrides = list(args.overrides) + ([f"model={args.model}"] if args.model else [])
    config = load_config(NLITrainConfig, args.config, overrides)
    out = _fresh_output(args.out, args.overwrite)
    discriminator = train_nli(config, out)
    if not args.no_eval:
        results = evaluate_nli(discriminator)
        print(nli_table_markdown(results))
        _write_json(out / "nli_eval.json", results)


def cmd_eval_nli(args: argparse.Namespace) -> None:
    from hardcse.discriminator.nli import NLIDiscriminator, evaluate_nli
    from hardcse.report.tables import nli_table_markdown

    results = evaluate_nli(NLIDiscriminator.load(args.model))
    print(nli_table_markdown(results))
    if args.out:
        _write_json(Path(args.out) / "nli_eval.json", results)


def cmd_nli_triplets(args: argparse.Namespace) -> None:
    from hardcse.data.nli import read_nli_files
    from hardcse.data.triplets import nli_triplets, write_triplets

    pairs = read_nli_files(args.nli, on_error="skip" if args.skip_bad_rows else "raise")
    triplets = nli_triplets(pairs)
    if not triplets:
        raise HardcseError(f"no premise in {args.nli} has both an entailment and a contradiction hypothesis")
    write_triplets(args.out, triplets)
    print(f"{len(triplets)} triplets from {len(pairs)} NLI pairs -> {args.out}")


def cmd_tune_generator(args: argparse.Namespace) -> None:
    from hardcse.art.tuning import tune_generator
    from hardcse.config import TuneConfig, load_config

    config = load_config(TuneConfig, args.config, args.overrides)
    final = tune_generator(config, args.out, resume=args.resume)
    print(f"tuned generator: {final} (curves: {Path(args.out) / 'ppo_curves.png'})")


def _anchors_from(args: argparse.Namespace, config: AnchorConfig) -> list[str]:
    from hardcse.art.anchors import split_anchors
    from hardcse.data.corpus import read_sentences

    if args.anchors == "held-out":
        anchors = split_anchors(config).held_out
    else:
        anchors = read_sentences(args.anchors, on_error="skip" if args.skip_bad_rows else "raise")
    return anchors[: args.limit] if args.limit else anchors


def cmd_generate(args: argparse.Namespace) -> None:
    from hardcse.art.synthesis import synthesize
    from hardcse.art.tuning import load_discriminator
    from hardcse.config import FilterConfig, TuneConfig, load_config
    from hardcse.encoder.build import load_encoder
    from hardcse.rl.reward import DualReward

    config = load_config(TuneConfig, args.config, args.overrides)
    reward = DualReward(load_discriminator(config.discriminator), load_encoder(config.encoder), config.reward)
    out = _fresh_output(args.out, args.overwrite)
    anchors = _anchors_from(args, config.anchors)
    filter_config = FilterConfig(
        args.min_entailment if args.min_entailment is not None else config.filter.min_entailment,
        args.min_contradiction if args.min_contradiction is not None else config.filter.min_contradiction,
    )
    generator = args.generator or config.generator.model
    report = synthesize(generator, anchors, config.generator, reward, filter_config, out)
    print(json.dumps(report.to_dict(), indent=2))


def cmd_judge(args: argparse.Namespace) -> None:
    from hardcse.art.judge import judge_records, judge_table_markdown
    from hardcse.discriminator.nli import NLIDiscriminator
    from hardcse.report.plots import read_jsonl

    judge = NLIDiscriminator.load(args.judge)
    results = {}
    for path in args.synthetic:
        results[str(path)] = judge_records(read_jsonl(path), judge)
    print(judge_table_markdown(results))
    for name, r in results.items():
        print(f"\nexamples from {name}:")
        for e in r["examples"]:
            print(f"  x:  {e['anchor']}\n  y+: {e['positive']}\n  y-: {e['negative']}\n")
    if args.out:
        _write_json(Path(args.out), results)


def cmd_art_run(args: argparse.Namespace) -> None:
    from hardcse.art.run import art_run, saved_run_config
    from hardcse.config import ArtRunConfig, load_config

    run_dir = Path(args.runs_dir) / args.name
    config_path = args.config
    if config_path is None:
        if not args.resume:
            raise HardcseError("give --config FILE (or --resume an existing run, which reads its config.yaml)")
        config_path = saved_run_config(run_dir)
    config = load_config(ArtRunConfig, config_path, args.overrides)
    final = art_run(config, run_dir, resume=args.resume)
    print("\n" + (run_dir / "report.md").read_text(encoding="utf-8"))
    print(f"final encoder: {final}  (SentenceTransformer('{final}') loads it)")
    print(f"report: {run_dir / 'report.md'}, plots: {run_dir / 'plots'}")


def cmd_art_compare(args: argparse.Namespace) -> None:
    from hardcse.report.art import compare_runs

    print(compare_runs(args.runs))


def cmd_report(args: argparse.Namespace) -> None:
    from hardcse.report.art import write_report

    print(write_report(args.run_dir).read_text(encoding="utf-8"))


def cmd_curriculum_plan(args: argparse.Namespace) -> None:
    from hardcse.config import CurriculumConfig, load_config
    from hardcse.curriculum.plan import build_plan, save_plan

    config = load_config(CurriculumConfig, args.config, args.overrides)
    out = _fresh_output(args.out, args.overwrite)
    plan = build_plan(config)
    path = save_plan(plan, out)
    masked = sum(len(b.mask) - sum(b.mask) for b in plan.batches)
    rows = sum(len(b.rows) for b in plan.batches)
    print(f"{len(plan.tasks)} tasks, {rows} instances, {len(plan.batches)} batches ({masked} rows masked)")
    print("task order: " + " -> ".join(plan.tasks[t].name for t in plan.task_order))
    print(
        f"tour similarity {plan.anneal['tour_similarity']:.3f}"
        + (f" (random start {plan.anneal['start_similarity']:.3f})" if "start_similarity" in plan.anneal else "")
    )
    print(f"plan: {path}; similarity matrix: {out / 'task_similarity.png'}")


def cmd_curriculum_train(args: argparse.Namespace) -> None:
    from hardcse.curriculum.plan import load_plan
    from hardcse.curriculum.train import train_from_plan
    from hardcse.data.sts import ALL_TASKS

    plan = load_plan(args.plan)
    out = _fresh_output(args.out, args.overwrite)
    record = train_from_plan(plan, out)
    print(
        f"best STS-B dev {record['best_dev']:.2f} at step {record['best_step']}; margin < "
        f"{plan.config.underfit_margin}: {record['underfit_share_before'] * 100:.1f}% of instances before, "
        f"{record['underfit_share_after'] * 100:.1f}% after"
    )
    if not args.no_eval:
        from hardcse.encoder.build import load_encoder

        _run_sts(str(out), load_encoder(str(out)), ALL_TASKS, out, str(out))


def cmd_diffaug_train(args: argparse.Namespace) -> None:
    from hardcse.config import DiffAugConfig, load_config
    from hardcse.diffaug.train import diffaug_train
    from hardcse.encoder.build import load_encoder
    from hardcse.logs import log_to_file

    config = load_config(DiffAugConfig, args.config, args.overrides)
    stages = [args.stage] if args.stage else None
    # Stage 2 alone continues a folder that stage 1 wrote; anything else starts a fresh one.
    out = Path(args.out) if args.stage == 2 else _fresh_output(args.out, args.overwrite)
    if args.stage == 2 and (out / "model").exists() and not args.overwrite:
        raise HardcseError(f"{out / 'model'} exists (a finished stage 2); pass --overwrite to train it again")
    out.mkdir(parents=True, exist_ok=True)
    with log_to_file(out / "train.log"):
        final = diffaug_train(config, out, stages)
        print(f"model: {final}  (hardcse eval --model {final}; SentenceTransformer('{final}', trust_remote_code=True))")
        if not args.no_eval:
            _run_sts(str(final), load_encoder(str(final)), config.eval_tasks, out, str(final))


def build_parser() -> argparse.ArgumentParser:
    from hardcse.data.sts import ALL_TASKS
    from hardcse.encoder.build import POOLINGS

    parser = argparse.ArgumentParser(prog="hardcse", description="Better sentence encoders from hard contrastive data.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("eval", help="evaluate an encoder on the seven STS tasks and STS-B dev")
    p.add_argument("--model", required=True, help="bundled:minilm-l6, a folder, or a hub id")
    p.add_argument("--tasks", nargs="+", default=ALL_TASKS, metavar="TASK", help=f"default: {' '.join(ALL_TASKS)}")
    p.add_argument("--pairs", nargs="+", metavar="FILE", help="your own pair files (sentence1, sentence2, score)")
    p.add_argument("--pooling", default="default", choices=POOLINGS)
    p.add_argument("--skip-bad-rows", action="store_true", help="count and skip malformed rows instead of stopping")
    p.add_argument("--out", help="folder for eval.json and eval.md")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("train-encoder", help="train an encoder with supervised or unsupervised SimCSE")
    p.add_argument("--model", help="starting encoder (default bundled:minilm-l6)")
    p.add_argument("--data", required=True, help="sup: triplet CSV (sent0,sent1,hard_neg); unsup: one sentence a line")
    p.add_argument("--mode", choices=["sup", "unsup"])
    p.add_argument("--pooling", choices=POOLINGS)
    p.add_argument("--out", required=True, help="output folder; SentenceTransformer(out) loads the result")
    p.add_argument("--config", help="YAML with EncoderTrainConfig keys")
    p.add_argument("--eval-tasks", metavar="T1,T2", help="comma-separated STS tasks before/after (default: all)")
    p.add_argument("--no-eval", action="store_true", help="skip the STS evaluation before and after")
    p.add_argument("--skip-bad-rows", action="store_true", help="count and skip malformed rows instead of stopping")
    p.add_argument("--overwrite", action="store_true", help="allow writing into a non-empty --out")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides, e.g. batch_size=32")
    p.set_defaults(func=cmd_train_encoder)

    p = sub.add_parser("train-nli", help="train the 3-way NLI discriminator (cross-encoder + MLP head)")
    p.add_argument("--model", help="base encoder (default bundled:minilm-l6)")
    p.add_argument("--out", required=True, help="output folder (a CrossEncoder folder)")
    p.add_argument("--config", help="YAML with NLITrainConfig keys")
    p.add_argument("--no-eval", action="store_true", help="skip the held-out evaluation")
    p.add_argument("--overwrite", action="store_true", help="allow writing into a non-empty --out")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="config overrides, e.g. epochs=2")
    p.set_defaults(func=cmd_train_nli)

    p = sub.add_parser("nli-triplets", help="SimCSE triplets (premise, entailment, contradiction) from NLI files")
    p.add_argument("--nli", nargs="+", required=True, help="NLI files (names under data/ or paths)")
    p.add_argument("--out", required=True, help="triplet CSV to write")
    p.add_argument("--skip-bad-rows", action="store_true", help="count and skip malformed rows instead of stopping")
    p.set_defaults(func=cmd_nli_triplets)

    p = sub.add_parser("tune-generator", help="ART: tune the generator with PPO against the dual reward")
    p.add_argument("--config", help="YAML with TuneConfig keys (generator, reward, ppo, anchors, ...)")
    p.add_argument("--out", required=True, help="run folder (ppo_log.jsonl, ppo_curves.png, generator/)")
    p.add_argument("--resume", action="store_true", help="continue from the folder's last checkpoint")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="e.g. ppo.steps=30 reward.omega=0.6")
    p.set_defaults(func=cmd_tune_generator)

    p = sub.add_parser("generate", help="ART: a positive and a negative per anchor, NLI-filtered, as SimCSE CSV")
    p.add_argument("--generator", help="a raw LM source or a tuned generator folder (default: generator.model)")
    p.add_argument("--anchors", default="held-out", help="'held-out' (the anchor split kept from tuning) or a file")
    p.add_argument("--limit", type=int, help="use the first N anchors")
    p.add_argument("--config", help="YAML with TuneConfig keys (generator sampling, encoder, discriminator)")
    p.add_argument("--min-entailment", type=float, help="filter: P(entailment | x, y+) at least (filter.*)")
    p.add_argument("--min-contradiction", type=float, help="filter: P(contradiction | x, y-) at least (filter.*)")
    p.add_argument("--out", required=True, help="folder for synthetic.jsonl, triplets.csv, synthesis.json")
    p.add_argument("--overwrite", action="store_true", help="allow writing into a non-empty --out")
    p.add_argument("--skip-bad-rows", action="store_true", help="count and skip malformed anchor rows")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="e.g. generator.temperature=0.8")
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("judge", help="ART: judged accuracy, cosines and examples of synthetic.jsonl files")
    p.add_argument("--synthetic", nargs="+", required=True, help="synthetic.jsonl files from `hardcse generate`")
    p.add_argument("--judge", required=True, help="an NLI model that is not the reward's discriminator")
    p.add_argument("--out", help="JSON file for the measures")
    p.set_defaults(func=cmd_judge)

    p = sub.add_parser("art", help="ART: the adaptive rounds (run) and runs side by side (compare)")
    art = p.add_subparsers(dest="art_command", required=True)
    p = art.add_parser("run", help="round 0 evaluation, then rounds of PPO -> synthesis -> filter -> SimCSE -> eval")
    p.add_argument("--config", help="YAML with ArtRunConfig keys (configs/quickstart.yaml, configs/cpu-full.yaml, ...)")
    p.add_argument("--name", required=True, help="the run folder's name under --runs-dir")
    p.add_argument("--runs-dir", default="runs", help="where run folders live (default: runs)")
    p.add_argument("--resume", action="store_true", help="continue the run from its last completed stage")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="e.g. rounds=1 ppo.steps=10")
    p.set_defaults(func=cmd_art_run)
    p = art.add_parser("compare", help="runs side by side: STS before/after, synthetic-data measures")
    p.add_argument("runs", nargs="+", metavar="RUN_DIR")
    p.set_defaults(func=cmd_art_compare)

    p = sub.add_parser("curriculum", help="Data-CUBE: plan (task order + batches), train from a plan")
    cur = p.add_subparsers(dest="curriculum_command", required=True)
    p = cur.add_parser("plan", help="task vectors, annealed task order, instance difficulties, batches -> plan.json")
    p.add_argument("--config", help="YAML with CurriculumConfig keys (configs/datacube-*.yaml)")
    p.add_argument("--out", required=True, help="folder for plan.json and task_similarity.png")
    p.add_argument("--overwrite", action="store_true", help="allow writing into a non-empty --out")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="e.g. max_per_task=200 task_order=random")
    p.set_defaults(func=cmd_curriculum_plan)
    p = cur.add_parser("train", help="train the encoder batch by batch in the plan's order, then the STS suite")
    p.add_argument("--plan", required=True, help="a folder (or plan.json) from `hardcse curriculum plan`")
    p.add_argument("--out", required=True, help="output folder; SentenceTransformer(out) loads the result")
    p.add_argument("--no-eval", action="store_true", help="skip the STS suite after training")
    p.add_argument("--overwrite", action="store_true", help="allow writing into a non-empty --out")
    p.set_defaults(func=cmd_curriculum_train)

    p = sub.add_parser("diffaug", help="DiffAug: two learned prefixes as augmentation, trained in two stages")
    dif = p.add_subparsers(dest="diffaug_command", required=True)
    p = dif.add_parser("train", help="stage 1 (prefix-tuning) then stage 2 (joint SimCSE), then the STS suite")
    p.add_argument("--config", help="YAML with DiffAugConfig keys (configs/diffaug-*.yaml)")
    p.add_argument("--out", required=True, help="output folder: stage1/, model/, training.json, eval.json")
    p.add_argument("--stage", type=int, choices=[1, 2], help="run one stage (2 continues a folder stage 1 wrote)")
    p.add_argument("--no-eval", action="store_true", help="skip the STS suite after training")
    p.add_argument("--overwrite", action="store_true", help="allow writing into a non-empty --out")
    p.add_argument("overrides", nargs="*", metavar="key=value", help="e.g. stage1.steps=300 stage2.max_steps=200")
    p.set_defaults(func=cmd_diffaug_train)

    p = sub.add_parser("report", help="rebuild report.md and plots/ of an ART run folder, and print it")
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("eval-nli", help="accuracy and per-class F1 of an NLI model on the held-out NLI sets")
    p.add_argument("--model", required=True, help="a folder made by train-nli, or any 3-way NLI cross-encoder")
    p.add_argument("--out", help="folder for nli_eval.json")
    p.set_defaults(func=cmd_eval_nli)
    return parser


def main(argv: list[str] | None = None) -> int:
    from hardcse.logs import setup_logging

    args = build_parser().parse_args(argv)
    setup_logging(logging.DEBUG if args.verbose else logging.INFO)
    _quiet_libraries()
    try:
        args.func(args)
    except HardcseError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
