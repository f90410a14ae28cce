"""Run folders: what every long command writes, and how it survives a kill.

    OUT/config.yaml     the resolved configuration (every default written out), frozen at the start
    OUT/manifest.json   versions, seeds, git commit, world size; per stage: start, end, seconds, attempts
    OUT/run.log         hardcse's log of every attempt
    OUT/<stage output>  each stage's file or folder, written under ``NAME.partial`` and renamed when complete

``resume`` skips stages whose output exists and refuses a changed configuration, naming the keys that differ;
a lock file keeps a second process out; a finished folder is never overwritten unless ``overwrite`` is given,
which empties it first (no stale file of the old run stays behind).

Under several processes (``accelerate launch``, ``torchrun``) every rank opens the folder and walks the same
stages; rank 0 alone takes the lock and writes config, manifest, log and each stage's output. A stage runs on rank
0 while the others wait, unless it is ``all_ranks`` (training, sharded synthesis, RL), where every rank builds and
rank 0 writes.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from hardcse.atomic import write_json_atomic
from hardcse.config import config_to_dict, load_config, save_config
from hardcse.data.jsonl import read_json_mapping
from hardcse.devices import check_config_devices
from hardcse.distributed import barrier, is_main, launched_world_size, run_on_main
from hardcse.engines import Engine
from hardcse.errors import HardcseError
from hardcse.folder_checks import check_output_folder, check_resumable
from hardcse.logs import log_to_file
from hardcse.machine import library_versions, machine_record
from hardcse.progress import shown
from hardcse.tracking.run import Tracking

log = logging.getLogger(__name__)
PACKAGES = ("hardcse", "torch", "transformers", "sentence-transformers", "peft", "datasets", "accelerate")
MARKERS = ("config.yaml", "manifest.json")  # a folder holding one of these is a hardcse output
WATCHING = ("report_to",)  # config keys of how a run is watched, not what it computes: a resume may change them
PARTIAL = ".partial"
# the command line of the current ``hardcse`` invocation (set by the CLI), recorded in each run of the manifest
INVOCATION: list[str] | None = None


class RunFolder:
    """The output folder of one long command. Use as a context manager (it takes the lock and logs to run.log),
    then run each stage through :meth:`stage`. ``engine``: the command's inference engine, recorded with the
    machine (None: a command that runs no inference)."""

    def __init__(
        self,
        path: str | Path,
        config: Any,
        *,
        resume: bool = False,
        overwrite: bool = False,
        command: str = "",
        engine: Engine | None = None,
    ) -> None:
        self.dir = Path(path)
        self.config = config
        self.engine = engine
        self.resume = resume
        self.overwrite = overwrite
        self.command = command
        self._stack = ExitStack()
        self.manifest: dict = {}
        self.tracking = Tracking()  # the run's trackers once open (rank 0, with report_to); none: reports nowhere

    # -- opening -----------------------------------------------------------------------------------------------
    def check(self) -> None:
        """Every reason to refuse the folder, before anything is written."""
        if self.resume and self.overwrite:
            raise HardcseError("--resume and --overwrite contradict each other: choose one")
        check_output_folder(self.dir)
        if dataclasses.is_dataclass(self.config):
            check_config_devices(self.config)
        saved = self.dir / "config.yaml"
        if self.resume:
            if not saved.is_file():
                raise HardcseError(f"{self.dir} has no config.yaml: nothing to resume; drop --resume to start it")
            if self.command:
                check_resumable(self.dir, self.command)
            if dataclasses.is_dataclass(self.config):  # keys added since the run began count at their defaults
                before = json.loads(json.dumps(config_to_dict(load_config(type(self.config), saved))))
            else:
                before = yaml.safe_load(saved.read_text(encoding="utf-8"))
            now = json.loads(json.dumps(config_to_dict(self.config)))
            changed = [key for key in differences(before, now) if key not in WATCHING]
            if changed:
                raise HardcseError(
                    f"the configuration differs from {saved} in {', '.join(changed)}; a resumed run keeps its "
                    "configuration (start a new folder to change it)"
                )
            return
        if self.dir.is_dir() and any(self.dir.iterdir()):
            if not self.overwrite:
                raise HardcseError(
                    f"{self.dir} exists and is not empty; pass --resume to continue it, --overwrite to start it "
                    "again, or choose another folder"
                )
            if not any((self.dir / m).exists() for m in MARKERS):
                raise HardcseError(
                    f"{self.dir} is not a hardcse output (no config.yaml or manifest.json); --overwrite only "
                    "replaces hardcse outputs: choose an empty or new folder"
                )

    def __enter__(self) -> RunFolder:
        self.check()
        barrier()  # every rank has checked the folder before rank 0 writes into it
        run_on_main(self._open)
        if not is_main():
            self.manifest = read_json_mapping(self.dir / "manifest.json")
        return self

    def _open(self) -> None:
        # a user error before any stage finishes removes what this command made (nothing half-made stays behind)
        self._existed = self.dir.exists()
        self._made_here = not self.resume and (self.overwrite or not self._existed or not any(self.dir.iterdir()))
        self.dir.mkdir(parents=True, exist_ok=True)
        self._stack.enter_context(exclusive(self.dir / "run.lock"))
        if self.overwrite:
            for child in self.dir.iterdir():
                if child.name != "run.lock":
                    remove(child)
        if not self.resume:
            save_config(self.config, self.dir / "config.yaml")
        self._stack.enter_context(log_to_file(self.dir / "run.log"))
        self._open_manifest()
        report_to = getattr(self.config, "report_to", [])
        if report_to:  # the trackers (hardcse/tracking/run.py): rank 0 alone reports
            from hardcse.tracking.run import tracking

            self.tracking = self._stack.enter_context(tracking(self.dir, report_to, config_to_dict(self.config)))

    def __exit__(self, exc_type: type | None, *exc: object) -> None:
        self._stack.__exit__(exc_type, *exc)  # the trackers see the error: their runs end failed, with no plots
        self.tracking = Tracking()  # closed: nothing reports to them after the run
        if not is_main():
            return
        finished = any("end" in stage for stage in self.manifest.get("stages", {}).values())
        if exc_type is not None and issubclass(exc_type, HardcseError) and self._made_here and not finished:
            for child in self.dir.iterdir() if self._existed else []:
                remove(child)
            if not self._existed:
                shutil.rmtree(self.dir, ignore_errors=True)

    def _open_manifest(self) -> None:
        path = self.dir / "manifest.json"
        if path.is_file():
            self.manifest = read_json_mapping(path)
            self.manifest.setdefault("command", self.command)  # a folder from before the manifest named it
        else:
            self.manifest = {
                "command": self.command,
                "created": now(),
                "versions": versions(),
                "git_commit": git_commit(),
                "seeds": seeds(self.config),
                "stages": {},
            }
        # each start names its own commit: a run resumed after a commit ran two codes, and its record says so
        run = {"started": now(), "git_commit": git_commit(), "machine": this_machine(self.engine)}
        run["world_size"] = launched_world_size()
        self.manifest.setdefault("runs", []).append(run | ({"argv": INVOCATION} if INVOCATION else {}))
        self._save_manifest()

    def _save_manifest(self) -> None:
        if is_main():
            write_json_atomic(self.dir / "manifest.json", self.manifest)

    # -- stages ------------------------------------------------------------------------------------------------
    def stage(
        self,
        name: str,
        output: str | Path,
        build: Callable[[Path], object],
        *,
        keep_partial: bool = False,
        in_place: bool = False,
        all_ranks: bool = False,
    ) -> Path:
        """Make ``output`` (a file or folder, relative to the run folder) unless it exists: ``build(partial)``
        writes it under ``NAME.partial``, which is then renamed. ``keep_partial``: a killed attempt's partial
        output is handed to the next attempt (training resumes from its checkpoints); otherwise it is removed.
        ``in_place``: ``build(output)`` writes several files beside ``output`` and ``output`` itself last, atomically
        (it marks the stage done). ``all_ranks``: under several processes every rank calls ``build`` (which writes
        on rank 0 only); otherwise rank 0 builds while the others wait. Returns the output's path."""
        final = self.dir / output
        if final.exists():
            self._close_interrupted_entry(name, final)
            log.info("stage %s: done, skipped", name)
            return final
        partial = final if in_place else final.with_name(final.name + PARTIAL)
        if partial.exists() and not keep_partial and not in_place and is_main():
            remove(partial)
        log.info("stage %s: start", name)
        if is_main() and shown():  # progress on stdout, as the CLI shows it; a caller may turn it off
            print(f"== {name}", flush=True)
        stages = self.manifest["stages"]
        attempts = stages.get(name, {}).get("attempts", 0) + 1  # counts attempts that were killed
        entry = stages[name] = {"start": now(), "attempts": attempts}
        self._save_manifest()
        start = time.perf_counter()
        final.parent.mkdir(parents=True, exist_ok=True)
        barrier()  # rank 0 has removed a stale partial output

        def build_on_this_rank() -> None:  # build's value stays here (it need not pickle)
            build(partial)

        if all_ranks:
            build_on_this_rank()
        else:
            run_on_main(build_on_this_rank)

        def complete() -> None:
            if not partial.exists():
                raise HardcseError(f"stage {name} finished without its output; this is a bug")
            if not in_place:
                os.replace(partial, final)

        run_on_main(complete)
        entry |= {"end": now(), "seconds": round(time.perf_counter() - start, 1)}
        self._save_manifest()
        if is_main():
            report_stage(name, final, self.tracking)
        return final

    def _close_interrupted_entry(self, name: str, final: Path) -> None:
        """A run killed between a stage's rename and its manifest write left a whole output whose entry has no end:
        the end is the output's modification time (so the stage's time still counts in the report)."""
        entry = self.manifest["stages"].get(name)
        if entry is None or "end" in entry:
            return
        end = datetime.fromtimestamp(final.stat().st_mtime, UTC)
        seconds = max(0.0, (end - datetime.fromisoformat(entry["start"])).total_seconds())
        entry |= {"end": end.isoformat(timespec="seconds"), "seconds": round(seconds, 1), "end_from": "output mtime"}
        self._save_manifest()

    def record(self, key: str, value: object) -> None:
        """Add ``key`` to the manifest (for facts of the run that are no stage's output)."""
        self.manifest[key] = value
        self._save_manifest()

    def finish(self) -> None:
        self.manifest["runs"][-1]["finished"] = now()
        self._save_manifest()


