"""Train the NLI discriminator on the default data, then record held-out accuracy, per-class F1 and pairs/second.

    python benchmarks/nli_discriminator.py --out runs/nli-minilm [key=value ...]

Writes benchmarks/results/nli_discriminator.{json,md}.
"""

import argparse
import json
import sys
import time
from pathlib import Path

from hardcse.config import config_to_dict, load_config
from hardcse.data.nli import read_nli_files
from hardcse.discriminator.nli import NLIDiscriminator, evaluate_nli
from hardcse.discriminator.train import NLITrainConfig, nli_run
from hardcse.logs import setup_logging
from hardcse.machine import machine_record
from hardcse.report.tables import nli_table_markdown
from machine_line import machine_line

RESULTS = Path(__file__).parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/nli-minilm")
    parser.add_argument("--skip-training", action="store_true", help="evaluate the model already in --out")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    setup_logging()
    config = load_config(NLITrainConfig, overrides=args.overrides)
    train_seconds = None
    if args.skip_training:
        discriminator = NLIDiscriminator.load(args.out)
    else:
        start = time.perf_counter()
        nli_run(config, args.out, evaluate=False, overwrite=True)
        discriminator = NLIDiscriminator.load(args.out)
        train_seconds = time.perf_counter() - start
    results = evaluate_nli(discriminator)
    pairs = read_nli_files(["nli/SNLI/test.tsv"])
    start = time.perf_counter()
    discriminator.predict_proba(pairs.premises, pairs.hypotheses, batch_size=64)
    pairs_per_second = len(pairs) / (time.perf_counter() - start)
    record = {
        "command": "python " + " ".join(sys.argv),
        "date": time.strftime("%Y-%m-%d"),
        "machine": machine_record(),
        "config": config_to_dict(config),
        "train_seconds": train_seconds,
        "predict_pairs_per_second": round(pairs_per_second, 1),
        "results": results,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "nli_discriminator.json").write_text(json.dumps(record, indent=2))
    table = nli_table_markdown(results)
    md = (
        f"# NLI discriminator ({record['date']})\n\n`{record['command']}`\n\n{machine_line(record['machine'])} "
        f"Training {train_seconds and round(train_seconds / 60, 1)} min; "
        f"predict_proba {record['predict_pairs_per_second']} pairs/s (SNLI test, batch 64)\n\n{table}\n"
    )
    (RESULTS / "nli_discriminator.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
