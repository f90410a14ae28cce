"""Loading the Python function a reward term names in a config (``package.module:function`` or
``path/to/file.py:function``), and digesting the code it runs. The configs check a term's function here when they
load (hardcse/art/reward/config.py); the reward calls it (hardcse/art/reward/terms.py).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hardcse.errors import HardcseError

# (anchors, answers, kind, context: a hardcse.art.reward.terms.TermContext) -> one float per row
TermFn = Callable[[list[str], list[str | None], str, Any], Sequence[float]]
TERM_PARAMETERS = "(anchors, answers, kind, context)"
NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def load_term_function(spec: str) -> TermFn:
    """The function ``spec`` names (``package.module:function`` or ``path/to/file.py:function``, a path relative to
    the working folder at this call), checked to take a term's four arguments; :class:`HardcseError` saying what is
    wrong otherwise (the caller adds the key). A file is loaded once per resolved path and content (an edited file
    is loaded again); a module that changed on disk since this process imported it is reloaded."""
    where, sep, attribute = spec.rpartition(":")
    if not sep or not where or not attribute:
        raise HardcseError(f"{spec!r} is not package.module:function or path/to/file.py:function")
    if where.endswith(".py"):
        module = _load_file(Path(where))
    elif "/" in where or Path(where).exists():
        kind = "a folder" if Path(where).is_dir() else "not a .py file"
        raise HardcseError(f"{where}: {kind}; give path/to/file.py:function or package.module:function")
    else:
        module = _import(where)
    fn = getattr(module, attribute, None)
    if fn is None or not callable(fn):
        raise HardcseError(f"{where} has no function {attribute!r}")
    try:
        inspect.signature(fn).bind([], [], "positive", None)
    except TypeError:
        raise HardcseError(f"{spec} takes {inspect.signature(fn)}; a term takes {TERM_PARAMETERS}") from None
    except ValueError:  # no signature to read (a builtin): called and checked at the first batch
        pass
    return fn


_FILE_MODULES: dict[tuple[str, str], object] = {}  # (resolved path, sha256 of its bytes) -> the loaded module
_MODULE_DIGESTS: dict[str, str] = {}  # module name -> sha256 of its file when this process (re)loaded it


def _file_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _import(module_name: str) -> object:
    try:
        module = importlib.import_module(module_name)
        file = getattr(module, "__file__", None)
        if file and Path(file).is_file():
            digest = _file_sha256(file)
            if _MODULE_DIGESTS.setdefault(module_name, digest) != digest:  # edited since it was imported
                module = importlib.reload(module)
                _MODULE_DIGESTS[module_name] = digest
        return module
    except Exception as e:  # noqa: BLE001 - the user's module: any failure is reported in one line
        raise HardcseError(f"cannot import {module_name} ({one_line(e)})") from None


def _load_file(path: Path) -> object:
    if not path.is_file():
        raise HardcseError(f"{path}: {'a folder, not a file' if path.is_dir() else 'no such file'}")
    resolved = path.resolve()
    key = (str(resolved), _file_sha256(resolved))
    if key in _FILE_MODULES:
        return _FILE_MODULES[key]
    # a name of its own per path and content (hashlib, not Python's salted hash(): the same in every process)
    name = f"hardcse_reward_term_{hashlib.sha256(str(resolved).encode()).hexdigest()[:12]}_{key[1][:12]}"
    spec = importlib.util.spec_from_file_location(name, resolved)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001 - the user's file: any failure is reported in one line
        del sys.modules[name]
        raise HardcseError(f"{path}: cannot be loaded ({one_line(e)})") from None
    _FILE_MODULES[key] = module
    return module


def term_code_digest(spec: str, digest: Any) -> None:
    """Feed ``digest`` with the code a term runs: its file (or its module's file) and every module of the user's
    that it imports, found by :mod:`modulefinder` on the paths outside the Python installation and its libraries
    (whose code the libraries' versions stand for; hardcse's own code is keyed apart: hardcse/cache.py)."""
    import sysconfig
    from modulefinder import ModuleFinder

    where = spec.rpartition(":")[0]
    if where.endswith(".py"):
        file = str(Path(where).resolve())
    else:
        found = importlib.util.find_spec(where)
        file = found.origin if found is not None else None
    if file is None or not Path(file).is_file():
        digest.update(f"term {spec}\0".encode())
        return
    installed = {Path(p).resolve() for k, p in sysconfig.get_paths().items() if k in INSTALL_PATHS}
    user_paths = [str(Path(file).parent)] + [
        str(Path(p or ".").resolve())
        for p in sys.path
        if not any(Path(p or ".").resolve().is_relative_to(d) for d in installed)
    ]
    finder = ModuleFinder(path=user_paths, excludes=["hardcse"])
    finder.run_script(file)
    files = {file} | {m.__file__ for m in finder.modules.values() if m.__file__ and m.__file__.endswith(".py")}
    for path in sorted(files):
        digest.update(f"{path}\0{_file_sha256(path)}\0".encode())


INSTALL_PATHS = ("stdlib", "platstdlib", "purelib", "platlib")


def one_line(e: BaseException) -> str:
    """``Type: message at file:line``, the line the user's code raised at (the innermost frame)."""
    detail = (str(e).strip().splitlines() or [""])[0]
    frames = [f for f in traceback.extract_tb(e.__traceback__) if not f.filename.startswith("<")]  # not importlib's
    at = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return f"{type(e).__name__}: {detail}{at}" if detail else f"{type(e).__name__}{at}"
