"""Typed configurations: dataclasses loaded from YAML, overridden by ``key=value``, checked on construction.

The classes live beside the code they configure (``hardcse.training.TrainingSettings``,
``hardcse.art.config``, ``hardcse.datacube.config``, ...); this module only loads, checks and saves them.
A class checks its own values in ``__post_init__`` with the helpers below, so a mistake is reported before any
work, naming the key and the allowed values. A class lists keys that were renamed in ``RENAMED`` (old -> new):
an old key in a file gets an error that names the new one. Keys that moved into a block of their class are listed in
``MOVED`` (old -> ``block.key``): each source (a file, a base file, an override, a saved mapping) is read with its
old keys in their block before the sources are merged, so the later source wins as for any key, with one warning
per source that names it and the new places.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import types
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from hardcse.atomic import write_text_atomic
from hardcse.errors import HardcseError
from hardcse.paths import shipped_config_names, shipped_configs_dir

T = TypeVar("T")
log = logging.getLogger(__name__)


class ConfigValueError(HardcseError):
    """A value out of range or not among the choices; ``key`` is the field (the loader adds the file and the path
    of parent keys in front of it)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.detail = message


class ConfigKeyError(HardcseError):
    """A mistake at ``key`` (a dotted path from the config's top, "" for the top itself); :func:`load_config` says
    where the key came from: the file, or the ``key=value`` override that set it."""

    def __init__(self, key: str, detail: str) -> None:
        super().__init__(f"{key}: {detail}" if key else detail)
        self.key, self.detail = key, detail


