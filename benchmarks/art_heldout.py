"""Does tuning make better data? The raw and a run's tuned generator on the held-out anchors, with intervals.

    python benchmarks/art_heldout.py RUN_DIR [--round 1] [--anchors 500] [--judge runs/nli-judge]

Both generators write a positive and a negative for the first ``--anchors`` held-out anchors of the run's
config (never used for tuning or training); the reward is the run's (its discriminator, and the encoder that
judged difficulty while round ``--round`` was tuned); accuracy is by ``--judge`` (default: the run's), cosines by
the run's starting encoder. Each measure: raw and tuned means with 95% bootstrap intervals over anchors, and the
paired difference (hardcse/art/synthesis/heldout.py). Writes benchmarks/results/art_heldout-<run>.{json,md}.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from hardcse.art.config import TRAIN_IN_RUN, ArtRunConfig
from hardcse.art.synthesis.heldout import compare_markdown, held_out_comparison
from hardcse.config import load_config
from hardcse.discriminator.nli import load_discriminator
from hardcse.encoder.build import load_encoder
from lib.record import write_record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path)
    parser.add_argument("--round", type=int, default=1)
    parser.add_argument("--anchors", type=int, default=500)
    parser.add_argument("--judge", help="an NLI model that is not the reward's (default: the run's judge)")
    args = parser.parse_args()
    config = load_config(ArtRunConfig, args.run / "config.yaml")
    if args.judge:
        config = dataclasses.replace(config, judge=args.judge)
    tuned = args.run / f"round_{args.round}" / "generator"
    if not tuned.is_dir():
        sys.exit(f"error: {tuned}: no tuned generator (is round {args.round} of {args.run} done?)")
    discriminator = str(args.run / "discriminator") if config.discriminator == TRAIN_IN_RUN else config.discriminator
    if args.round == 1:
        reward_encoder = load_encoder(config.encoder, config.pooling)
    else:
        reward_encoder = load_encoder(str(args.run / f"round_{args.round - 1}" / "encoder"))
    work = args.run / f"heldout-benchmark-round_{args.round}"
    result = held_out_comparison(
        config, load_discriminator(discriminator), reward_encoder, str(tuned), work, args.anchors
    )
    result |= {"run": str(args.run), "round": args.round}
    text = write_record(
        f"art_heldout-{args.run.name}",
        f"Raw vs tuned generator: `{args.run}` round {args.round}",
        [compare_markdown(result), ""],
        result,
        about=f"; judge `{result['judge']}`, cosines by `{result['cosine_encoder']}`.",
    )
    print(text)


if __name__ == "__main__":
    main()
