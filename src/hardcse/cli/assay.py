"""``hardcse assay``: triplet files compared by the encoders they train, on one fixed schedule, over seeds."""

from __future__ import annotations

import argparse
import json

from hardcse.cli.common import add_run_flags, add_skip_bad_rows, on_error, run_config


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "assay",
        help="is training set B better than A? each file trains the encoder on one fixed schedule over seeds",
        description="Each triplet file (--data; the first is the reference) trains the same start encoder with "
        "supervised SimCSE: the same rows, the same steps, no dev gating, once per training seed. Each encoder is "
        "evaluated on the STS tasks and every file compared with the first: paired bootstrap 95% intervals over "
        "test pairs and seeds. Writes OUT/assay.md, assay.json, assay.png.",
    )
    add_run_flags(p, "AssayConfig keys: configs/assay.yaml (the default)", "seeds=[1,2,3,4,5] rows=270")
    p.set_defaults(config="assay", func=run)
    p.add_argument("--data", nargs="+", metavar="CSV", help="triplet files (sent0,sent1,hard_neg); the first is A")
    p.add_argument("--names", nargs="+", metavar="NAME", help="a label per file (default: from the paths)")
    p.add_argument("--seeds", nargs="+", type=int, metavar="SEED", help="training seeds (default: the config's)")
    add_skip_bad_rows(p)


def run(args: argparse.Namespace) -> None:
    from hardcse.assay import AssayConfig, assay_run

    if args.resume and args.config == "assay":
        args.config = None  # --resume reads the folder's config.yaml
    extra = [f"{key}={json.dumps(value)}" for key in ("data", "names", "seeds") if (value := getattr(args, key))]
    config = run_config(AssayConfig, args, extra)
    print(assay_run(config, args.out, resume=args.resume, overwrite=args.overwrite, on_error=on_error(args)))
    print(f"(written: {args.out}/assay.md, assay.json, assay.png)")
