"""`hardcse assay` of a recorded run's training data, kept per training seed so that an interrupted assay (or one
continued in another session) redoes only what is missing: the shared step of benchmarks/hard_correct.py (one
round's kept triplets) and benchmarks/art_rounds.py (every round's training triplets).

Each evaluation goes to OUT/NAME.tT.eval.json.gz (gzip, no timestamp), with OUT/NAME.json: rows, steps, the SHA-256
of the assayed triplets (what decides the evaluations besides rows and steps: a record run again with other data is
refused, not paired with the old evaluations) and each assay's command, date, minutes, machine, commit and the
digest of its resolved config less what names or counts its data (:func:`refuse_mixed_assays`: the assays compared
on one page ran one config, and provenance.code_line checks their commits as it checks the runs').
"""

import gzip
import hashlib
import json
import shlex
import sys
import time
from pathlib import Path

import yaml

from hardcse.cli import main as hardcse
from hardcse.data.triplets import Triplet, read_triplets
from hardcse.evaluation.results import Result
from hardcse.run_folder import git_commit
from lib.record import stamp
from lib.record_files import plain_file


def training_triplets(record: Path) -> list[Triplet]:
    """The triplets a recorded ART run trained its encoders on: each round's first ``triplets_per_round``."""
    config = yaml.safe_load((record / "config.yaml").read_text(encoding="utf-8"))
    rounds = sorted(record.glob("round_[1-9]*"), key=lambda p: int(p.name.split("_")[1]))
    per_round = config.get("triplets_per_round")
    return [t for r in rounds for t in read_stored_triplets(r / "triplets.csv")[:per_round]]


def read_stored_triplets(path: Path) -> list[Triplet]:
    """A record's triplets file, kept plain or compressed (record_files)."""
    with plain_file(path) as plain:
        return read_triplets(plain)


def triplets_digest(triplets: list[Triplet]) -> str:
    """SHA-256 of the triplets' texts, in order (the key of an assay's evaluations)."""
    return hashlib.sha256(json.dumps(triplets, ensure_ascii=False).encode()).hexdigest()


# what an assay's config.yaml says of its data (rows: how many triplets a record holds, a round may keep fewer than
# it trains on; NAME.json keeps it); the rest is the method
PER_DATA_KEYS = ("data", "names", "seeds", "rows")


def config_digest(config: Path) -> str:
    """SHA-256 of an assay's resolved config.yaml without PER_DATA_KEYS: equal for assays run the same way."""
    resolved = yaml.safe_load(config.read_text(encoding="utf-8"))
    method = {k: v for k, v in resolved.items() if k not in PER_DATA_KEYS}
    return hashlib.sha256(json.dumps(method, sort_keys=True).encode()).hexdigest()


def assay_provenance(folder: Path, resumed_on: str | None = None) -> dict:
    """The commit and config digest of the ``hardcse assay`` run in ``folder`` (its manifest.json and config.yaml);
    with ``resumed_on`` (the commit of a process that resumed it) other than the one it started on, that commit too:
    a resumed assay ran both, and both are checked."""
    commit = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["git_commit"]
    resumed = {"resumed_on": resumed_on} if resumed_on and resumed_on != commit else {}
    return {"commit": commit, **resumed, "config_sha256": config_digest(folder / "config.yaml")}


