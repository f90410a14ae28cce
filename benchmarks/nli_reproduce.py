"""Is an NLI model trained again the one issue 42's records were judged by? Each record's nli_models.json names its
discriminator and judge by the SHA-256 of their model folders (records made since 2026-11-27 also by their weights'
alone), and the evidence page compares only runs whose digests agree, so a model lost with a machine's run folder can
stand in only if training it again gives the same weights.

    python benchmarks/nli_reproduce.py --role discriminator --model runs/nli-minilm-intel

``--model``: a folder `hardcse nli train` wrote (model/, manifest.json, nli_eval.json). Compares its folder's and its
weights' digests (art_rounds.model_digest, weights_digest) with the ones every evidence record names for ``--role``,
and its nli_eval.json with the committed one of the records' model (benchmarks/results/nli_models/NAME-nli_eval.json);
writes its row, by role and machine, into benchmarks/results/nli_models/reproduced.{json,md} with the machine, date
and commit its manifest names.
"""

import argparse
import json
import sys
from pathlib import Path

from art_rounds import RECORDS
from lib.digests import TRAINING_HISTORY, model_digest, weights_digest
from lib.provenance import NLI_RECORD, machine_line
from lib.record import write_json, write_record

RESULTS = Path(__file__).parent / "results" / "nli_models"
# the committed evaluation of the model each role's records name (its config's --out name)
COMMITTED = {"discriminator": "nli-minilm", "judge": "nli-judge"}
ACCURACY = "accuracy"  # of each held-out split in nli_eval.json


def records_digest(role: str) -> str | None:
    """The folder digest that every evidence record made before the weights' digest was kept (the records whose
    models were lost with a machine) names for ``role`` (None where they keep none); an error if they disagree."""
    models = [json.loads((r / NLI_RECORD).read_text(encoding="utf-8"))[role] for r in RECORDS.iterdir()]
    named = {model.get("sha256") for model in models if "weights_sha256" not in model}
    if len(named) != 1:
        sys.exit(f"error: the records under {RECORDS} name {len(named)} {role} digests; the page compares none of them")
    return named.pop()


def reproduction(role: str, model: Path) -> dict:
    """The row of ``model`` (a trained folder) against the records' ``role``."""
    for needed in ("model", "manifest.json", "nli_eval.json"):
        if not (model / needed).exists():
            sys.exit(f"error: {model / needed} is missing: --model takes a folder `hardcse nli train` finished")
    manifest = json.loads((model / "manifest.json").read_text(encoding="utf-8"))
    ours = json.loads((model / "nli_eval.json").read_text(encoding="utf-8"))
    committed = RESULTS / f"{COMMITTED[role]}-nli_eval.json"
    theirs = json.loads(committed.read_text(encoding="utf-8"))
    return {
        "role": role,
        "machine": machine_line(manifest["runs"][0]["machine"]).removeprefix("Machine: ").rstrip("."),
        "date": manifest["created"][:10],
        "git_commit": manifest["git_commit"],
        "sha256": model_digest(str(model)),
        "records_sha256": records_digest(role),
        "weights_sha256": weights_digest(str(model)),
        "records_weights_sha256": None,  # those records were made before the weights' digest was kept
        "same_eval": (model / "nli_eval.json").read_bytes() == committed.read_bytes(),
        "accuracy": {split: [round(ours[split][ACCURACY], 2), round(theirs[split][ACCURACY], 2)] for split in theirs},
    }


def markdown(rows: list[dict]) -> list[str]:
    """The page's lines under the record's header."""
    skipped = " and ".join(TRAINING_HISTORY)
    lines = [
        "A model stands in for the records' only where its weights are",
        f"theirs. The records' folder digest (`sha256`) also covers {skipped}, which hold the training's minutes, so",
        "no model trained again matches it; the weights' digest leaves them out, and records made since keep it too.",
        "Held-out evaluation: this model's nli_eval.json byte for byte against the records' model's, committed.",
        "",
        "| role | trained on | code | folder SHA-256 (records') | weights SHA-256 (records') | nli_eval.json the "
        "same | accuracy (records' model) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        accuracy = "; ".join(f"{split} {a:.2f} ({b:.2f})" for split, (a, b) in row["accuracy"].items())
        theirs = row["records_weights_sha256"]
        lines.append(
            f"| {row['role']} | {row['date']}, {row['machine']} | {row['git_commit'][:8]} | "
            f"{row['sha256'][:12]} ({row['records_sha256'][:12]}) | {row['weights_sha256'][:12]} "
            f"({theirs[:12] if theirs else 'not kept'}) | {'yes' if row['same_eval'] else 'no'} | {accuracy} |"
        )
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--role", choices=list(COMMITTED), required=True)
    parser.add_argument("--model", type=Path, required=True, help="a folder `hardcse nli train` wrote")
    args = parser.parse_args()
    row = reproduction(args.role, args.model)
    stored = RESULTS / "reproduced.json"
    rows = json.loads(stored.read_text(encoding="utf-8")) if stored.is_file() else []
    rows = [r for r in rows if (r["role"], r["machine"]) != (row["role"], row["machine"])] + [row]
    write_json("reproduced", rows, RESULTS)  # a row per role and machine, each with its own machine and date
    text = write_record(
        "reproduced",
        "NLI models trained again, against the ones issue 42's records were judged by",
        markdown(rows),
        command="python benchmarks/nli_reproduce.py --role ROLE --model FOLDER",
        about=" (a row per role and machine).",
        machine="Machine and date: per row, the trained folder's manifest's.",
        date=False,
        results=RESULTS,
    )
    print(text)


if __name__ == "__main__":
    main()
