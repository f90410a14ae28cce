"""The test session's own folders, and the check that it wrote nowhere else.

Before anything imports hardcse, :func:`isolate` points every folder a test could write by default (the model cache
``$HARDCSE_CACHE``, ``HOME`` and the XDG folders that libraries cache into, Trackio's store) at one fresh temporary
folder, removed when the session ends. A test whose outcome needs an empty cache still gets one of its own
(``monkeypatch.setenv("HARDCSE_CACHE", ...)``).

:class:`WriteCheck` lists, at the start and at the end of the session, the files of the repository (the working
folder's checkout) and of the model cache the user would get without the suite (``$HARDCSE_CACHE`` as it was, else
``$XDG_CACHE_HOME/hardcse`` or ``~/.cache/hardcse``). A path that is new or changed at the end, other than pytest's
own files, ``__pycache__`` and build outputs, fails the session: a test wrote outside its temporary folders.
A job of your own that writes the default cache or adds files to the checkout while the suite runs shows there too.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

# pytest's own files, bytecode and build outputs (what .gitignore calls build output), never a test's writes
ALLOWED_PARTS = {".git", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache", "build", ".mypy_cache"}
ALLOWED_SUFFIXES = (".egg-info", ".pyc")
# the variables that decide where a library writes by default (matplotlib, Hugging Face, torch, Trackio ...)
HOME_VARIABLES = ("HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "MPLCONFIGDIR")


def users_cache() -> Path:
    """The model cache hardcse would use in this environment (hardcse/paths.py's rule, read before the suite's)."""
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hardcse"
    return Path(os.environ.get("HARDCSE_CACHE", default))


def isolate() -> Path:
    """Point the session's default folders at a new temporary folder (returned); call before importing hardcse."""
    root = Path(tempfile.mkdtemp(prefix="hardcse-tests-"))
    for name in HOME_VARIABLES:
        (root / name.lower()).mkdir()
        os.environ[name] = str(root / name.lower())
    os.environ["HARDCSE_CACHE"] = str(root / "cache")
    os.environ["TRACKIO_DIR"] = str(root / "trackio")  # Trackio reads its store's folder once, at import
    return root


def files_below(root: Path) -> dict[str, tuple[int, int]]:
    """Each file under ``root`` but the allowed ones: path -> (size, mtime in ns)."""
    found: dict[str, tuple[int, int]] = {}
    if not root.is_dir():
        return found
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in ALLOWED_PARTS and not d.endswith(ALLOWED_SUFFIXES)]
        for name in names:
            if name.endswith(ALLOWED_SUFFIXES):
                continue
            path = os.path.join(folder, name)
            try:
                stat = os.lstat(path)
            except FileNotFoundError:  # removed while walking
                continue
            found[path] = (stat.st_size, stat.st_mtime_ns)
    return found


class WriteCheck:
    """The watched folders' files at the start of the session, against the end: in ``new_only`` (the checkout,
    whose files a developer may edit meanwhile) a new file counts, in ``new_or_changed`` (the user's cache) a
    changed one too."""

    def __init__(self, new_only: list[Path], new_or_changed: list[Path]) -> None:
        self.new_only, self.new_or_changed = new_only, new_or_changed
        self.before = self.snapshot()

    def snapshot(self) -> dict[str, tuple[int, int]]:
        files: dict[str, tuple[int, int]] = {}
        for root in [*self.new_only, *self.new_or_changed]:
            files |= files_below(root)
        return files

    def written(self) -> list[str]:
        """The paths written since the start, sorted."""
        changed_counts = tuple(str(root) + os.sep for root in self.new_or_changed)
        return sorted(
            path
            for path, stat in self.snapshot().items()
            if path not in self.before or (path.startswith(changed_counts) and self.before[path] != stat)
        )


def remove(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