def assay_record(name: str, data: Path, out: Path, work: Path, train_seeds: list[int], rows: int, steps: int) -> None:
    """``hardcse assay`` of ``data``'s first ``rows`` triplets for ``steps`` steps at the training seeds not yet
    kept in ``out`` (run folder under ``work``)."""
    meta_path = out / f"{name}.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else None
    digest = triplets_digest(read_triplets(data)[:rows])
    if meta and (meta["rows"], meta["steps"], meta.get("data_sha256")) != (rows, steps, digest):
        sys.exit(
            f"error: {meta_path}: assayed at rows={meta['rows']}, steps={meta['steps']}, data "
            f"{str(meta.get('data_sha256'))[:12]}, now rows={rows}, steps={steps}, data {digest[:12]} ({data}); "
            f"remove {out}/{name}.* to assay it again (and the others it is compared with)"
        )
    missing = [t for t in train_seeds if not (out / f"{name}.t{t}.eval.json.gz").is_file()]
    if not missing:
        return
    folder = work / f"{name}-{digest[:12]}.t{'-'.join(map(str, missing))}"  # --resume never crosses data
    argv = [
        "assay", "--data", str(data), "--names", name, "--seeds", *map(str, missing), "--out", str(folder),
        f"rows={rows}", f"training.max_steps={steps}",
    ]  # fmt: skip
    start = time.perf_counter()
    print("$ hardcse " + " ".join(argv), flush=True)
    resuming = (folder / "config.yaml").is_file()
    resumed_on = git_commit() if resuming else None  # the manifest names only the commit the assay started on
    if status := hardcse([*argv, *(["--resume"] if resuming else [])]):
        sys.exit(status)
    out.mkdir(parents=True, exist_ok=True)
    for seed in missing:
        evaluation = (folder / name / f"seed-{seed}" / "eval.json").read_bytes()
        (out / f"{name}.t{seed}.eval.json.gz").write_bytes(gzip.compress(evaluation, mtime=0))
    meta = meta or {"rows": rows, "steps": steps, "data_sha256": digest, "assays": []}
    meta["assays"].append(
        {
            "seeds": missing,
            **stamp(shlex.join(["hardcse", *argv])),  # its command, date and machine
            "minutes": round((time.perf_counter() - start) / 60, 1),
            **assay_provenance(folder, resumed_on),
        }
    )
    meta_path.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")


def refuse_mixed_assays(metas: dict[str, dict], folder: Path) -> dict[str, list[str]]:
    """The assays' commits (commit -> 'assay of NAME' for each assay that ran it) of the records' kept assays
    (record name -> its parsed ``folder``/NAME.json), after checking that they all ran one config; an error naming
    the assays otherwise, or naming the file whose assays keep no commit or config digest."""
    configs: dict[str, list[str]] = {}
    commits: dict[str, list[str]] = {}
    for name, meta in metas.items():
        for entry in meta["assays"]:
            if not entry.get("config_sha256") or not entry.get("commit"):
                sys.exit(
                    f"error: {folder / f'{name}.json'}: an assay keeps no commit or config digest; remove "
                    f"{folder}/{name}.* and run the benchmark without --skip-runs to assay it again"
                )
            configs.setdefault(entry["config_sha256"], []).append(name)
            for commit in filter(None, (entry["commit"], entry.get("resumed_on"))):
                commits.setdefault(commit, []).append(f"assay of {name}")
    if len(configs) > 1:
        listed = "; ".join(f"config {digest[:12]}: {', '.join(names)}" for digest, names in configs.items())
        sys.exit(f"error: the assays ran different configs ({listed}): assay them again with one config")
    return commits


def assayed(
    name: str, out: Path, train_seeds: list[int], generation: int, data: list[Triplet], cluster: bool = False
) -> list[Result]:
    """The assayed encoders of one record from ``out``: a member's seed is generation seed x 100 + training seed;
    with ``cluster``, its cluster is the generation seed (the bootstrap then resamples generation runs first).
    ``data``: the record's training triplets, whose first ``rows`` must be what was assayed."""
    meta_path = out / f"{name}.json"
    if not meta_path.is_file():
        sys.exit(f"error: {meta_path} is missing; run the benchmark without --skip-runs to assay {name}")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    if meta.get("data_sha256") != triplets_digest(data[: meta["rows"]]):
        sys.exit(
            f"error: {meta_path} assayed other data than the record {name} holds now; remove {out}/{name}.* and "
            "run the benchmark without --skip-runs to assay it again"
        )
    members = []
    for seed in train_seeds:
        path = out / f"{name}.t{seed}.eval.json.gz"
        if not path.is_file():
            sys.exit(f"error: {path} is missing; run the benchmark without --skip-runs to assay {name}")
        evaluation = json.loads(gzip.decompress(path.read_bytes()))
        members.append(
            Result(f"{name}.t{seed}", evaluation, {"seed": generation * 100 + seed}, generation if cluster else None)
        )
    return members
