"""``hardcse art run|tune|generate|judge|compare|report``: ART, as one run of rounds or stage by stage."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hardcse.cli.common import add_group, add_run_command, add_skip_bad_rows, on_error, run_config


def add_parser(sub: argparse._SubParsersAction) -> None:
    commands = add_group(sub, "art", "ART: adaptive rounds of RL-tuned synthesis and SimCSE (run), or each stage")

    add_run_command(
        commands,
        "run",
        "round 0 eval, then rounds of RL (PPO or GRPO) -> synthesis -> filter -> SimCSE -> eval",
        run,
        "ArtRunConfig keys: configs/quickstart.yaml, configs/cpu-full.yaml, ...",
        "rounds=1 rl.steps=10",
    )

    add_run_command(
        commands,
        "tune",
        "tune the generator with RL (PPO or GRPO) against the dual reward",
        tune,
        "TuneConfig keys: configs/tune-cpu.yaml",
        "rl.steps=30 rl.algorithm=grpo",
    )

    p = add_run_command(
        commands,
        "generate",
        "a positive and a negative per anchor, NLI-filtered, as SimCSE CSV",
        generate,
        "TuneConfig keys: generator sampling, encoder, discriminator, filter",
        "filter.rule=argmax filter.margin=0.2",
    )
    p.add_argument("--generator", help="a raw LM source or a tuned generator folder (default: generator.model)")
    p.add_argument("--anchors", default="held-out", help="'held-out' (the anchor split kept from tuning) or a file")
    p.add_argument("--limit", type=int, help="use the first N anchors")
    add_skip_bad_rows(p)

    p = commands.add_parser("judge", help="judged accuracy, cosines and examples of synthetic.jsonl files")
    p.add_argument("--synthetic", nargs="+", required=True, help="synthetic.jsonl files from `hardcse art generate`")
    p.add_argument("--judge", required=True, help="an NLI model that is not the reward's discriminator")
    p.add_argument("--out", help="JSON file for the measures")
    p.set_defaults(func=judge)

    p = commands.add_parser("compare", help="runs side by side: STS before/after, synthetic-data measures")
    p.add_argument("runs", nargs="+", metavar="RUN_DIR")
    p.add_argument("--baseline", metavar="RUN_DIR", help="a run every other is compared with (e.g. the raw LLM's)")
    p.set_defaults(func=compare)

    p = commands.add_parser("report", help="rebuild report.md and plots/ of an ART run folder, and print it")
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.set_defaults(func=report)


def run(args: argparse.Namespace) -> None:
    from hardcse.art.config import ArtRunConfig
    from hardcse.art.run import art_run

    config = run_config(ArtRunConfig, args)
    final = art_run(config, args.out, resume=args.resume, overwrite=args.overwrite)
    run_dir = Path(args.out)
    print("\n" + (run_dir / "report.md").read_text(encoding="utf-8"))
    print(f"final encoder: {final}  (SentenceTransformer('{final}') loads it)")
    print(f"report: {run_dir / 'report.md'}, plots: {run_dir / 'plots'}")


def tune(args: argparse.Namespace) -> None:
    from hardcse.art.config import TuneConfig
    from hardcse.art.rl.tuning import tune_run

    final = tune_run(run_config(TuneConfig, args), args.out, resume=args.resume, overwrite=args.overwrite)
    print(f"tuned generator: {final} (curves: {final / 'rl_curves.png'})")


def generate(args: argparse.Namespace) -> None:
    from hardcse.art.config import TuneConfig
    from hardcse.art.synthesis.triplets import synthesis_run

    config = run_config(TuneConfig, args)
    report = synthesis_run(
        config,
        args.out,
        generator=args.generator,
        anchors=args.anchors,
        limit=args.limit,
        on_error=on_error(args),
        resume=args.resume,
        overwrite=args.overwrite,
    )
    print(json.dumps(report, indent=2))


def judge(args: argparse.Namespace) -> None:
    from hardcse.art.analysis.judge import judge_records, judge_table_markdown
    from hardcse.atomic import write_json_atomic
    from hardcse.data.jsonl import read_jsonl
    from hardcse.discriminator.nli import NLIDiscriminator

    synthetic = {str(path): read_jsonl(path) for path in args.synthetic}  # every file read before the model loads
    model = NLIDiscriminator.load(args.judge)
    results = {name: judge_records(records, model) for name, records in synthetic.items()}
    print(judge_table_markdown(results))
    for name, r in results.items():
        print(f"\nexamples from {name}:")
        for e in r["examples"]:
            print(f"  x:  {e['anchor']}\n  y+: {e['positive']}\n  y-: {e['negative']}\n")
    if args.out:
        write_json_atomic(Path(args.out), results)


def compare(args: argparse.Namespace) -> None:
    from hardcse.art.analysis.report import compare_runs

    print(compare_runs(args.runs, baseline=args.baseline))


def report(args: argparse.Namespace) -> None:
    from hardcse.art.analysis.report import write_report

    print(write_report(args.run_dir).read_text(encoding="utf-8"))
