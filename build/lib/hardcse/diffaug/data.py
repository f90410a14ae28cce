"""DiffAug's data: the label-scarce NLI sample, stage 1's classification rows, stage 2's contrastive rows."""

from __future__ import annotations

import random
from dataclasses import dataclass

from datasets import Dataset

from hardcse.data.corpus import read_sentences
from hardcse.data.nli import LABEL_ID, NLIPairs, read_nli_files
from hardcse.data.triplets import Triplet, nli_triplets
from hardcse.diffaug.config import DiffAugConfig
from hardcse.errors import HardcseError


@dataclass
class NLIData:
    """What a run may use of the NLI files after the label-scarce sample: pairs (stage 1, aux loss), triplets
    (supervised stage 2) and the entailment probe pairs of the stage-1 diagnostics, held out of stage 1."""

    pairs: NLIPairs
    triplets: list[Triplet]
    probe: tuple[list[str], list[str]]


def nli_data(config: DiffAugConfig) -> NLIData:
    """Seeded: a ``nli_fraction`` share of the pairs, and of the triplets built from all pairs (a pair sample
    would break up the premises that triplets need); probe pairs are at most a quarter of the sample's
    entailment pairs."""
    pairs = read_nli_files(config.nli_files)
    rng = random.Random(config.seed)
    order = list(range(len(pairs)))
    rng.shuffle(order)
    order = order[: max(1, round(len(order) * config.nli_fraction))]
    entailed = [i for i in order if pairs.labels[i] == LABEL_ID["entailment"]]
    probe_ids = entailed[: min(config.stage1.probe_pairs, len(entailed) // 4)]
    if not probe_ids:
        raise HardcseError(f"too few entailment pairs ({len(entailed)}) in the NLI data for the stage-1 probe")
    held_out = set(probe_ids)
    kept = [i for i in order if i not in held_out]
    subset = NLIPairs(
        [pairs.premises[i] for i in kept], [pairs.hypotheses[i] for i in kept], [pairs.labels[i] for i in kept]
    )
    triplets = nli_triplets(pairs)
    rng.shuffle(triplets)
    triplets = triplets[: max(1, round(len(triplets) * config.nli_fraction))]
    probe = ([pairs.premises[i] for i in probe_ids], [pairs.hypotheses[i] for i in probe_ids])
    return NLIData(subset, triplets, probe)


def classification_rows(pairs: NLIPairs, labels: str) -> tuple[list[str], list[str], list[int]]:
    """binary: entailment -> 1, contradiction -> 0, neutral dropped (the released code); three_way: all pairs."""
    if labels == "three_way":
        return pairs.premises, pairs.hypotheses, pairs.labels
    rows = [
        (p, h, int(y == LABEL_ID["entailment"]))
        for p, h, y in zip(pairs.premises, pairs.hypotheses, pairs.labels, strict=True)
        if y != LABEL_ID["neutral"]
    ]
    if not rows:
        raise HardcseError("no entailment or contradiction pairs in the NLI data")
    premises, hypotheses, ys = (list(c) for c in zip(*rows, strict=True))
    return premises, hypotheses, ys


def stage2_dataset(config: DiffAugConfig, data: NLIData) -> Dataset:
    """semi: (anchor, positive = anchor) from the unlabeled sentences, plus (premise, hypothesis, label) of NLI
    pairs cycled along the rows when the aux loss is on; sup: NLI triplets (anchor, positive, negative). Shuffled
    with the seed, then cut to ``max_examples``."""
    rng = random.Random(config.seed)
    if config.setting == "sup":
        if not data.triplets:
            raise HardcseError("the NLI data gives no (premise, entailment, contradiction) triplets")
        triplets = data.triplets[: config.max_examples]
        anchors, positives, negatives = (list(c) for c in zip(*triplets, strict=True))
        return Dataset.from_dict({"anchor": anchors, "positive": positives, "negative": negatives})
    sentences = read_sentences(config.unlabeled)
    rng.shuffle(sentences)
    sentences = sentences[: config.max_examples]
    columns: dict[str, list] = {"anchor": sentences, "positive": list(sentences)}
    if config.stage2.aux_weight > 0:
        premises, hypotheses, labels = classification_rows(data.pairs, config.stage1.labels)
        order = list(range(len(labels)))
        rng.shuffle(order)
        picks = [order[i % len(order)] for i in range(len(sentences))]
        columns |= {
            "premise": [premises[i] for i in picks],
            "hypothesis": [hypotheses[i] for i in picks],
            "label": [labels[i] for i in picks],
        }
    return Dataset.from_dict(columns)
