"""Does one side's difference from another hold across seeds? Pools benchmarks/warm_assay.py records of calls alike
(the same sides, rows, training seeds, steps and filter), one call a seed: the assays' eval.json files of every call,
the call the cluster of its training seeds, in one clustered paired bootstrap (hardcse/evaluation/paired.py: the
clusters' spread with t at G - 1 degrees of freedom, the test pairs' beside it). Two designs:

- one sampling seed for all calls (``--sample-seed``) and an RL seed each: the untuned ``--before`` side wrote once
  and is checked to be the same data in every call, so the interval holds RL's seeds (a tuned side against its
  untuned generator: RL's own effect);
- a sampling seed each (and the RL seed with it): both sides wrote anew in every call, so the interval holds the
  generation's luck too (a side against mined negatives, say).

The judge's measures and the kept fraction stand per call as each recorded them (paired over its anchors), with
their mean over calls and a t interval over the calls' estimates.

    python benchmarks/warm_assay_seeds.py --work DIR --records NAME [NAME ...] [--before warm_long_strong]
        [--after art_strong] [--assay-dir NAME=DIR ...] [--name warm_assay_seeds]

``--records``: the calls' record names in benchmarks/results. A record names its assay folder (``assay_dir``, under
``--work``); for a record made before it did, ``--assay-dir NAME=DIR`` names it, and the pooling checks each folder
against its record (every group's mean avg7 as recorded, the untuned side trained on the same triplets file in
every call). Reads files only: runs in seconds. Writes benchmarks/results/NAME.md and NAME.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

from lib.record import RESULTS, interval_cell, signed_interval, write_record

MEASURES = ("synthetic_accuracy_positive", "synthetic_accuracy_negative", "synthetic_accuracy", "kept")
COLUMNS = ("avg7", "STS-B-dev")
# what calls must share to be pooled: the assay's, the generation's and the warm starts' settings
SETTINGS = ("rows", "train_seeds", "rl_steps", "candidates", "reject_shortcuts", "reward_penalties", "strong_filter")
SETTINGS += ("warm_start", "long_warm_start")


def setting(record: dict, key: str) -> object:
    """A record's ``key`` as the pooling compares it: a warm start by its training config."""
    value = record.get(key)
    return value["config"] if key.endswith("warm_start") and value else value


def fail(message: str) -> None:
    sys.exit(f"error: {message}")


def signed(interval: dict, sign: int) -> dict:
    """A recorded B - A interval as A - B where ``sign`` is -1."""
    if sign == 1:
        return interval
    return {**interval, "estimate": -interval["estimate"], "low": -interval["high"], "high": -interval["low"]}


