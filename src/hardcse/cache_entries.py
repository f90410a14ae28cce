"""The model cache's entries, listed and pruned (``hardcse cache list|prune``).

An entry is a folder or a file in one of the places :data:`LAYOUT` names under the cache root. Beside it lie its
sidecar, its leases and its lock (hardcse/cache.py). An entry is current when today's code, libraries and machine
would key it the same: its sidecar's environment equals :func:`hardcse.cache.environment` computed now for the same
device and code scope. An entry without a sidecar (published by older code) is of unknown currency.

A prune takes an entry's lock without waiting: a held lock means a process is building or leasing it, and the entry
is skipped. Holding the lock, it removes the leases of dead processes on this host and skips the entry if a lease
remains (a lease from another host counts as live: its process cannot be checked from here). Then it renames the
entry, its sidecar and its leases into ``<entry>.deleting-<id>`` and removes that folder after letting the lock go,
so no process ever finds a half-deleted entry under the entry's name. A file entry (generations, eval) is read in
one call and so is simply unlinked. Lock files stay: removing one while another process waits on it would let two
processes hold "the" lock at once.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import re
import shutil
import socket
import time
import uuid
from pathlib import Path

from hardcse.cache import LEASES_SUFFIX, SIDECAR_SUFFIX, environment, leases_dir, lock_path, sidecar_path
from hardcse.errors import HardcseError
from hardcse.paths import cache_dir

BENCHMARK_NLI = "nli (benchmarks)"
# where each kind's entries lie under the cache root (the modules named in docs/development.md "Caches" put them
# there); the benchmarks' NLI models have no sidecar and no lease: listed, never pruned
LAYOUT = (
    ("converted-checkpoint", "smollm2-135m-instruct-*"),
    ("openvino", "openvino/*"),
    ("discriminator", "discriminator/*"),
    ("tuned", "tuned/*/steps-*"),
    ("warm_start", "warm_start/*"),
    ("generations", "generations/*.json"),
    ("eval", "eval/*.json"),
    (BENCHMARK_NLI, "nli/*"),
)
LEFTOVER_MARKS = (".partial-", ".deleting-")  # a killed build's folder, a killed prune's
DAY = 86400.0
SIZE_UNITS = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}  # powers of 1000, as sizes are printed (MB)


@dataclasses.dataclass
class Entry:
    path: Path
    kind: str
    size: int  # bytes: the entry's files and its sidecar
    last_used: float  # seconds since the epoch
    sidecar: dict | None  # None: published by older code (or a benchmark's)
    current: bool | None  # None: unknown (no sidecar, or no environment in it)

    @property
    def code(self) -> str | None:
        """The digest of the code that keyed it, 12 characters."""
        found = (self.sidecar or {}).get("environment") or {}
        return found["code"][:12] if "code" in found else None


@dataclasses.dataclass
class Pruned:
    removed: list[Entry]  # removed, or with dry_run what would be
    in_use: list[tuple[Entry, str]]  # skipped: the entry and who holds it
    leftovers: list[Path]  # killed builds' and prunes' folders removed
    freed: int  # bytes


def parse_size(text: str, flag: str = "--max-size") -> int:
    """Bytes from ``5G``, ``500M``, ``1.5GB``, ``123`` (powers of 1000)."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([KMGT]?)B?\s*", text, re.IGNORECASE)
    if found is None:
        raise HardcseError(f"{flag} {text}: not a size; give a number with K, M, G or T (powers of 1000), e.g. 5G")
    return int(float(found.group(1)) * SIZE_UNITS[found.group(2).upper()])


def parse_age(text: str, flag: str = "--older-than") -> float:
    """Seconds from ``30`` or ``30d`` (days) or ``12h`` (hours)."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([dh]?)\s*", text, re.IGNORECASE)
    if found is None:
        raise HardcseError(f"{flag} {text}: not an age; give days (30 or 30d) or hours (12h), 0 or more")
    return float(found.group(1)) * (3600.0 if found.group(2).lower() == "h" else DAY)


def _is_leftover(path: Path) -> bool:
    return any(mark in path.name for mark in LEFTOVER_MARKS)


def is_entry(path: Path) -> bool:
    name = path.name
    beside = name.endswith((".lock", SIDECAR_SUFFIX, LEASES_SUFFIX))
    return not (name.startswith(".") or beside or _is_leftover(path))  # a dot: a file being written atomically


def _size(path: Path) -> int:
    if not path.is_dir():
        return path.lstat().st_size if path.exists() else 0
    return sum(os.lstat(Path(top) / name).st_size for top, _, names in os.walk(path) for name in names)


def _read_sidecar(entry: Path) -> dict | None:
    try:
        found = json.loads(sidecar_path(entry).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _last_used(entry: Path) -> float:
    """A file entry's modification time; a folder entry's latest lease (or, without one, when it was published).
    The lease folder's own time counts: a prune that removes dead leases sets it to the newest of them."""
    paths = [entry, sidecar_path(entry)]
    leases = leases_dir(entry)
    if leases.is_dir():
        paths += [leases, *leases.iterdir()]
    return max(p.stat().st_mtime for p in paths if p.exists())


def _is_current(found: dict | None, today: dict) -> bool | None:
    if not isinstance(found, dict) or "device" not in found or "scope" not in found:
        return None
    import torch

    key = (found["device"], found["scope"])
    if key not in today:  # one environment a device and scope: the code digest reads every source file
        today[key] = environment(torch.device(found["device"]), shared_code=found["scope"] == "shared")
    return today[key] == found


