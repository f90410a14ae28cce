"""The house's layers, read from the source: no import climbs back up and none goes round in a circle.

Every ``import hardcse...`` counts, at module level or inside a function (a lazy import is still a dependency);
imports under ``if TYPE_CHECKING:`` are left out (they are annotations only, never run).
"""

import ast
import sys
from pathlib import Path

import hardcse

SRC = Path(hardcse.__file__).parent

# higher imports lower, never the other way; a module takes the layer of its longest matching prefix
LAYERS = {
    "hardcse.cli": 9,
    "hardcse.api": 9,
    "hardcse.art.run": 8,
    "hardcse.assay": 8,
    "hardcse.datacube": 8,
    "hardcse.diffaug": 8,
    "hardcse.art.analysis": 7,
    "hardcse.art.synthesis": 6,
    "hardcse.art.rl": 6,
    "hardcse.art.reward": 5,
    "hardcse.art.reward.config": 3,  # the reward's config and its terms' loading: what art/config.py builds on
    "hardcse.art.reward.term_loading": 3,
    "hardcse.art.rl.config": 3,  # RL's settings (rl.ppo, rl.grpo): what art/config.py builds on
    "hardcse.art.generator": 4,
    "hardcse.art": 3,  # art/config.py, warm_start_config.py, log_keys.py
    "hardcse.evaluation": 3,
    "hardcse.encoder": 2,
    "hardcse.discriminator": 2,
    "hardcse.model_card": 2,
    "hardcse.training": 1,
    "hardcse.run_folder": 1,
    "hardcse.tracking": 1,
    "hardcse.tables": 1,
}


def layer(module: str) -> int:
    prefixes = [p for p in LAYERS if module == p or module.startswith(p + ".")]
    return LAYERS[max(prefixes, key=len)] if prefixes else 0


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(n) for child in node.body for n in ast.walk(child)}
    return skipped


def import_graph() -> dict[str, set[tuple[str, int]]]:
    """Each hardcse module -> the hardcse modules it imports, with the line."""
    modules = {}
    for path in SRC.rglob("*.py"):
        name = ".".join(path.relative_to(SRC.parent).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _type_checking_nodes(tree)
        imported = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("hardcse"):
                imported.add((node.module, node.lineno))
            elif isinstance(node, ast.Import):
                imported |= {(a.name, node.lineno) for a in node.names if a.name.startswith("hardcse")}
        modules[name] = imported
    return modules


def test_no_import_climbs_back_up():
    climbs = [
        f"{module}:{line} imports {target}"
        for module, imported in import_graph().items()
        for target, line in imported
        if layer(target) > layer(module)
    ]
    assert not climbs


def test_no_imports_go_round_in_a_circle():
    imports = import_graph()
    graph = {module: {t for t, _ in imported if t in imports} for module, imported in imports.items()}
    cycles = []
    for start in graph:  # a path from a module's import back to the module itself
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for nxt in graph.get(node, ()):
                if nxt == start and node != start:
                    cycles.append(" -> ".join([*path, start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    assert not cycles, cycles[:5]


def test_the_checks_find_a_climb_and_a_circle(tmp_path, monkeypatch):
    """The two checks are not vacuous: a made-up package with one climb and one circle is caught."""
    fake = tmp_path / "hardcse"
    (fake / "cli").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "cli" / "__init__.py").write_text("")
    (fake / "errors.py").write_text("from hardcse.cli import main\n")  # layer 0 imports layer 9
    (fake / "a.py").write_text("import hardcse.b\n")
    (fake / "b.py").write_text("def f():\n    from hardcse.a import x\n")  # a lazy import closes the circle
    monkeypatch.setattr(sys.modules[__name__], "SRC", fake)
    graph = import_graph()
    assert ("hardcse.cli", 1) in graph["hardcse.errors"] and layer("hardcse.cli") > layer("hardcse.errors")
    try:
        test_no_imports_go_round_in_a_circle()
    except AssertionError as e:
        assert "hardcse.a -> hardcse.b -> hardcse.a" in str(e)
    else:
        raise AssertionError("the circle a -> b -> a was not found")
