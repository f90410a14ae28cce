"""DiffAug's data: the label-scarce NLI sample, stage 1's classification rows, stage 2's contrastive rows."""

from __future__ import annotations

import random
from dataclasses import dataclass

from datasets import Dataset

from hardcse.data.corpus import read_sentences
from hardcse.data.decontamination import Decontamination, sentence_texts
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
    decontamination: Decontamination  # the NLI pairs' check; stage 2 adds its unlabeled sentences'


def nli_data(config: DiffAugConfig) -> NLIData:
    """Seeded: a ``nli_fraction`` share of the (premise, entailment, contradiction) triplets built from the NLI
    files. Every label a run uses comes from that sample, for DiffAug and its baselines alike (the released code's
    stage 1 reads the same triplet file as the supervised training): stage 1's and the aux loss's pairs are the
    sampled triplets' (premise, entailment) and (premise, contradiction) pairs (``three_way`` adds the neutral
    hypotheses of the same premises). The probe pairs of the stage-1 diagnostics are the entailment pairs of the
    first min(probe_pairs, a quarter) sampled triplets, whose pairs stage 1 does not train on; the supervised
    stage 2 keeps all the sampled triplets. NLI pairs with a text that matches an evaluation text are dropped
    first (``decontamination``)."""
    check = Decontamination(config.decontamination)
    pairs = _decontaminated(read_nli_files(config.nli_files), check)
    triplets = nli_triplets(pairs)
    random.Random(config.seed).shuffle(triplets)
    triplets = triplets[: max(1, round(len(triplets) * config.nli_fraction))]
    n_probe = min(config.stage1.probe_pairs, len(triplets) // 4)
    if not n_probe:
        raise HardcseError(
            f"too few triplets ({len(triplets)}) in the NLI sample for the stage-1 probe (a quarter of them); "
            "raise nli_fraction or give more NLI data"
        )
    rows = [
        (premise, hypothesis, LABEL_ID[label])
        for premise, positive, negative in triplets[n_probe:]
        for hypothesis, label in ((positive, "entailment"), (negative, "contradiction"))
    ]
    if config.stage1.labels == "three_way":
        neutral: dict[str, list[str]] = {}
        for premise, hypothesis, label in zip(pairs.premises, pairs.hypotheses, pairs.labels, strict=True):
            if label == LABEL_ID["neutral"]:
                neutral.setdefault(premise, []).append(hypothesis)
        premises = dict.fromkeys(t[0] for t in triplets[n_probe:])
        rows += [(p, h, LABEL_ID["neutral"]) for p in premises for h in neutral.get(p, [])]
    subset = NLIPairs([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
    probe = ([t[0] for t in triplets[:n_probe]], [t[1] for t in triplets[:n_probe]])
    return NLIData(subset, triplets, probe, check)


def _decontaminated(pairs: NLIPairs, check: Decontamination) -> NLIPairs:
    rows = list(zip(pairs.premises, pairs.hypotheses, pairs.labels, strict=True))
    kept = check.filter("nli", rows, lambda r: [("premise", r[0]), ("hypothesis", r[1])])
    return NLIPairs([r[0] for r in kept], [r[1] for r in kept], [r[2] for r in kept])


def classification_rows(pairs: NLIPairs, labels: str) -> tuple[list[str], list[str], list[int]]:
    """binary: entailment -> 1, contradiction -> 0, neutral dropped (the released code); three_way: all pairs with
    their three labels."""
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
    with the seed, then cut to ``max_examples``; unlabeled sentences that match an evaluation text are dropped
    before (counted in ``data.decontamination``)."""
    rng = random.Random(config.seed)
    if config.setting == "sup":
        if not data.triplets:
            raise HardcseError("the NLI data gives no (premise, entailment, contradiction) triplets")
        triplets = data.triplets[: config.max_examples]
        anchors, positives, negatives = (list(c) for c in zip(*triplets, strict=True))
        return Dataset.from_dict({"anchor": anchors, "positive": positives, "negative": negatives})
    sentences = data.decontamination.filter("unlabeled", read_sentences(config.unlabeled), sentence_texts)
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
