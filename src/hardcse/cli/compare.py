"""``hardcse compare``: encoders and runs side by side, with paired bootstrap intervals of their differences."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="STS of models or runs side by side; seeds grouped; paired bootstrap intervals of differences",
        description="Each source is a folder with eval.json (a run folder, `hardcse eval --out`), an ART run "
        "folder, or an encoder (evaluated once and cached). Runs whose configs differ only by seed form one "
        "group (mean ± sd). Every other group is compared with the baseline: B - A per task and for avg7 with "
        "its 95% paired bootstrap interval.",
    )
    p.add_argument("sources", nargs="+", metavar="SOURCE", help="run folders, eval folders, encoders")
    p.add_argument(
        "--baseline",
        metavar="SOURCE_OR_GROUP",
        help="the group every other is compared with (a source of it, or its label); default: the first source's group",
    )
    p.add_argument("--no-grouping", action="store_true", help="every source its own row, even runs of one config")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--out", help="folder for compare.md, compare.json and compare.png")
    p.add_argument("--cache", help="where encoder evaluations are cached (default: $HARDCSE_CACHE/eval)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from hardcse.engines import Engine
    from hardcse.errors import HardcseError
    from hardcse.evaluation.compare import compare_groups, comparison_markdown, write_comparison
    from hardcse.evaluation.results import group_by_seed, load_result
    from hardcse.folder_checks import check_output_folder

    if args.resamples < 100:
        raise HardcseError(f"--resamples {args.resamples}: use at least 100 (1,000 or more for a table you publish)")
    if args.out:
        check_output_folder(Path(args.out))
    check_sources(args.sources, args.baseline)  # every source and the baseline before any encoder is evaluated
    cache = Path(args.cache) if args.cache else None
    engine = Engine.from_environment()  # what evaluates an encoder source (HARDCSE_ENGINE)
    results = [load_result(source, cache, engine) for source in args.sources]
    groups = {r.label: [r] for r in results} if args.no_grouping else group_by_seed(results)
    baseline = next(iter(groups))
    if args.baseline:
        baseline = next(
            (name for name, members in groups.items() if args.baseline in (name, *(m.label for m in members))),
            None,
        )
        if baseline is None:
            raise HardcseError(f"--baseline {args.baseline}: not among the sources or groups ({', '.join(groups)})")
    pairs = [(baseline, name) for name in groups if name != baseline]
    comparison = compare_groups(groups, pairs, resamples=args.resamples)
    if args.out:
        flags = [f"--baseline={args.baseline}"] * bool(args.baseline) + ["--no-grouping"] * args.no_grouping
        command = shlex.join(["hardcse", "compare", *args.sources, *flags, f"--out={args.out}"])
        print(write_comparison(comparison, Path(args.out) / "compare", "Comparison", command))
        print(f"(written: {Path(args.out) / 'compare.md'}, compare.json, compare.png)")
    else:
        print(comparison_markdown(comparison))


def check_sources(sources: list[str], baseline: str | None) -> None:
    """Every source read as :func:`load_result` reads it, short of evaluating an encoder; the baseline a source,
    a folder holding sources (a group's label) or a label with its count (``NAME (+N)``)."""
    from hardcse.errors import HardcseError
    from hardcse.evaluation.results import read_source

    for source in sources:
        read_source(source)
    if baseline is None or baseline in sources:
        return
    parents = {str(Path(s).parent) for s in sources} | {str(p) for s in sources for p in Path(s).parents}
    if baseline not in parents and not baseline.rstrip("'").endswith(")"):
        raise HardcseError(f"--baseline {baseline}: not among the sources or groups; give a source or a folder of them")
