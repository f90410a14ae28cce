"""Run by `make check-wheel` with the python of the virtual environment the wheel was installed into: the installed
package holds every file of the checkout's src/hardcse (modules, shipped configs and data), and every module
imports there, where only the core dependencies are installed (an extra's package is imported inside the function
that needs it, never at a module's top). Prints one `error:` line and exits 2 on the first failure.

    VENV/bin/python -I tests/wheel_contents.py SRC_DIR
"""

import importlib
import importlib.metadata
import sys
from pathlib import Path


def source_files(src: Path) -> set[str]:
    """The package's files in the checkout, as paths relative to src/ (build and bytecode output left out)."""
    return {
        p.relative_to(src).as_posix()
        for p in (src / "hardcse").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


def main() -> int:
    src = Path(sys.argv[1]).resolve()
    import hardcse

    if not Path(hardcse.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()):
        print(f"error: hardcse imports from {hardcse.__file__}, not the wheel; run python -I", file=sys.stderr)
        return 2
    installed = {f.as_posix() for f in importlib.metadata.files("hardcse") or [] if f.parts[0] == "hardcse"}
    expected = source_files(src)
    missing = sorted(expected - installed)
    if missing:
        print(f"error: the wheel lacks {len(missing)} files of src/ ({', '.join(missing[:3])}, ...); "
              "add them to [tool.setuptools.package-data] in pyproject.toml", file=sys.stderr)  # fmt: skip
        return 2
    modules = sorted(
        name.replace("/", ".").removesuffix(".__init__")
        for name in (f.removesuffix(".py") for f in installed if f.endswith(".py"))
        if not name.endswith("__main__")  # `python -m hardcse.cli` runs the command line on import
    )
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as e:
            print(f"error: {module} does not import from the wheel with the core dependencies: {e}", file=sys.stderr)
            return 2
    print(f"wheel contents: every one of the checkout's {len(expected)} files; {len(modules)} modules import")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