def _path(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def check_choice(key: str, value: object, allowed: Iterable[object]) -> None:
    allowed = tuple(allowed)
    if value not in allowed:
        raise ConfigValueError(key, f"{value!r} is not one of {', '.join(map(str, allowed))}")


def check_positive(key: str, value: float | None, allow_none: bool = False) -> None:
    """Finite and > 0 (a learning rate, a temperature, a batch size, a number of steps)."""
    if value is None and allow_none:
        return
    if value is None or not math.isfinite(value) or value <= 0:
        raise ConfigValueError(key, f"{value!r} must be a finite number greater than 0")


def check_range(key: str, value: float | None, low: float, high: float, allow_none: bool = False) -> None:
    """Finite and in [low, high] (a probability, a ratio, a weight)."""
    if value is None and allow_none:
        return
    if value is None or not math.isfinite(value) or not low <= value <= high:
        raise ConfigValueError(key, f"{value!r} must be between {low} and {high}")


def check_nonnegative(key: str, value: float | None, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if value is None or not math.isfinite(value) or value < 0:
        raise ConfigValueError(key, f"{value!r} must be a finite number >= 0")


@functools.cache
def _literal_fields(cls: type) -> dict[str, tuple]:
    hints = typing.get_type_hints(cls)
    return {f.name: typing.get_args(hints[f.name]) for f in dataclasses.fields(cls) if _is_literal(hints[f.name])}


def _is_literal(tp: Any) -> bool:
    return typing.get_origin(tp) is typing.Literal


SEED_LIMIT = 2**32  # numpy, torch and the Trainer's set_seed take seeds in [0, 2**32)


def check_seed(key: str, value: object) -> None:
    """A random seed every library here takes: an integer, 0 <= seed < 2**32."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < SEED_LIMIT:
        raise ConfigValueError(key, f"{value!r}: a seed is an integer from 0 to {SEED_LIMIT - 1}")


class Checked:
    """Base of every config dataclass: ``Literal`` fields are checked against their choices, every seed (a field
    named ``seed`` or ``*_seed``, or a list named ``seeds``) against the range every library takes, then ``check()``
    (the class's own range checks) runs, on every construction (from YAML or in code)."""

    def __post_init__(self) -> None:
        for name, allowed in _literal_fields(type(self)).items():
            check_choice(name, getattr(self, name), allowed)
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.name == "seed" or f.name.endswith("_seed"):
                check_seed(f.name, value)
            elif f.name == "seeds" or f.name.endswith("_seeds"):
                for seed in value or []:
                    check_seed(f.name, seed)
        self.check()

    def check(self) -> None:
        """Range checks of this class's values; raise :class:`ConfigValueError` naming the key."""


def _coerce(value: Any, tp: Any, where: str) -> Any:
    """Check and convert a YAML value to a dataclass field type (int->float and str paths allowed)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, where)
            except HardcseError as e:
                errors.append(e)
        raise errors[0]
    if origin is list:
        if not isinstance(value, list):
            raise ConfigKeyError(where, f"expected a list, got {value!r}")
        (item,) = typing.get_args(tp)
        return [_coerce(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    if (tp is dict or origin is dict) and not isinstance(value, dict):
        raise ConfigKeyError(where, f"expected a mapping, got {value!r}")
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ConfigKeyError(where, f"expected a mapping, got {value!r}")
        return _from_dict(tp, value, where)
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp is float and isinstance(value, str):  # YAML 1.1 reads 1e-3 (no dot) as a string
        try:
            return float(value)
        except ValueError:
            raise ConfigKeyError(where, f"expected a number, got {value!r}") from None
    if tp is bool and not isinstance(value, bool):
        raise ConfigKeyError(where, f"expected true/false, got {value!r}")
    if tp in (int, float, str) and (not isinstance(value, tp) or isinstance(value, bool) and tp is not bool):
        raise ConfigKeyError(where, f"expected {tp.__name__}, got {value!r}")
    return value


def _dataclass_field(cls: type, name: str) -> type | None:
    """The dataclass type of ``cls``'s field ``name`` (a block of keys), or None."""
    if not dataclasses.is_dataclass(cls) or name not in {f.name for f in dataclasses.fields(cls)}:
        return None
    tp = typing.get_type_hints(cls)[name]
    return tp if dataclasses.is_dataclass(tp) else None


def _moved_keys(cls: type | None, data: Any, where: str, moves: list[tuple[str, str]]) -> Any:
    """One source's ``data`` for ``cls`` (a file, an override's value, a saved mapping) with each key that a class of
    its tree lists in ``MOVED`` (old -> ``block.key``) put in its block, and (old, new) dotted keys appended to
    ``moves``. A key given at both places in one source is an error; across sources the later one wins, as for any
    key, since each source is moved before they are merged."""
    if cls is None or not isinstance(data, dict):
        return data
    data = dict(data)
    for key in [k for k in data if k in getattr(cls, "MOVED", {})]:
        block, leaf = cls.MOVED[key].split(".")
        if not isinstance(data.get(block) or {}, dict):
            continue  # not a block of keys: _from_dict names it
        inner = data[block] = dict(data.get(block) or {})
        new = _path(where, cls.MOVED[key])
        if leaf in inner:
            raise ConfigKeyError(_path(where, key), f"given here and as {new}; keep {new} only")
        inner[leaf] = data.pop(key)
        moves.append((_path(where, key), new))
    for name, value in data.items():
        data[name] = _moved_keys(_dataclass_field(cls, name), value, _path(where, name), moves)
    return data


def _moved_key(cls: type, key: str, moves: list[tuple[str, str]]) -> tuple[str, type | None]:
    """An override's dotted ``key`` with each part a class lists in ``MOVED`` put in its block, and the class of
    the block it names (None where it names a value)."""
    parts: list[str] = []
    for part in key.split("."):
        if part in getattr(cls, "MOVED", {}):
            old = ".".join([*parts, part])
            parts += cls.MOVED[part].split(".")
            moves.append((old, ".".join(parts)))
            cls = _dataclass_field(_dataclass_field(cls, parts[-2]), parts[-1])
        else:
            parts.append(part)
            cls = _dataclass_field(cls, part)
    return ".".join(parts), cls


def _warn_moved(source: str, moves: list[tuple[str, str]]) -> None:
    if moves:
        log.warning(
            "%s: %s moved into a block; read as %s. The old keys still load; new configs write the new ones.",
            source,
            ", ".join(old for old, _ in moves),
            ", ".join(new for _, new in moves),
        )


def _from_dict(cls: type[T], data: dict, where: str) -> T:
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    renamed = getattr(cls, "RENAMED", {})
    for key in data:
        if key in renamed:
            raise ConfigKeyError(_path(where, key), f"this key is now {renamed[key]}; rename it in the config")
    unknown = sorted(set(data) - names)
    if unknown:  # named at the first unknown key itself, so an override that wrote it is the one blamed
        more = f" (and {unknown[1:]})" if len(unknown) > 1 else ""
        raise ConfigKeyError(_path(where, unknown[0]), f"unknown key(s) {unknown[:1]}{more}; known: {sorted(names)}")
    data = dict(data)
    for f in dataclasses.fields(cls):
        # A partial block updates the field's own default (a method's training defaults), not the class defaults.
        if f.name in data and isinstance(data[f.name], dict) and f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
            if dataclasses.is_dataclass(default):
                data[f.name] = _merge(dataclasses.asdict(default), data[f.name])
    values = {k: _coerce(v, hints[k], _path(where, k)) for k, v in data.items()}
    try:
        return cls(**values)
    except ConfigValueError as e:
        raise ConfigKeyError(_path(where, e.key), e.detail) from None


def config_path(name: str | Path) -> Path:
    """A config file: an existing path, else a shipped config named without folder or suffix (``smoke``), so
    ``--config smoke`` works from any folder."""
    path = Path(name)
    if path.is_file():
        return path
    if path.exists():
        raise HardcseError(f"{path}: a config must be a YAML file, not a folder")
    shipped = shipped_configs_dir() / f"{path.stem}.yaml"
    if len(path.parts) == 1 and path.suffix in ("", ".yaml") and shipped.is_file():
        return shipped
    raise HardcseError(f"{path}: no such config file; the shipped configs are {', '.join(shipped_config_names())}")


def _yaml_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        raise HardcseError(f"{path}: not UTF-8 text (byte {e.object[e.start]:#04x}); re-save it as UTF-8") from None
    except OSError as e:
        raise HardcseError(f"{path}: cannot be read ({e.strerror})") from None


def _read_yaml(path: Path, cls: type | None = None, seen: tuple[Path, ...] = ()) -> dict:
    """A config file's mapping; ``base: other.yaml`` (relative to the file) is read first and updated by the
    file's own keys, nested mappings key by key. With ``cls``, each file's keys that moved into a block are read
    there (:func:`_moved_keys`), with a warning that names the file."""
    if path.resolve() in seen:
        raise HardcseError(f"{path}: `base` files form a cycle")
    try:
        data = yaml.safe_load(_yaml_text(path))
    except yaml.YAMLError as e:
        raise HardcseError(f"{path}: not valid YAML ({_one_line(e)})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise HardcseError(f"{path}: the top level must be a mapping of keys to values")
    base = data.pop("base", None)
    moves: list[tuple[str, str]] = []
    try:
        data = _moved_keys(cls, data, "", moves)
    except ConfigKeyError as e:
        raise HardcseError(f"{path}: {e}") from None
    _warn_moved(str(path), moves)
    if base is None:
        return data
    if not isinstance(base, str) or not base.strip():
        raise HardcseError(f"{path}: base: {base!r} must be the path of another config file (relative to this one)")
    base_path = path.parent / base
    if not base_path.is_file():
        raise HardcseError(f"{path}: base: {base}: no such config file ({base_path})")
    return _merge(_read_yaml(base_path, cls, (*seen, path.resolve())), data)


def _one_line(error: yaml.YAMLError) -> str:
    """A YAML error's problem and position on one line."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark else problem


def _merge(base: dict, update: dict) -> dict:
    out = dict(base)
    for key, value in update.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def load_config(cls: type[T], path: str | Path | None = None, overrides: list[str] | tuple[str, ...] = ()) -> T:
    """A ``cls`` from a YAML file (optional; ``base: FILE`` inherits another) with ``key=value`` overrides
    (``a.b=3``; values parsed as YAML). A mistake names its source: ``FILE: key: ...`` for a key from the file,
    ``override key=value: ...`` for one from the command line."""
    data: dict = {}
    if path is not None:
        path = config_path(path)
        data = _read_yaml(path, cls)
    written: dict[str, str] = {}  # dotted key -> the override that set it (the last one wins, as in the data)
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise HardcseError(f"override {item!r}: write key=value")
        moves: list[tuple[str, str]] = []
        key, block = _moved_key(cls, key, moves)  # an old key is written where it moved to
        target = data
        *parents, leaf = key.split(".")
        for part in parents:
            target = target.setdefault(part, {})
            if not isinstance(target, dict):
                raise HardcseError(f"override {item!r}: {part} is not a block of keys")
        try:
            value = yaml.safe_load(raw) if raw else ""
        except yaml.YAMLError as e:
            raise HardcseError(
                f"override {item!r}: the value is not valid YAML ({_one_line(e)}); put text with special characters "
                "in YAML quotes: key='\"text\"'"
            ) from None
        try:
            target[leaf] = _moved_keys(block, value, key, moves)
        except ConfigKeyError as e:
            raise HardcseError(f"override {item}: {e}") from None
        _warn_moved(f"override {item}", moves)
        written[key] = item
    try:
        return _from_dict(cls, data, "")
    except ConfigKeyError as e:
        key, item = next(((k, v) for k, v in reversed(written.items()) if _within(e.key, k)), (None, None))
        if item is not None:  # a key inside the override's value is named too: reward.terms=[...]: ...terms[0].fn
            inner = f"{e.key}: " if e.key != key and e.key.startswith((f"{key}.", f"{key}[")) else ""
            raise HardcseError(f"override {item}: {inner}{e.detail}") from None
        source = str(path) if path is not None else f"{cls.__name__} (defaults)"
        raise HardcseError(f"{source}: {e}") from None


def _within(key: str, override: str) -> bool:
    """Whether the mistake at ``key`` is the override's: the same key, a key inside the override's value (``a.b``
    holds ``a.b.c`` and ``a.b[0]``), or the block the override wrote into (``ppo.steps=3`` made ``ppo``)."""

    def inside(inner: str, outer: str) -> bool:
        return inner == outer or inner.startswith((f"{outer}.", f"{outer}["))

    return inside(key, override) or (bool(key) and inside(override, key))


def config_from_dict(cls: type[T], data: dict, where: str) -> T:
    """A ``cls`` from a mapping (a saved config), checked as a file would be; errors and warnings name ``where``."""
    moves: list[tuple[str, str]] = []
    try:
        data = _moved_keys(cls, data, "", moves)
        _warn_moved(where, moves)
        return _from_dict(cls, data, "")
    except ConfigKeyError as e:
        raise HardcseError(f"{where}: {e}") from None


def config_to_dict(config: Any) -> dict:
    return dataclasses.asdict(config)


def save_config(config: Any, path: str | Path) -> None:
    """Write the resolved config (every default spelled out) as YAML."""
    write_text_atomic(path, yaml.safe_dump(config_to_dict(config), sort_keys=False))