def seeds_interval(values: list[float]) -> dict:
    """The mean of the seeds' estimates with a t interval (G - 1 degrees of freedom) over them."""
    from scipy.stats import t

    v = np.asarray(values, dtype=float)
    half = float(t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else float("nan")
    return {"estimate": float(v.mean()), "low": float(v.mean() - half), "high": float(v.mean() + half), "n": len(v)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True, help="the warm_assay.py calls' --work folder")
    parser.add_argument("--records", nargs="+", required=True, help="warm_assay.py records, one a call")
    parser.add_argument("--before", default="warm_long_strong", help="side A of B - A (the untuned side)")
    parser.add_argument("--after", default="art_strong", help="side B of B - A (the tuned side)")
    parser.add_argument("--assay-dir", nargs="*", default=[], help="NAME=DIR for a record that names no assay folder")
    parser.add_argument("--name", default="warm_assay_seeds", help="the record's name in benchmarks/results")
    args = parser.parse_args()

    from hardcse.evaluation.compare import compare_groups, comparison_json, comparison_markdown
    from hardcse.evaluation.results import Result

    work, before, after = Path(args.work), args.before, args.after
    overrides = dict(item.split("=", 1) for item in args.assay_dir if "=" in item)
    if len(overrides) != len(args.assay_dir):
        fail("--assay-dir takes NAME=DIR items")
    records = {}
    for name in args.records:
        path = RESULTS / f"{name}.json"
        if not path.is_file():
            fail(f"{path}: no such record; --records names warm_assay.py records in benchmarks/results")
        records[name] = json.loads(path.read_text())
    first = next(iter(records.values()))
    for name, r in records.items():
        if not {before, after} <= set(r["sides"]):
            fail(f"{name}: its sides are {', '.join(r['sides'])}, not {before} and {after}")
        for key in SETTINGS:
            if (value := setting(r, key)) != (expected := setting(first, key)):
                fail(f"{name}: {key} {value} where {args.records[0]} has {expected}; pool calls alike")
    seeds = [(r["rl_seed"], r.get("sample_seed", r["rl_seed"])) for r in records.values()]  # (RL, sampling)
    samples = {sample for _, sample in seeds}
    if len(set(seeds)) != len(seeds):
        fail(f"two records ran the same RL and sampling seeds ({seeds}); pool one call a seed")
    if len(samples) not in (1, len(seeds)):
        fail(f"the records' sampling seeds {[s for _, s in seeds]} are neither one for all nor one each")
    fixed = len(samples) == 1 and len(seeds) > 1  # the before side wrote once: checked below

    groups, before_data, calls = {before: [], after: []}, set(), {}
    for call, (name, r) in enumerate(records.items(), start=1):
        folder = overrides.get(name) or r.get("assay_dir")
        if folder is None:
            fail(f"{name}: its record names no assay folder; pass --assay-dir {name}=DIR")
        assay = work / folder
        config = (assay / "config.yaml").read_text() if (assay / "config.yaml").is_file() else ""
        # the untuned side's triplets, by content: a folder regenerated under a newer chunk key holds the same file
        for line in config.splitlines():
            if f"/{before}-" in line:
                data = Path(line.strip().removeprefix("- "))
                before_data.add(hashlib.sha256(data.read_bytes()).hexdigest() if data.is_file() else str(data))
        for side in (before, after):
            members = [
                Result(side, json.loads((assay / side / f"seed-{s}" / "eval.json").read_text()), {"seed": s})
                for s in r["train_seeds"]
                if (assay / side / f"seed-{s}" / "eval.json").is_file()
            ]
            recorded = r["assay"]["groups"][side]["scores"]["avg7"]["mean"]
            mean = float(np.mean([m.record["avg7"] for m in members])) if members else float("nan")
            if len(members) != len(r["train_seeds"]) or abs(mean - recorded) > 1e-6:
                fail(f"{assay}: its {side} runs are not {name}'s (avg7 {mean:.4f}, recorded {recorded:.4f})")
            groups[side] += [Result(m.label, m.record, m.config, cluster=call) for m in members]
            calls.setdefault(name, {})[side] = members
    if fixed and len(before_data) != 1:
        fail(f"the records' {before} sides trained on {len(before_data)} different triplets files, not one")

    comparison = compare_groups(groups, [(before, after)])
    per_seed = []
    for name, r in records.items():
        # the judge's measures as the call recorded them (warm_assay.py pairs no side with mined: none then)
        pairs = r["judged_pairs"]
        sign, judged = (1, pairs.get(f"{after} - {before}")) if f"{after} - {before}" in pairs else (-1, None)
        if judged is None and f"{before} - {after}" in pairs:
            judged = pairs[f"{before} - {after}"]
        own = compare_groups(calls[name], [(before, after)]).differences[(before, after)]  # this call alone
        per_seed.append(
            {
                "record": name,
                "rl_seed": r["rl_seed"],
                "sample_seed": r.get("sample_seed", r["rl_seed"]),
                "rl_minutes": r["rl_minutes"].get(after),
                "kept_fraction": r["sides"][after]["kept_fraction"],
                "judged": {m: signed(judged[m], sign) for m in MEASURES} if judged else None,
                "assay": {c: own[c].to_dict() for c in COLUMNS if c in own},
            }
        )
    payload = {
        "records": args.records,
        "before": before,
        "after": after,
        "seeds": [{"rl": rl, "sampling": sample} for rl, sample in seeds],
        "before_written_once": fixed,
        "rows": first["rows"],
        "train_seeds": first["train_seeds"],
        "assay_dirs": {n: overrides.get(n) or r.get("assay_dir") for n, r in records.items()},
        "per_seed": per_seed,
        "judged_over_seeds": {
            m: seeds_interval([s["judged"][m]["estimate"] for s in per_seed if s["judged"]]) for m in MEASURES
        }
        if all(s["judged"] for s in per_seed)
        else None,
        "assay": comparison_json(comparison),
        "assay_table": comparison_markdown(comparison),
    }
    title = f"{after} against {before} over {'RL' if fixed else 'generation'} seeds"
    write_record(args.name, title, page(payload), payload)


def page(p: dict) -> list[str]:
    sampling = {s["sampling"] for s in p["seeds"]}
    design = (
        f"The {p['before']} side wrote once (sampling seed {sampling.pop()}), so the intervals hold RL's seeds and the "
        "test pairs, not that one sample's luck."
        if p["before_written_once"]
        else "Both sides wrote anew in each call (its own sampling seed), so the intervals hold the generation's luck "
        "too."
    )
    lines = [
        f"{len(p['seeds'])} warm_assay.py calls (records {', '.join(p['records'])}), each training the assay on the "
        f"first {p['rows']} kept triplets of both sides at training seeds {', '.join(map(str, p['train_seeds']))}. "
        + design,
        "",
        f"Per call ({p['after']} - {p['before']}; the judge's measures paired over each call's anchors, the assay's "
        "over test pairs and training seeds):",
        "",
        "| RL seed | sampling seed | RL min | kept fraction | judged positive | judged negative | judged both | kept | "
        "avg7 | STS-B dev |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in p["per_seed"]:
        j, a = s["judged"], s["assay"]
        lines.append(
            f"| {s['rl_seed']} | {s['sample_seed']} | {s['rl_minutes'] if s['rl_minutes'] is not None else '-'} | "
            f"{interval_cell(s['kept_fraction'])} | "
            + " | ".join(signed_interval(j[m]) if j else "-" for m in MEASURES)
            + " | "
            + " | ".join(signed_interval(a[c], 2) if c in a else "-" for c in COLUMNS)
            + " |"
        )
    o = p["judged_over_seeds"]
    if o and len(p["per_seed"]) > 1:
        lines.append("| mean (t over calls) | | | | " + " | ".join(signed_interval(o[m]) for m in MEASURES) + " | | |")
    lines += [
        "",
        f"Pooled assay (each call the cluster of its {len(p['train_seeds'])} training runs"
        + (
            f"; the {p['before']} row's runs are the same data trained once a call, so its n counts repeats"
            if p["before_written_once"]
            else ""
        )
        + "):",
        "",
        p["assay_table"],
        "",
    ]
    return lines


if __name__ == "__main__":
    main()
