"""``hardcse art run|tune|generate|judge|compare|report``: ART, as one run of rounds or stage by stage."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from hardcse.cli.common import add_group, add_run_command, add_skip_bad_rows, on_error, run_config

if TYPE_CHECKING:
    from hardcse.art.config import TuneConfig


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

    final = tune_run(run_config(TuneConfig, args), args.out, resume=args.resume, overwrite=args.overwrite)
    print(f"tuned generator: {final} (curves: {final / 'rl_curves.png'})")


def tune_run(config: TuneConfig, out: str | Path, *, resume: bool = False, overwrite: bool = False) -> Path:
    """``hardcse art tune`` as a run folder: RL works in ``rl/`` (checkpoints; a killed run resumes from the
    last) and the tuned generator lands in ``generator/`` with its RL log and curves. Returns ``generator/``."""
    from hardcse.art.reward.terms import check_terms, config_terms
    from hardcse.art.rl.tuning import check_rank_shares, tune_generator
    from hardcse.art.rl.warm_start import check_warm_start, warm_start_stage
    from hardcse.art.synthesis.anchors import split_anchors
    from hardcse.distributed import run_on_main
    from hardcse.engines import Engine
    from hardcse.resources import check_model_sources
    from hardcse.run_folder import RunFolder

    engine = Engine.resolve(config.engine)  # the reward's cosines run in it
    folder = RunFolder(out, config, resume=resume, overwrite=overwrite, command="art tune", engine=engine)
    folder.check()  # --out mistakes first: resolving the generator may convert it (30 s)
    check_rank_shares(config.rl)
    # the corpus read and split now (too few sentences fail before any model loads), and the reward's terms tried
    check_terms(config_terms(config.reward.terms), split_anchors(config.anchors).train)
    check_warm_start(config)
    check_model_sources(
        {"encoder": config.encoder, "discriminator": config.discriminator, "generator.model": config.generator.model}
    )
    with folder as run:
        config = warm_start_stage(run, config)  # RL tunes on from the warm-started generator, if any
        final = run.stage(
            "generator",
            "generator",
            lambda partial: tune_generator(config, run.dir / "rl", partial, engine=engine, tracking=run.tracking),
            all_ranks=True,
        )
        run_on_main(lambda: shutil.rmtree(run.dir / "rl", ignore_errors=True))  # its checkpoint is now generator/
        run.finish()
    return final


def generate(args: argparse.Namespace) -> None:
    from hardcse.art.config import TuneConfig
    from hardcse.art.synthesis.run import synthesis_run

    config = run_config(TuneConfig, args)
    flags = {"--config": args.config, "--out": args.out, "--generator": args.generator, "--anchors": args.anchors}
    flags["--limit"] = args.limit
    given = [f"{flag} {value}" for flag, value in flags.items() if value is not None]
    command = " ".join(["hardcse art generate", *given, *args.overrides])
    report = synthesis_run(
        config,
        args.out,
        generator=args.generator,
        anchors=args.anchors,
        limit=args.limit,
        on_error=on_error(args),
        resume=args.resume,
        overwrite=args.overwrite,
        command_line=command,
    )
    print(json.dumps(report, indent=2))


def judge(args: argparse.Namespace) -> None:
    from hardcse.art.analysis.judge import check_synthetic_records, judge_records, judge_table_markdown
    from hardcse.atomic import write_json_atomic
    from hardcse.data.jsonl import read_jsonl_numbered
    from hardcse.discriminator.nli import NLIDiscriminator
    from hardcse.folder_checks import check_output_file

    if args.out:
        check_output_file(Path(args.out))
    synthetic = {}
    for path in map(str, args.synthetic):  # every file read and checked before the model loads
        numbered = read_jsonl_numbered(path)
        check_synthetic_records(path, numbered)
        synthetic[path] = [record for _, record in numbered]
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
