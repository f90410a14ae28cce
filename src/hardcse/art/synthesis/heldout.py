"""Does tuning make better data? The raw and the tuned generator write for the same held-out anchors; per
anchor measures, each side's mean with a 95% bootstrap interval over anchors and the paired difference.

Per anchor (its positive and its negative together):
    reward          mean reward of the two responses (a rejected one counts as invalid_penalty)
    parse_failure   share of the two responses the parser rejected
    synthetic_accuracy  the paper's Table 4 accuracy: the mean of synthetic_accuracy_positive and _negative, each 1
                    when the independent judge labels the KIND as asked (entailment for the positive, contradiction
                    for the negative) and 0 when it does not or the parser rejected it; undefined without a judge
    kept            1 when the triplet passed the run's filter (its drop_reason is null), else 0; undefined for
                    records no filter saw
    judged_correct  share of the parsed responses the independent judge labels as asked (entailment for the
                    positive, contradiction for the negative); undefined when none parsed or no judge
    positive_cosine, negative_cosine   cos(anchor, response) by one fixed encoder; undefined when rejected
    KIND_judged     1 when the judge labels the parsed KIND (positive, negative) as asked, else 0; undefined
                    when it was rejected or there is no judge
    KIND_cosine_judged  its cosine where the judge labels it as asked: the difficulty of correct answers (a
                    harder positive is further from its anchor, a harder negative closer); undefined elsewhere
    positive_deletion       1 when the parsed positive is a deletion of its anchor (hardcse/art/reward/shortcuts.py)
    negative_added_negation 1 when the parsed negative adds a negation word its anchor lacks
    KIND_leak       1 when the parsed KIND uses a word of the demonstration(s) its prompt showed (with the
                    generator's config; undefined without one)
    reward_parsed   mean reward of the parsed responses only: the reward with format set aside
    p_target_parsed mean P(target) (the reward's discriminator) of the parsed responses
    NAME_parsed     for each term of the reward (hardcse/art/reward/dual.py: r1 and r2 of the dual reward, then the
                    config's own), its mean (unweighted) value over the parsed responses; these undefined when none
                    parsed
A rising reward with a flat judged_correct is the sign of reward hacking: the generator learns the reward
discriminator's blind spots, not the task.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from sentence_transformers import SentenceTransformer

from hardcse.art.config import ArtRunConfig, GeneratorConfig
from hardcse.art.log_keys import DUAL_KEYS
from hardcse.art.reward.dual import TARGET_LABEL, Reward, judged
from hardcse.art.reward.shortcuts import shortcut_flags
from hardcse.art.synthesis.anchors import split_anchors
from hardcse.art.synthesis.triplets import synthesize
from hardcse.data.jsonl import read_jsonl
from hardcse.discriminator.nli import NLIDiscriminator
from hardcse.encoder.build import load_encoder
from hardcse.encoder.encode import pair_cosines
from hardcse.engines import Engine
from hardcse.stats import Interval, paired_bootstrap


def measures(terms: Sequence[str] = DUAL_KEYS) -> list[str]:
    """The measures' names in table order, for a reward of ``terms``."""
    return [
        *SYNTHETIC_ACCURACY,
        "kept",
        "reward",
        "parse_failure",
        "reward_parsed",
        "p_target_parsed",
        *(f"{name}_parsed" for name in terms),
        "judged_correct",
        "positive_cosine",
        "negative_cosine",
        *SHORTCUT_AND_DIFFICULTY,
    ]


# the paper's Table 4: the judge's accuracy of the generated positives and negatives, a rejected answer wrong
SYNTHETIC_ACCURACY = ("synthetic_accuracy", "synthetic_accuracy_positive", "synthetic_accuracy_negative")
# correctness per kind, the difficulty of correct answers, and the shortcuts
SHORTCUTS = ("positive_deletion", "negative_added_negation", "positive_leak", "negative_leak")  # shortcut_flags'
SHORTCUT_AND_DIFFICULTY = (
    "positive_judged",
    "negative_judged",
    "positive_cosine_judged",
    "negative_cosine_judged",
    *SHORTCUTS,
)


