"""What src/hardcse imports is what the package declares: every third-party module it imports belongs to a
distribution in pyproject.toml's dependencies, and an optional extra's only inside the function that needs it, so
that a wheel installed with the core dependencies alone imports every module (`make check-wheel` runs that import
for real; tests/wheel_contents.py)."""

import ast
import importlib.metadata
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

SRC = Path(__file__).resolve().parent.parent / "src" / "hardcse"


def canonical(name: str) -> str:
    return name.lower().replace("_", "-")


def imported_modules(source: str) -> list[tuple[str, bool]]:
    """(top-level module, imported at the module's top) for each absolute import of ``source``."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [(name.split(".")[0], node in tree.body) for name in names]
    return found


def test_imported_modules_tells_a_top_level_import_from_one_inside_a_function():
    source = "import os\nimport numpy.linalg\nfrom . import x\ndef f():\n    from openvino import Core\n"
    assert imported_modules(source) == [("os", True), ("numpy", True), ("openvino", False)]


def test_src_imports_only_declared_distributions_and_extras_only_inside_functions():
    # pyproject.toml itself, not the installed metadata (which an edit leaves stale until the next install); the
    # dev extra (pytest, ruff) is no dependency of the package
    project = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = {canonical(Requirement(r).name) for r in project["dependencies"]}
    optional = project["optional-dependencies"]
    extras = {canonical(Requirement(r).name) for name, rs in optional.items() if name != "dev" for r in rs}
    distributions = importlib.metadata.packages_distributions()
    undeclared, extra_at_top = set(), set()
    for path in sorted(SRC.rglob("*.py")):
        for module, at_top in imported_modules(path.read_text(encoding="utf-8")):
            if module in sys.stdlib_module_names or module == "hardcse":
                continue
            names = {canonical(d) for d in distributions.get(module, [module])}
            where = f"{path.relative_to(SRC.parent)}: {module}"
            if not names & (core | extras):
                undeclared.add(where)
            elif at_top and not names & core:
                extra_at_top.add(where)
    assert not undeclared, f"imported but not in pyproject.toml's dependencies: {sorted(undeclared)}"
    assert not extra_at_top, f"an optional extra's package imported at a module's top: {sorted(extra_at_top)}"
