"""``hardcse cache list|prune``: what the model cache holds, and removing what no job uses (the logic:
hardcse/cache_entries.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from hardcse.cli.common import add_group

CURRENT = {True: "yes", False: "no", None: "unknown"}


def add_parser(sub: argparse._SubParsersAction) -> None:
    commands = add_group(sub, "cache", "list the model cache ($HARDCSE_CACHE, else ~/.cache/hardcse), or prune it")

    p = commands.add_parser(
        "list",
        help="one row per entry: kind, size, whether today's code would use it, last use",
        description="Every entry of the model cache, least recently used first: its kind, size, whether it is "
        "current (today's code, libraries and machine would key it the same), the code that made it, what its key "
        "names, its last use and its path; then the total. An entry made by older hardcse code says unknown.",
    )
    p.add_argument("--json", action="store_true", help="print the entries as JSON instead of a table")
    p.set_defaults(func=run_list)

    p = commands.add_parser(
        "prune",
        help="remove entries not used for a while, or the least recently used above a size",
        description="Remove cache entries that no running job holds (a job's lease or lock keeps its entries), "
        "and the leftovers of killed processes. Give --older-than, --max-size or both.",
    )
    p.add_argument(
        "--older-than", metavar="DAYS", help="remove entries not used for DAYS days (30, 30d) or hours (12h)"
    )
    p.add_argument(
        "--max-size",
        metavar="SIZE",
        help="remove the least recently used entries until the cache holds at most SIZE (5G, 500M; powers of 1000)",
    )
    p.add_argument(
        "--keep-current",
        action="store_true",
        help="never remove an entry today's code, libraries and machine would key the same",
    )
    p.add_argument("--dry-run", action="store_true", help="print what would be removed; remove nothing")
    p.set_defaults(func=run_prune)


def _megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def _where(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def size_line() -> str:
    """The cache's size, in words (``hardcse prepare`` and ``hardcse cache prune`` end with it)."""
    from hardcse.cache_entries import list_entries
    from hardcse.paths import cache_dir

    entries = list_entries()
    return f"the model cache {cache_dir()} holds {_megabytes(sum(e.size for e in entries))} in {len(entries)} entries"


def run_list(args: argparse.Namespace) -> None:
    import datetime
    import json

    from hardcse.cache_entries import leftovers, list_entries, when
    from hardcse.paths import cache_dir

    root = cache_dir()
    entries, left = list_entries(root), leftovers(root)
    if args.json:
        rows = [
            {
                "path": str(e.path),
                "kind": e.kind,
                "bytes": e.size,
                "current": e.current,
                "code": e.code,
                "description": (e.sidecar or {}).get("description"),
                "created": (e.sidecar or {}).get("created"),
                "last_used": datetime.datetime.fromtimestamp(e.last_used, datetime.UTC).isoformat(timespec="seconds"),
            }
            for e in entries
        ]
        total = sum(e.size for e in entries)
        print(
            json.dumps({"cache": str(root), "entries": rows, "total_bytes": total, "leftovers": list(map(str, left))})
        )
        return
    print(f"cache: {root}")
    print("| kind | MB | current | code | description | last used | path |")
    print("|---|---:|---|---|---|---|---|")
    for e in entries:
        described = (e.sidecar or {}).get("description", "unknown")
        cells = [e.kind, f"{e.size / 1e6:.1f}", CURRENT[e.current], e.code or "-", described, when(e.last_used)]
        print("| " + " | ".join([*cells, _where(e.path, root)]) + " |")
    print(f"total: {_megabytes(sum(e.size for e in entries))} in {len(entries)} entries")
    if left:
        print(f"leftovers of killed processes: {len(left)} (any `hardcse cache prune` removes them)")


def run_prune(args: argparse.Namespace) -> None:
    from hardcse.cache_entries import parse_age, parse_size, prune, when
    from hardcse.paths import cache_dir

    older_than = None if args.older_than is None else parse_age(args.older_than)
    max_size = None if args.max_size is None else parse_size(args.max_size)
    root = cache_dir()
    done = prune(older_than, max_size, args.keep_current, args.dry_run, root)
    verb = "would remove" if args.dry_run else "removed"
    for e in done.removed:
        print(f"{verb} {_where(e.path, root)} ({e.kind}, {_megabytes(e.size)}, last used {when(e.last_used)})")
    for e, why in done.in_use:
        print(f"skipped {_where(e.path, root)} ({e.kind}, {_megabytes(e.size)}): {why}")
    for path in done.leftovers:
        print(f"{verb} {_where(path, root)} (left by a killed process)")
    freed = "would free" if args.dry_run else "freed"
    print(f"{freed} {_megabytes(done.freed)}; {size_line()}")