def list_entries(root: Path | None = None) -> list[Entry]:
    """Every entry under ``root`` (default: the cache), least recently used first."""
    root = root or cache_dir()
    today: dict = {}
    found = []
    for kind, pattern in LAYOUT:
        for path in root.glob(pattern):
            if not is_entry(path):
                continue
            sidecar = _read_sidecar(path)
            named = (sidecar or {}).get("kind", kind)
            current = _is_current((sidecar or {}).get("environment"), today)
            try:
                size, used = _size(path) + _size(sidecar_path(path)), _last_used(path)
            except FileNotFoundError:  # pruned by another process while this one looked
                continue
            found.append(Entry(path, named, size, used, sidecar, current))
    return sorted(found, key=lambda e: (e.last_used, str(e.path)))


def leftovers(root: Path | None = None) -> list[Path]:
    """Folders of killed builds (``*.partial-*``) and of killed prunes (``*.deleting-*``) under ``root``."""
    root = root or cache_dir()
    return sorted({p for _, pattern in LAYOUT for p in root.glob(pattern) if _is_leftover(p)})


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _live_leases(entry: Path, dry_run: bool) -> list[str]:
    """The leases on ``entry`` of processes that may still run; those of dead processes on this host are removed
    (not with ``dry_run``). A reused pid reads as live: the safe side."""
    folder = leases_dir(entry)
    if not folder.is_dir():
        return []
    host, live, dead = socket.gethostname(), [], []
    newest = max([folder.stat().st_mtime, *(p.stat().st_mtime for p in folder.iterdir())])
    for lease in folder.iterdir():
        owner, _, pid = lease.name.rpartition("-")
        (dead if owner == host and pid.isdigit() and not _alive(int(pid)) else live).append(lease)
    if dead and not dry_run:
        for lease in dead:
            lease.unlink(missing_ok=True)
        os.utime(folder, (newest, newest))  # the entry's last use stays what the removed leases said
    return sorted(lease.name for lease in live)


def _try_lock(entry: Path):  # noqa: ANN202  (a FileLock held, or None when another process holds it)
    from filelock import FileLock, Timeout

    lock = FileLock(str(lock_path(entry)), timeout=0)  # 0: one try, never wait
    try:
        lock.acquire()
    except Timeout:
        return None
    return lock


def _remove(entry: Entry, dry_run: bool) -> str | None:
    """Remove ``entry`` (with ``dry_run``: only check that it could be); None, or why it stays."""
    if entry.kind == BENCHMARK_NLI:
        return "a benchmark's NLI model (benchmarks/art_rounds.py takes no lease): remove it by hand"
    if not entry.path.is_dir():  # a file entry: read in one call, so unlinking cannot tear a reader's
        if not dry_run:
            entry.path.unlink(missing_ok=True)
            sidecar_path(entry.path).unlink(missing_ok=True)
        return None
    lock = _try_lock(entry.path)
    if lock is None:
        return "a process holds its lock (building or leasing it)"
    try:
        if not entry.path.exists():  # another prune removed it while this one waited
            return "removed by another prune meanwhile"
        holders = _live_leases(entry.path, dry_run)
        if holders:
            return f"leased by {', '.join(holders)}"
        if dry_run:
            return None
        doomed = entry.path.with_name(f"{entry.path.name}.deleting-{uuid.uuid4().hex[:12]}")
        doomed.mkdir()
        entry.path.rename(doomed / entry.path.name)  # first: from here on the entry is absent, whole
        for beside in (sidecar_path(entry.path), leases_dir(entry.path)):
            if beside.exists():
                beside.rename(doomed / beside.name)
    finally:
        lock.release()
    shutil.rmtree(doomed, ignore_errors=True)
    return None


def _clear_leftover(path: Path, dry_run: bool) -> bool:
    """Remove a killed process's leftover if no process holds its entry's lock (a build in progress does)."""
    owner = re.split("|".join(map(re.escape, LEFTOVER_MARKS)), path.name)[0]
    lock = _try_lock(path.with_name(owner))
    if lock is None:
        return False
    try:
        if not dry_run and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        elif not dry_run:
            path.unlink(missing_ok=True)
    finally:
        lock.release()
    return True


def prune(
    older_than: float | None = None,
    max_size: int | None = None,
    keep_current: bool = False,
    dry_run: bool = False,
    root: Path | None = None,
    now: float | None = None,
) -> Pruned:
    """Remove the entries not used for ``older_than`` seconds, and the least recently used ones until the cache
    holds at most ``max_size`` bytes; with ``keep_current`` never one today's code would key the same. Every prune
    first removes the leftovers of killed processes. ``dry_run``: remove nothing, say what would go."""
    if older_than is None and max_size is None:
        raise HardcseError(
            "say what to prune: give --older-than DAYS or --max-size SIZE (--older-than 0 --keep-current removes "
            "every entry today's code would not use)"
        )
    now = time.time() if now is None else now
    result = Pruned([], [], [], 0)
    for path in leftovers(root):
        size = _size(path)
        if _clear_leftover(path, dry_run):
            result.leftovers.append(path)
            result.freed += size
    entries = list_entries(root)
    total = sum(e.size for e in entries)
    for entry in entries:  # least recently used first
        old = older_than is not None and now - entry.last_used >= older_than
        over = max_size is not None and total > max_size
        if not (old or over) or (keep_current and entry.current):
            continue
        why = _remove(entry, dry_run)
        if why is not None:
            result.in_use.append((entry, why))
            continue
        result.removed.append(entry)
        result.freed += entry.size
        total -= entry.size
    return result


def when(seconds: float) -> str:
    """A time as the listing prints it (local time, to the minute)."""
    return datetime.datetime.fromtimestamp(seconds).strftime("%Y-%m-%d %H:%M")
