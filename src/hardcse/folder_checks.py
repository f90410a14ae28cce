"""What a command checks of the paths it is given before it writes or reads a run: ``--out`` (a folder or a file
that can be made), a run folder's kind (the command its manifest names, so ``--resume``, ``art report`` and
``art compare`` refuse another command's folder by name) and its saved config."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from hardcse.data.jsonl import read_json_mapping
from hardcse.errors import HardcseError


def check_output_folder(path: Path) -> None:
    """``--out`` can be a folder: it is one or can be made (no file in the way, a writable parent)."""
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        where = "this is a file" if existing == path else f"{existing} is a file, so no folder can be made in it"
        raise HardcseError(f"--out {path}: {where}; give a folder (new or empty)")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise HardcseError(f"--out {path}: {existing} is not writable; choose another folder")


def check_output_file(path: Path, flag: str = "--out") -> None:
    """``flag`` can name a file to write: no folder in its place, in a folder that is one or can be made."""
    if path.is_dir():
        raise HardcseError(f"{flag} {path}: this is a folder; give the path of a file to write")
    if path.parent != path:
        existing = next(p for p in path.parents if p.exists())
        if not existing.is_dir():
            raise HardcseError(f"{flag} {path}: {existing} is a file, so no folder can be made in it")
        if not os.access(existing, os.W_OK | os.X_OK):
            raise HardcseError(f"{flag} {path}: {existing} is not writable; choose another path")


def saved_config(run_dir: str | Path) -> Path:
    """The frozen config of a run folder (what ``--resume`` without ``--config`` reads)."""
    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        raise HardcseError(f"{run_dir}: not a run folder (no config.yaml); give --config FILE")
    return path


def saved_config_values(run_dir: str | Path) -> dict:
    """The frozen config of a run folder as a mapping (what ``report`` reads), refused by name when it is none."""
    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        raise HardcseError(f"{run_dir}: not a run folder (no config.yaml)")
    try:
        values = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError):
        values = None
    if not isinstance(values, dict) or not values:
        raise HardcseError(f"{path}: empty or not a mapping of keys, so the run's config is lost; run it again")
    return values


# commands that write the same kind of folder (``datacube train`` continues a ``datacube plan`` folder)
SAME_KIND = ({"datacube plan", "datacube train"},)


def written_by(run_dir: str | Path) -> str | None:
    """The command that wrote a run folder, as its manifest says (None: no manifest, or one that predates the
    manifest's ``command``); a damaged manifest is an error naming it."""
    path = Path(run_dir) / "manifest.json"
    return (read_json_mapping(path).get("command") or None) if path.is_file() else None


def check_written_by(run_dir: str | Path, command: str, use: str) -> None:
    """Refuse, by name and before its config is read, a run folder another command wrote; ``use`` says what the
    user can do instead."""
    wrote = written_by(run_dir)
    if wrote is None or wrote == command or any({wrote, command} <= kind for kind in SAME_KIND):
        return
    raise HardcseError(f"{run_dir} is a `hardcse {wrote}` folder, not a `hardcse {command}` one; {use}")


def check_resumable(run_dir: str | Path, command: str) -> None:
    """``command --resume --out run_dir``: the folder is one ``command`` wrote."""
    check_written_by(
        run_dir, command, f"resume it with `hardcse {written_by(run_dir)} --resume`, or give --out another folder"
    )


def round_dirs(run_dir: Path) -> list[Path]:
    """An ART run folder's ``round_0``, ``round_1``, ... in order (those that exist; ``round_1.bak`` is not one)."""
    rounds = (p for p in run_dir.glob("round_*") if p.is_dir() and p.name[6:].isdigit())
    return sorted(rounds, key=lambda p: int(p.name[6:]))


def run_model(run: Path) -> Path:
    """The model a finished run folder stands for: its ``model/``, or an ART run's last round's ``encoder/`` (an ART
    run keeps one a round and no ``model/``) once the run has finished."""
    if (run / "model").is_dir():
        return run / "model"
    if written_by(run) != "art run":
        raise HardcseError(f"{run}: this run folder has no finished model/ yet; finish it with --resume")
    encoders = [d / "encoder" for d in round_dirs(run) if (d / "encoder").is_dir()]
    runs = read_json_mapping(run / "manifest.json").get("runs")
    if not (encoders and isinstance(runs, list) and runs and isinstance(runs[-1], dict) and runs[-1].get("finished")):
        raise HardcseError(f"{run}: this ART run has not finished; finish it with --resume")
    return encoders[-1]
