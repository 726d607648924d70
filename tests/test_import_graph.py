"""The package's imports run one way: no circle, lazy imports inside functions included, and the read side in
its layers (a module imports only modules below it). Imports under ``if TYPE_CHECKING:`` never run and are
left out. Pure ast: nothing is imported."""

from __future__ import annotations

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "src" / "barrierlab"

#: The read side, top to bottom: rank files -> Run -> numbers, diagnosis, drawings. A module may import only
#: modules of lower layers (and modules outside this list that import none of these).
READ_SIDE = (
    ("script", "widgets"),
    ("launch", "torchrun"),
    ("collect",),
    ("result",),
    ("plot",),
    ("diagnose", "live", "ordering_table", "waits"),
    ("calls", "ordering", "stacks"),
    ("chains",),
    ("events",),
    ("sites", "ops", "palette", "words", "_protocol"),
)


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, pathlib.Path]:
    return {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _type_checking_blocks(tree: ast.AST) -> set[int]:
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(child) for stmt in node.body for child in ast.walk(stmt)}
    return skipped


def imports(name: str, path: pathlib.Path, modules: dict[str, pathlib.Path]) -> set[str]:
    """The package's modules that ``name`` imports, wherever the import statement is."""
    tree = ast.parse(path.read_text())
    skipped = _type_checking_blocks(tree)
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in modules}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package
                package = name.split(".")[: -node.level] if not path.name == "__init__.py" else name.split(".")
                base = ".".join(package + ([node.module] if node.module else []))
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.add(candidate if candidate in modules else base)
    return {module for module in found if module in modules and module != name}


def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: imports(name, path, modules) for name, path in modules.items()}


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_package_has_no_import_circle_lazy_imports_included():
    cycle = _cycle(graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_the_read_side_imports_only_downward():
    layer = {f"barrierlab.{name}": depth for depth, names in enumerate(READ_SIDE) for name in names}
    edges = graph()
    upward = [
        f"{module} imports {target}"
        for module, targets in edges.items()
        if module in layer
        for target in targets
        if target in layer and layer[target] <= layer[module] and target != module
    ]
    assert not upward, upward


def test_the_checker_sees_a_lazy_import_and_ignores_type_checking(tmp_path):
    """The rules above would pass vacuously if lazy imports were missed: check the reader on a known case."""
    modules = {"barrierlab.a": tmp_path / "a.py", "barrierlab.b": tmp_path / "b.py"}
    modules["barrierlab.a"].write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from barrierlab.b import X\n"
        "def f():\n    from barrierlab import b\n"
    )
    assert imports("barrierlab.a", modules["barrierlab.a"], modules) == {"barrierlab.b"}
    modules["barrierlab.a"].write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import barrierlab.b\n")
    assert imports("barrierlab.a", modules["barrierlab.a"], modules) == set()
    assert _cycle({"x": {"y"}, "y": {"x"}}) == ["x", "y", "x"]