def report_stage(name: str, output: Path, tracking: Tracking) -> None:
    """A finished stage's numbers to the trackers, if the run reports to any: a JSON output's (a folder output's
    ``eval.json``) numbers under the stage's name; a round's stage (``round_R.NAME``) under ``rounds/NAME`` at step
    R, so rounds make a curve."""
    if output.is_dir():  # a folder stage (an assay's seed, a trained model): its eval.json, if it has one
        output = output / "eval.json"
    if not tracking or output.suffix != ".json" or not output.is_file():
        return
    values = json.loads(output.read_text(encoding="utf-8"))
    if not isinstance(values, dict):
        return
    head, _, rest = name.partition(".")
    if head.startswith("round_") and head[6:].isdigit() and rest:
        tracking.metrics(values, int(head[6:]), prefix=f"rounds/{rest}")
    else:
        tracking.metrics(values, 0, prefix=name)


@contextmanager
def exclusive(lock_path: Path) -> Iterator[None]:
    """One process per run folder: a second one would delete the first one's partial outputs."""
    with lock_path.open("w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise HardcseError(f"another process is running {lock_path.parent}; wait for it or stop it") from None
        yield


def remove(path: Path) -> None:
    """Delete a file, a link or a folder tree."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def differences(a: object, b: object, prefix: str = "") -> list[str]:
    """The dotted keys whose values differ between two nested mappings."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            out += differences(a.get(key), b.get(key), f"{prefix}{key}.")
        return out
    return [] if a == b else [prefix.rstrip(".")]


def seeds(config: Any) -> dict[str, int]:
    """Every ``seed`` in the config, by its dotted key."""
    found: dict[str, int] = {}

    def walk(data: object, prefix: str) -> None:
        if isinstance(data, dict):
            for key, value in data.items():
                if key == "seed" and isinstance(value, int):
                    found[prefix.rstrip(".") or "seed"] = value
                else:
                    walk(value, f"{prefix}{key}.")

    walk(config_to_dict(config), "")
    return found


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def versions() -> dict[str, str | None]:
    return library_versions(PACKAGES)


def this_machine(engine: Engine | None = None) -> dict:
    """The machine a run (or a resumed part of it) ran on, with the inference engine ``engine`` resolves to there."""
    from hardcse.devices import resolve_device

    return machine_record(engine.on(resolve_device("auto", "device")) if engine is not None else None)


def git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent, timeout=5
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (out.stdout.strip() or None) if out.returncode == 0 else None
