"""Where, when and from what a benchmark record was made (issue 43: every record names its machine), and the
checks that the runs one page compares are comparable.

A figure depends on the machine it was computed on (hardcse/machine.py says how), so every record under
benchmarks/results names it. :func:`machine_line` words a :func:`hardcse.machine.machine_record` (by default this
machine's, today; record.write_record puts it in a new record's header); a table rebuilt from stored runs on another
day names the machine and date the runs' own manifests recorded, never today's (:func:`recorded_machines`,
:func:`recorded_dates`), and says "machine not recorded" for runs whose records do not hold it. The code the runs ran
(:func:`code_line`, :func:`code_line_by_seed`) and the NLI models that judged them (:func:`nli_line`) are named the
same way, from the records; the refusals stop a page that would compare runs of one generation seed made on other
machines (:func:`refuse_mixed_machines`), by other NLI models (:func:`refuse_mixed_nli`) or other code, and an
evidence run started from code git has not committed (:func:`refuse_uncommitted_code`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import date as _date
from pathlib import Path

from hardcse.machine import machine_record

REPOSITORY = Path(__file__).resolve().parents[2]  # git runs here: pathspecs are relative to where it runs


def machine_line(machine: dict | None = None, date: str | None = None) -> str:
    """One sentence: CPU model, cores, torch's threads, the CPU's kernel flags, torch's version and the GPU (if
    one is visible). ``machine``: a stored :func:`machine_record` (default: this machine's, dated ``date`` or
    today)."""
    if machine is None:
        machine, date = machine_record(), date or str(_date.today())
    flags = " ".join(machine.get("cpu_flags") or []) or "none of hardcse.machine.KERNEL_FLAGS"
    gpu = f"GPU {machine['gpu']}" if machine.get("gpu") else "no GPU"
    torch = (machine.get("versions") or {}).get("torch")
    return (
        f"Machine{f' ({date})' if date else ''}: {machine['cpu']}, {machine['cores']} cores, "
        f"{machine['threads']} torch threads, flags {flags}, torch {torch}, {gpu}."
    )


def _machines(manifest: Path) -> list[str]:
    """The machine of each part of a run (a resumed run has one per start), from its manifest.json; "machine not
    recorded" (with the platform and torch version where the manifest names them) for a part, or a run, whose
    manifest does not hold one."""
    if not manifest.is_file():
        return ["machine not recorded (the record keeps no manifest)"]
    record = json.loads(manifest.read_text(encoding="utf-8"))
    found = []
    for run in record.get("runs") or [{}]:
        if "machine" in run:
            found.append(machine_line(run["machine"]).removeprefix("Machine: ").rstrip("."))
            continue
        versions = record.get("versions") or {}
        known = ", ".join(filter(None, [run.get("platform"), versions.get("torch") and f"torch {versions['torch']}"]))
        found.append(f"machine not recorded{f' ({known})' if known else ''}")
    return list(dict.fromkeys(found))


def recorded_machines(records: dict[str, Path]) -> str:
    """One sentence naming the machines of stored runs (run name -> its record folder), from the records' manifests
    alone: the same on any day and machine that rebuilds the table."""
    groups: dict[str, list[str]] = {}
    for name, folder in records.items():
        groups.setdefault("; then ".join(_machines(folder / "manifest.json")), []).append(name)
    if len(groups) == 1:
        runs = f"{len(records)} runs" if len(records) > 1 else "run"
        return f"Machine of the {runs} (from their records, not today's): {next(iter(groups))}."
    return (
        "Machines of the runs (from their records, not today's): "
        + "; ".join(f"{m} ({', '.join(n)})" for m, n in groups.items())
        + "."
    )


def refuse_uncommitted_code(repo: Path = REPOSITORY) -> None:
    """Exit with an error where git sees changes to src/hardcse not yet committed: a run's record names the commit it
    started on (manifest.json's git_commit), and :func:`code_line` compares runs by it. Outside a git checkout
    nothing is checked (the record then names no commit)."""
    status = ["git", "status", "--porcelain", "--", "src/hardcse"]
    done = subprocess.run(status, cwd=repo, capture_output=True, text=True)
    if done.returncode == 0 and done.stdout.strip():
        changed = [line[3:] for line in done.stdout.splitlines()]
        sys.exit(
            f"error: src/hardcse has changes git has not committed ({', '.join(changed[:3])}): a record names the "
            "commit its run started on, so commit them (or git stash them) before an evidence run"
        )


def _refuse_mixed_within_seeds(
    runs: dict[tuple[str, int], Path],
    kinds: Callable[[Path], list[str]],
    listed: Callable[[str, list[str]], str],
    why: str,
) -> None:
    """Exit with an error where the runs of one generation seed ((setting, seed) -> record folder) differ in
    ``kinds(folder)`` (each run's machines, NLI models, ...): ``listed(kind, names)`` words each, ``why`` ends it."""
    by_seed: dict[int, dict[str, list[str]]] = {}
    for (name, seed), folder in runs.items():
        for kind in kinds(folder):
            by_seed.setdefault(seed, {}).setdefault(kind, []).append(name)
    for seed, found in sorted(by_seed.items()):
        if len(found) > 1:
            which = "; ".join(listed(kind, names) for kind, names in found.items())
            sys.exit(f"error: the runs of generation seed {seed} {why.format(which)}")


def refuse_mixed_machines(runs: dict[tuple[str, int], Path]) -> None:
    """Exit with an error where the runs of one generation seed ((setting, seed) -> record folder; a resumed run with
    each of its parts) ran on more than one machine: settings are compared within a seed, and a machine decides more
    than speed (the generator runs in bfloat16 on a CPU with AVX-512-BF16 or AMX, in float32 without)."""
    _refuse_mixed_within_seeds(
        runs,
        lambda folder: _machines(folder / "manifest.json"),
        lambda machine, names: f"{', '.join(names)} on {machine}",
        "ran on different machines ({}): settings are compared within a seed, so run that seed's runs again on one "
        "machine (git rm -r their records)",
    )


def recorded_dates(records: dict[str, Path]) -> str:
    """One sentence dating stored runs (run name -> its record folder): a record's manifest.json's creation date,
    else the date of the git commit that last changed the record (none outside a git checkout)."""
    dates, committed = [], False
    for folder in records.values():
        manifest = folder / "manifest.json"
        if manifest.is_file():
            dates.append(json.loads(manifest.read_text(encoding="utf-8"))["created"][:10])
            continue
        log = ["git", "log", "-1", "--format=%ad", "--date=short", "--", folder.name]
        try:
            day = subprocess.run(log, cwd=folder.parent, capture_output=True, text=True).stdout.strip()
        except OSError:  # no git
            day = ""
        if day:
            dates.append(day)
            committed = True
    if not dates:
        return "The runs' dates are not recorded."
    span = min(dates) if min(dates) == max(dates) else f"{min(dates)} to {max(dates)}"
    source = " (a record without a manifest: the date of the commit that last changed it)" if committed else ""
    return f"Runs recorded {span}{source}."


def recorded_runs(records: dict[str, Path]) -> str:
    """:func:`recorded_dates` and :func:`recorded_machines` of stored runs (run name -> its record folder), one
    line: what a table rebuilt from the records says of when and where its runs ran."""
    return f"{recorded_dates(records)} {recorded_machines(records)}"


NLI_RECORD = "nli_models.json"  # an ART record's NLI models by their weights' digest (art_rounds.write_nli_record)


def _model_identity(model: dict) -> str:
    if model.get("weights_sha256"):
        return f"weights {model['weights_sha256'][:12]}"
    return (model["sha256"] or "-")[:12]


def nli_models_used(records: list[Path]) -> dict[str, str]:
    """Each run's NLI models (its record's NLI_RECORD) as 'discriminator DIGEST / judge DIGEST', or 'not recorded':
    the weights' digest where the record keeps it ('weights DIGEST'), else its model folder's (the records
    made before the weights' digest was kept hold only that one, which holds the training's minutes too: a model
    trained again never matches it, so those records compare only among themselves)."""
    used = {}
    for record in records:
        path = record / NLI_RECORD
        models = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        used[record.name] = (
            "not recorded"
            if models is None
            else " / ".join(f"{role} {_model_identity(model)}" for role, model in models.items())
        )
    return used


def nli_line(records: list[Path]) -> str:
    """Which NLI models the runs used (:func:`nli_models_used`): one pair for all, or each run's."""
    used = nli_models_used(records)
    if len(set(used.values())) == 1:
        return f"NLI models of every run (SHA-256 of their weights): {next(iter(used.values()))}."
    return "NLI models differ between runs: " + "; ".join(f"{n}: {u}" for n, u in used.items()) + "."


# what records compared on one page may differ in: the interval and table code, which the page runs again on the
# records (not evaluation/sts.py: it scored every run and chose its checkpoints), and the shipped configs (a record
# keeps the config it ran)
CODE_THAT_MAY_DIFFER = (
    "src/hardcse/evaluation/compare.py",
    "src/hardcse/evaluation/paired.py",
    "src/hardcse/evaluation/results.py",
    "src/hardcse/shipped/configs/",
)


def started_commits(manifest: dict) -> list[str]:
    """The commits a run ran: the one it was created on and each start's (a resumed run's manifest names one per
    start since they were recorded; before, only the first)."""
    starts = [run["git_commit"] for run in manifest.get("runs") or [] if "git_commit" in run]
    return list(dict.fromkeys([manifest["git_commit"], *starts]))


def _code_conflict(commits: dict[str, list[str]], repo: Path) -> str | None:
    """The error where the commits (commit -> what ran it) differ in src/hardcse outside CODE_THAT_MAY_DIFFER (or
    one is unknown); None where they agree."""
    if None in commits:
        return (
            f"error: {', '.join(commits[None])} name no commit (run outside a git checkout): the page compares only "
            "runs of known code; run them again from a checkout"
        )
    first, *others = commits
    for commit in others:
        diff = ["git", "diff", "--name-only", first, commit, "--", "src/hardcse"]
        done = subprocess.run(diff, cwd=repo, capture_output=True, text=True)
        if done.returncode:
            return f"error: git cannot compare commits {first[:8]} and {commit[:8]}: {done.stderr.strip()}"
        differ = [f for f in done.stdout.split() if not f.startswith(CODE_THAT_MAY_DIFFER)]
        if differ:
            return (
                f"error: {', '.join(commits[commit])} ran commit {commit[:8]}, whose {', '.join(differ[:3])} differ "
                f"from {first[:8]}'s ({', '.join(commits[first])}): run them again on one code"
            )
    return None


def _commits(records: list[Path], assays: dict[str, list[str]] | None) -> tuple[dict[str, list[str]], list[str]]:
    """(commit -> the runs and assays that ran it, the runs' own commits in order)."""
    commits: dict[str, list[str]] = {}
    for record in records:
        for commit in started_commits(json.loads((record / "manifest.json").read_text(encoding="utf-8"))):
            commits.setdefault(commit, []).append(record.name)
    run_commits = list(commits)
    for commit, names in (assays or {}).items():
        commits.setdefault(commit, []).extend(names)
    return commits, run_commits


SAME_CODE = (  # a bound git checked (CODE_THAT_MAY_DIFFER), not a list of what differs
    "src/hardcse differs between them, if at all, only in evaluation/'s interval and table code (compare.py, "
    "paired.py, results.py: the page computes them again) and the shipped configs (each record keeps the config it "
    "ran)."
)


def code_line(records: list[Path], repo: Path = REPOSITORY, assays: dict[str, list[str]] | None = None) -> str:
    """One sentence: the commits the runs' manifests name (and ``assays``': commit -> what ran it), after checking
    that their src/hardcse differs only in CODE_THAT_MAY_DIFFER (``git diff`` in ``repo``); an error naming the files
    and runs otherwise: runs of other code are not compared."""
    commits, run_commits = _commits(records, assays)
    if error := _code_conflict(commits, repo):
        sys.exit(error)
    return _one_code(run_commits, assays)


def _one_code(run_commits: list[str], assays: dict[str, list[str]] | None) -> str:
    named = ", ".join(c[:8] for c in run_commits)
    return (
        f"Code of the runs (their manifests' commits): {named}"
        + (f"; of their assays: {', '.join(c[:8] for c in assays)}" if assays else "")
        + f"; {SAME_CODE}"
    )


def code_line_by_seed(seeds: dict[int, tuple[list[Path], dict[str, list[str]]]], repo: Path = REPOSITORY) -> str:
    """:func:`code_line` of all the runs (generation seed -> its records and their assays' commits) where they ran
    one code; otherwise one code a seed is enough, since the page compares settings within a seed: the line then
    names each seed's commits, and an error names a seed whose runs ran other code."""
    records = [r for folders, _ in seeds.values() for r in folders]
    assays: dict[str, list[str]] = {}
    for _, kept in seeds.values():
        for commit, names in kept.items():
            assays.setdefault(commit, []).extend(names)
    commits, run_commits = _commits(records, assays)
    if _code_conflict(commits, repo) is None:  # one code for all: the line code_line gives, without a second check
        return _one_code(run_commits, assays)
    parts = []
    for seed, (folders, kept) in sorted(seeds.items()):
        commits, run_commits = _commits(folders, kept)
        if error := _code_conflict(commits, repo):
            sys.exit(error.replace("error: ", f"error: generation seed {seed}: ", 1))
        assayed = f" (assays {', '.join(c[:8] for c in kept)})" if kept else ""
        parts.append(f"seed {seed}: {', '.join(c[:8] for c in run_commits)}{assayed}")
    return (
        "Code of the runs by generation seed (settings are compared within a seed; its runs and assays ran one code, "
        f"other seeds other code): {'; '.join(parts)}; within each seed {SAME_CODE}"
    )


def refuse_mixed_nli(runs: dict[tuple[str, int], Path]) -> None:
    """Exit with an error where the runs of one generation seed ((setting, seed) -> record folder) were judged by
    other NLI models (:func:`nli_models_used`): settings are compared within a seed."""
    used = nli_models_used(list(runs.values()))
    _refuse_mixed_within_seeds(
        runs,
        lambda folder: [used[folder.name]],
        lambda model, names: f"{', '.join(names)}: {model}",
        "were judged by other NLI models ({}): settings are compared within a seed, so run them again with the same "
        "models linked (--linked-nli)",
    )