def per_anchor(
    records: list[dict],
    judge: NLIDiscriminator | None,
    encoder: SentenceTransformer,
    terms: Sequence[str] = DUAL_KEYS,
    generator: GeneratorConfig | None = None,
    engine: Engine | None = None,
) -> dict[str, np.ndarray]:
    """The measures of ``synthetic.jsonl`` records (scored by a reward of ``terms``; written from the prompts of
    ``generator``), one value per anchor (NaN = undefined); ``encoder``'s cosines computed in ``engine``."""
    n = len(records)
    out = {
        "reward": np.array([(r["positive_reward"] + r["negative_reward"]) / 2 for r in records], dtype=np.float64),
        "parse_failure": np.array([((r["positive"] is None) + (r["negative"] is None)) / 2 for r in records]),
    }
    correct = np.zeros((n, 2))
    parsed = np.zeros((n, 2), dtype=bool)
    for k, (kind, target) in enumerate(TARGET_LABEL.items()):
        rows = [i for i, r in enumerate(records) if r[kind] is not None]
        cosine = np.full(n, np.nan)
        if rows:
            anchors, outputs = [records[i]["anchor"] for i in rows], [records[i][kind] for i in rows]
            cosine[rows] = pair_cosines(encoder, anchors, outputs, engine)
            parsed[rows, k] = True
            if judge is not None:
                correct[rows, k] = judged(judge.predict_proba(anchors, outputs), target)
        out[f"{kind}_cosine"] = cosine
        kind_judged = np.where(parsed[:, k] & (judge is not None), correct[:, k], np.nan)
        out[f"{kind}_judged"] = kind_judged
        out[f"{kind}_cosine_judged"] = np.where(kind_judged == 1, cosine, np.nan)
        out[f"synthetic_accuracy_{kind}"] = correct[:, k] if judge is not None else np.full(n, np.nan)
    out["synthetic_accuracy"] = (out["synthetic_accuracy_positive"] + out["synthetic_accuracy_negative"]) / 2
    # undefined for records no filter saw (no drop_reason)
    out["kept"] = np.array([float(r["drop_reason"] is None) if "drop_reason" in r else np.nan for r in records])
    flags = shortcut_flags(records, generator)  # the leaks undefined without the prompts' demonstrations
    out |= {name: flags.get(name, np.full(n, np.nan)) for name in SHORTCUTS}
    with np.errstate(invalid="ignore", divide="ignore"):
        share = correct.sum(axis=1) / parsed.sum(axis=1)
    out["judged_correct"] = share if judge is not None else np.full(n, np.nan)
    # format set aside: the reward, each term and P(target) of the parsed responses (a mined negative counts as
    # parsed)

    def parsed_values(field: str) -> np.ndarray:
        values = [[r[f"{kind}_{field}"] if r[kind] is not None else np.nan for kind in TARGET_LABEL] for r in records]
        return np.array(values, dtype=float).reshape(n, 2)

    p_target = np.array(
        [[(r.get(f"{kind}_probs") or [np.nan] * 3)[t] for kind, t in TARGET_LABEL.items()] for r in records],
        dtype=float,
    ).reshape(n, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the mean of no parsed response is NaN, as meant
        out["reward_parsed"] = np.nanmean(parsed_values("reward"), axis=1)
        for name in terms:
            out[f"{name}_parsed"] = np.nanmean(parsed_values(name), axis=1)
        out["p_target_parsed"] = np.nanmean(p_target, axis=1)
    return out


def compare(
    raw: list[dict],
    tuned: list[dict],
    judge: NLIDiscriminator | None,
    encoder: SentenceTransformer,
    terms: Sequence[str] = DUAL_KEYS,
    generator: GeneratorConfig | None = None,
    engine: Engine | None = None,
) -> dict:
    """Each measure: raw and tuned means with their intervals, and tuned - raw with its paired interval (both sides
    prompted with ``generator``'s demonstrations; cosines in ``engine``)."""
    if [r["anchor"] for r in raw] != [r["anchor"] for r in tuned]:
        raise ValueError("the raw and the tuned records must be for the same anchors in the same order")
    a, b = (per_anchor(side, judge, encoder, terms, generator, engine) for side in (raw, tuned))
    result: dict = {"anchors": len(raw), "measures": measures(terms)}
    for name in result["measures"]:
        if not np.isfinite(a[name]).any() and not np.isfinite(b[name]).any():
            result[name] = None  # e.g. judged_correct without a judge
            continue
        intervals = paired_bootstrap(a[name], b[name])
        result[name] = {
            "raw": intervals["a"].to_dict(),
            "tuned": intervals["b"].to_dict(),
            "difference": intervals["difference"].to_dict(),
        }
    return result


def compare_markdown(result: dict) -> str:
    """One row per measure: raw, tuned and tuned - raw, each ``mean [low, high]``."""
    lines = [
        f"Held-out anchors: {result['anchors']}; 95% bootstrap intervals over anchors (paired for the difference).",
        "",
        "| measure | raw | tuned | tuned - raw |",
        "|---|---:|---:|---:|",
    ]

    def cell(i: dict) -> str:
        return f"{i['estimate']:.3f} [{i['low']:.3f}, {i['high']:.3f}]"

    for name in result.get("measures", measures()):  # records made before terms: the dual reward's
        r = result.get(name)
        if r is None:
            lines.append(f"| {name} | - | - | - |")
            continue
        d = r["difference"]
        mark = " *" if Interval(**d).excludes_zero() else ""
        lines.append(f"| {name} | {cell(r['raw'])} | {cell(r['tuned'])} | {cell(d)}{mark} |")
    lines += ["", "\\* the interval of the difference excludes zero."]
    return "\n".join(lines)


# the held-out measures a report's first line gives (heldout.json keys): the data's accuracy by the judge (the
# paper's Table 4), what RL optimises, and its meaning part
EFFECT_MEASURES = {
    "synthetic_accuracy": "synthetic accuracy (by the judge)",
    "reward": "reward",
    "p_target_parsed": "the discriminator's P(target) of parsed answers",
}


def effect_line(config: dict, compared: list[tuple[str, dict]]) -> str:
    """A run report's first line: what RL did to the generator, by the last of the rounds' held-out comparisons
    (``compared``: (round, heldout.json); tuned - raw, paired 95% intervals over anchors), or plainly why the run
    has no such measure (``config``: the run's saved config)."""
    from hardcse.evaluation.compare import verdict

    if not config.get("tune_generator", True):
        return "**What RL did**: nothing here: this run writes its data with the raw generator, without RL."
    if not compared:
        if config.get("heldout_anchors", 1) == 0:  # a folder from before the key compared: only 0 turns it off
            return "**What RL did**: not measured: the held-out comparison is off (`heldout_anchors: 0`)."
        return "**What RL did**: not measured yet: no round has compared the raw and the tuned generator."
    name, heldout = compared[-1]

    def part(key: str, label: str) -> str:
        measured = heldout.get(key) or {}
        difference = measured.get("difference")
        if key == "synthetic_accuracy" and not measured:
            return f"{label} not measured (no `judge`)"
        if not difference or not math.isfinite(difference["estimate"]):
            return f"{label} not measured (no parsed answers to compare)"
        if key != "synthetic_accuracy":
            return f"{label} {verdict(Interval(**difference), 3)}"
        sides = f"{measured['tuned']['estimate']:.3f} tuned against {measured['raw']['estimate']:.3f} untuned"
        return f"{label} {sides}, {verdict(Interval(**difference), 3)}"

    said = [part(key, label) for key, label in EFFECT_MEASURES.items() if key in heldout]
    return (
        f"**What RL did** ({name}: the tuned against the raw generator on {heldout['anchors']} held-out anchors, "
        f"95% intervals): {'; '.join(said)}."
    )


def held_out_comparison(
    config: ArtRunConfig,
    discriminator: NLIDiscriminator,
    reward_encoder: SentenceTransformer,
    tuned_generator: str,
    work_dir: Path,
    n_anchors: int,
    engine: Engine | None = None,
) -> dict:
    """The raw (``config.generator.model``) and the tuned generator write for the first ``n_anchors`` held-out
    anchors at the synthesis temperature (the raw one's texts cached: written once per machine and set-up), scored
    by the reward of the round (``reward_encoder`` judged difficulty during tuning), judged by ``config.judge`` and
    measured by the starting encoder, all in ``engine`` (the command's; default: ``config.engine`` resolved). Both
    sides' records go to ``work_dir/{raw,tuned}/``; returns :func:`compare`'s result."""
    engine = engine or Engine.resolve(config.engine)
    anchors = split_anchors(config.anchors).held_out[:n_anchors]
    reward = Reward(discriminator, reward_encoder, config.reward, engine)
    generation = config.generator
    if config.synthesis_temperature is not None:
        generation = dataclasses.replace(generation, sampling_temperature=config.synthesis_temperature)
    one_each = dataclasses.replace(config.filter, candidates=1)  # the generators' own answers, not a best of k
    records, per_minute = {}, {}
    for side, source in (("raw", config.generator.model), ("tuned", tuned_generator)):
        # the raw generator's texts are the same every round and run: generated once, then read from the cache
        synthesize(
            source,
            anchors,
            generation,
            reward,
            one_each,
            work_dir / side,
            engine=engine,
            cache_generations=side == "raw" or config.reuse,
        )
        records[side] = read_jsonl(work_dir / side / "synthetic.jsonl")
        report = json.loads((work_dir / side / "synthesis.json").read_text())
        # kept triplets a minute of generation, scoring and filtering; not a speed where texts came from the cache
        timed = report["seconds"] > 0 and not report["cached_batches"]
        per_minute[side] = round(report["kept"] / report["seconds"] * 60, 1) if timed else None
    judge = NLIDiscriminator.load(config.judge, device=config.device) if config.judge else None
    cosine_encoder = load_encoder(config.encoder, config.pooling, device=config.device)
    terms = [t.name for t in reward.terms]
    result = compare(records["raw"], records["tuned"], judge, cosine_encoder, terms, config.generator, engine)
    sources = {"raw_generator": config.generator.model, "tuned_generator": tuned_generator}
    extra = {"judge": config.judge, "cosine_encoder": config.encoder, "kept_per_minute": per_minute}
    return result | extra | sources
