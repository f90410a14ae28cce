"""Is a refactor's behaviour unchanged? Two run folders of the same command, made by the code before and after,
compared file by file.

    python benchmarks/behaviour_unchanged.py --name house_refactor \
        --pair "smoke: d1b2c03 -> 39a4a85" runs/smoke-before runs/smoke-after ...

Each pair's folders come from ``hardcse art run --config NAME --out DIR`` on one machine, each with an empty
``HARDCSE_CACHE`` and ``PYTHONPATH`` set to a worktree of the commit. A file is byte-identical, or equal once what
names the folder (its path, the cache's path) and what measures time (keys with "seconds", ``*_s``,
``tokens_per_second``, ``per_minute``) are set aside, or different. Expected among the last: a run's manifest, log
and report (they time the stages), the model cards (they time the training), the adapter's adapter_config.json (peft
writes its target modules from a set, in an order that varies from process to process), and config.yaml where the
configs gained keys (their defaults change nothing).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from lib.record import write_record

ARTEFACTS = re.compile(r"synthetic\.jsonl|triplets\.csv|\.safetensors|rl_state\.pt|eval\.json|heldout\.json")


def _untimed(value: object) -> object:
    if isinstance(value, dict):
        timed = ("seconds", "tokens_per_second", "per_minute")  # kept_per_minute: kept triplets over a timing
        return {k: _untimed(v) for k, v in value.items() if not (any(t in k for t in timed) or k.endswith("_s"))}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _placeless(text: str, folder: Path) -> str:
    text = text.replace(str(folder), "RUN").replace(folder.name, "RUN")
    # the cache's folder, and in it a converted checkpoint's (named with a digest of the code that converted it)
    return re.sub(r"/\S*?cache[^/\"\s]*(/[\w.-]+?-[0-9a-f]{16})?", "CACHE", text)


def _parsed(text: str, suffix: str) -> object:
    lines = [json.loads(line) for line in text.splitlines() if line.strip()] if suffix == ".jsonl" else None
    return _untimed(lines if lines is not None else json.loads(text))


def compare(before: Path, after: Path) -> dict[str, list[str]]:
    """The files of ``before`` sorted by how they compare with ``after``'s (plots aside: drawn from the others)."""
    out: dict[str, list[str]] = {"byte_identical": [], "equal_untimed": [], "different": []}
    for path in sorted(p.relative_to(before) for p in before.rglob("*") if p.is_file() and p.suffix != ".png"):
        a, b = before / path, after / path
        if b.is_file() and a.read_bytes() == b.read_bytes():
            out["byte_identical"].append(str(path))
            continue
        try:
            ta, tb = _placeless(a.read_text(), before), _placeless(b.read_text(), after)
            same = ta == tb or (
                path.suffix in (".json", ".jsonl") and _parsed(ta, path.suffix) == _parsed(tb, path.suffix)
            )
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            same = False
        out["equal_untimed" if same else "different"].append(str(path))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--name", required=True, help="the record's name under benchmarks/results")
    parser.add_argument("--pair", nargs=3, action="append", required=True, metavar=("LABEL", "BEFORE", "AFTER"))
    args = parser.parse_args()
    results = {label: compare(Path(before), Path(after)) for label, before, after in args.pair}
    columns = "byte-identical | equal, paths and timings aside | different | key artefacts byte-identical"
    lines = [f"| pair | {columns} | key artefacts different |", "|---|---:|---:|---:|---:|---|"]
    for label, r in results.items():
        artefacts = [f for files in r.values() for f in files if ARTEFACTS.search(f)]
        same = sum(f in r["byte_identical"] for f in artefacts)
        off = [f for f in r["different"] if ARTEFACTS.search(f)]
        counts = " | ".join(str(len(r[k])) for k in ("byte_identical", "equal_untimed", "different"))
        lines.append(f"| {label} | {counts} | {same} of {len(artefacts)} | {', '.join(off) or 'none'} |")
    lines += ["", "Key artefacts: generations (synthetic.jsonl), triplets, weights (.safetensors), the RL state,"]
    lines += ["eval.json and heldout.json (these two name their folder and time themselves: equal once set aside).", ""]
    lines += ["Each folder: `hardcse art run --config NAME --out DIR`, an empty `HARDCSE_CACHE`, `PYTHONPATH` at a"]
    lines += ["worktree of the commit; the expected differences are in the module docstring.", ""]
    lines += ["Different files, by pair:", ""]
    lines += [f"- {label}: {', '.join(r['different']) or 'none'}" for label, r in results.items()]
    write_record(args.name, "Behaviour before and after a refactor", [*lines, ""], {"pairs": results})


if __name__ == "__main__":
    main()
