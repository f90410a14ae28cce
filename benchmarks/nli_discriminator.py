"""Train the NLI discriminator on the default data, then record held-out accuracy, per-class F1 and pairs/second.

    python benchmarks/nli_discriminator.py --out runs/nli-minilm [key=value ...]

Writes benchmarks/results/nli_discriminator.{json,md}.
"""

import argparse
import time

from hardcse.config import config_to_dict, load_config
from hardcse.data.nli import read_nli_files
from hardcse.discriminator.nli import NLIDiscriminator, evaluate_nli
from hardcse.discriminator.train import NLITrainConfig, nli_run
from hardcse.logs import setup_logging
from hardcse.tables import nli_table_markdown
from lib.record import write_record


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
        "config": config_to_dict(config),
        "train_seconds": train_seconds,
        "predict_pairs_per_second": round(pairs_per_second, 1),
        "results": results,
    }
    md = (
        f"Training {train_seconds and round(train_seconds / 60, 1)} min; predict_proba "
        f"{record['predict_pairs_per_second']} pairs/s (SNLI test, batch 64)\n\n{nli_table_markdown(results)}\n"
    )
    print(write_record("nli_discriminator", "NLI discriminator", md, record))


if __name__ == "__main__":
    main()
