"""The notebooks run on Binder: what they import is installed there, and they fit a pod of 1 CPU and 2 GB.

tests/test_environment.py checks that environment.yml and requirements.txt name the same packages and
versions; this file checks the code against environment.yml, statically (ast, no kernel):

* every ``import X`` / ``from X import`` in the notebooks' code cells and in src/barrierlab is the standard
  library, barrierlab itself, or a distribution environment.yml lists, directly or as a dependency of one
  it lists (import names are mapped to distributions with importlib.metadata.packages_distributions());
* the notebooks assume no more than Binder gives (1 CPU, 2 GB):
  - no ``threads=`` above 1 in a ``run(...)`` call and no ``torch.set_num_threads(N)`` above 1;
  - no world size above ``BINDER_MAX_WORLD_SIZE`` (8: a 4-rank demo plus the kernel stays well under 1 GB)
    unless the cell carries the tag ``many-ranks`` (a deliberate oversubscription demo); world sizes are
    read from ``run(fn, N)``, ``world_size=N`` (also in ``dict(...)`` and ``{"world_size": N}``), and from
    names bound in the same cell to literal numbers or lists/tuples/ranges of them;
  - no decision depends on the CPU count: ``os.cpu_count()``, ``os.sched_getaffinity()``,
    ``multiprocessing.cpu_count()``, ``psutil.cpu_count()``, ``torch.get_num_threads()`` (or a name bound to
    one of them in the same cell) may be printed or plotted, but not used in a condition, a comparison,
    ``range()``, or as an argument of ``run``/``explore_straggler``/``straggler_explorer``/``set_num_threads``;
  - no tensor created with literal sizes of more than 16 Mi elements (64 MiB of float32, per rank).

benchmarks/notebooks.py measures what these checks can only approximate (time and peak memory per notebook,
optionally on one CPU).
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import math
import re
import sys
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement
from test_environment import conda_pins

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SOURCES = sorted((ROOT / "src" / "barrierlab").rglob("*.py"))
PACKAGE = "barrierlab"
BINDER_MAX_WORLD_SIZE = 8
MANY_RANKS_TAG = "many-ranks"
MAX_TENSOR_ELEMENTS = 16 * 2**20
CPU_COUNT_CALLS = {"cpu_count", "sched_getaffinity", "get_num_threads", "process_cpu_count"}
RUN_CALLS = {"run", "explore_straggler", "straggler_explorer"}
TENSOR_FACTORIES = {"zeros", "ones", "empty", "rand", "randn", "randint", "full", "arange", "tensor"}
FIRST_NOTEBOOK = re.compile(r"mybinder\.org/v2/gh/[^)\s]+\?urlpath=lab/tree/([^)\s]+\.ipynb)")


def code_cells(path: Path) -> list[tuple[int, nbformat.NotebookNode, ast.Module]]:
    """(index, cell, tree) for every code cell; IPython magics and shell escapes are blanked, not parsed."""
    cells = []
    for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
        if cell.cell_type != "code":
            continue
        if cell.source.lstrip().startswith("%%"):
            continue  # a cell magic: the body is not Python
        lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in cell.source.splitlines()]
        cells.append((index, cell, ast.parse("\n".join(lines), filename=f"{path.name} cell {index}")))
    return cells


def imported_modules(tree: ast.AST) -> set[str]:
    """Top-level names of absolute imports."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def binder_distributions() -> set[str]:
    """Distributions Binder installs: environment.yml's packages and, from their installed metadata, their
    (non-optional) dependencies, as canonical names."""
    pending = [_canonical(name) for name in conda_pins()]
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        for line in requires:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                pending.append(_canonical(req.name))
    return seen


def uncovered_imports(modules: set[str], distributions: set[str]) -> dict[str, list[str]]:
    owners = metadata.packages_distributions()
    missing = {}
    for module in sorted(modules):
        if module in sys.stdlib_module_names or module == PACKAGE:
            continue
        dists = [_canonical(d) for d in owners.get(module, [])]
        if not any(d in distributions for d in dists):
            missing[module] = dists
    return missing


def test_the_binder_badge_opens_an_existing_notebook():
    match = FIRST_NOTEBOOK.search((ROOT / "README.md").read_text())
    assert match, "README.md has no Binder badge with ?urlpath=lab/tree/<notebook>"
    assert (ROOT / match.group(1)).is_file(), f"the Binder badge opens {match.group(1)}, which does not exist"


def test_no_binder_directory_overrides_environment_yml():
    """Binder reads only binder/ (or .binder/) when one exists, and would ignore environment.yml."""
    assert not [d for d in ("binder", ".binder") if (ROOT / d).exists()]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebook_import_is_installed_on_binder(path):
    modules = set().union(*(imported_modules(tree) for _, _, tree in code_cells(path)))
    assert uncovered_imports(modules, binder_distributions()) == {}, (
        f"{path.name} imports modules no package in environment.yml provides (module: distributions)"
    )


def test_every_package_import_is_installed_on_binder():
    modules = set().union(*(imported_modules(ast.parse(p.read_text(), filename=str(p))) for p in SOURCES))
    assert uncovered_imports(modules, binder_distributions()) == {}


def _int(node: ast.AST) -> int | None:
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def _ints(node: ast.AST, bound: dict[str, set[int]]) -> set[int]:
    """The integer values an expression may take, as far as literals in the cell tell."""
    if (value := _int(node)) is not None:
        return {value}
    if isinstance(node, ast.Name):
        return bound.get(node.id, set())
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return set().union(*(_ints(e, bound) for e in node.elts)) if node.elts else set()
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        args = [_int(a) for a in node.args]
        if args and None not in args:
            return set(range(*args))
    return set()


def _bindings(tree: ast.AST) -> dict[str, set[int]]:
    """Names bound to literal ints or collections of them (``n = 12``, ``sizes = [2, 12]``, ``for n in sizes``)."""
    bound: dict[str, set[int]] = {}
    for _ in range(2):  # twice, so `for n in sizes` sees `sizes = [...]` wherever it is
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and (values := _ints(node.value, bound)):
                        bound.setdefault(target.id, set()).update(values)
            elif isinstance(node, (ast.For, ast.comprehension)):
                if isinstance(node.target, ast.Name) and (values := _ints(node.iter, bound)):
                    bound.setdefault(node.target.id, set()).update(values)
    return bound


def _name(func: ast.AST) -> str | None:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def world_sizes(tree: ast.AST) -> set[int]:
    bound = _bindings(tree)
    sizes: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if _name(node.func) == "run" and len(node.args) >= 2:
                sizes |= _ints(node.args[1], bound)
            if _name(node.func) in ("explore_straggler", "straggler_explorer") and node.args:
                sizes |= _ints(node.args[0], bound)
            for keyword in node.keywords:
                if keyword.arg == "world_size":
                    sizes |= _ints(keyword.value, bound)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and key.value == "world_size":
                    sizes |= _ints(value, bound)
    return sizes


def thread_counts(tree: ast.AST) -> list[str]:
    """Descriptions of every place a cell asks for more than one torch thread."""
    bound = _bindings(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if _name(node.func) == "run":
            for keyword in node.keywords:
                if keyword.arg == "threads" and ((v := _ints(keyword.value, bound)) == set() or max(v) > 1):
                    found.append(f"run(..., threads={ast.unparse(keyword.value)}), line {node.lineno}")
        if _name(node.func) == "set_num_threads" and node.args:
            if (v := _ints(node.args[0], bound)) == set() or max(v) > 1:
                found.append(f"set_num_threads({ast.unparse(node.args[0])}), line {node.lineno}")
    return found


def _mentions_cpu_count(node: ast.AST, tainted: set[str]) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and _name(sub.func) in CPU_COUNT_CALLS:
            return True
        if isinstance(sub, ast.Name) and sub.id in tainted:
            return True
    return False


def cpu_count_decisions(tree: ast.AST) -> list[str]:
    """Places where the CPU count decides something (not just shown)."""
    tainted: set[str] = set()
    for _ in range(2):
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and _mentions_cpu_count(node.value, tainted):
                tainted.update(t.id for t in node.targets if isinstance(t, ast.Name))
    found = []
    for node in ast.walk(tree):
        deciding: list[ast.AST] = []
        if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            deciding = [node.test]
        elif isinstance(node, ast.Compare):
            deciding = [node]
        elif isinstance(node, ast.Call) and _name(node.func) in RUN_CALLS | {"range", "set_num_threads"}:
            deciding = list(node.args) + [k.value for k in node.keywords]
        if any(_mentions_cpu_count(d, tainted) for d in deciding):
            found.append(f"line {node.lineno}: {ast.unparse(node).splitlines()[0][:80]}")
    return sorted(set(found))


def large_tensors(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _name(node.func) in TENSOR_FACTORIES and isinstance(node.func, ast.Attribute):
            dims = node.args[0].elts if node.args and isinstance(node.args[0], (ast.Tuple, ast.List)) else node.args
            sizes = [_int(d) for d in dims]
            if sizes and None not in sizes and math.prod(sizes) > MAX_TENSOR_ELEMENTS:
                found.append(f"line {node.lineno}: {ast.unparse(node)[:80]}")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_notebook_asks_for_more_than_one_thread_per_rank(path):
    found = {i: t for i, _, tree in code_cells(path) if (t := thread_counts(tree))}
    assert found == {}, f"{path.name}: Binder has 1 CPU (cell index: calls)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_notebook_starts_more_than_8_ranks_unless_the_cell_says_so(path):
    found = {
        i: sorted(s)
        for i, cell, tree in code_cells(path)
        if MANY_RANKS_TAG not in cell.metadata.get("tags", [])
        and (s := {n for n in world_sizes(tree) if n > BINDER_MAX_WORLD_SIZE})
    }
    assert found == {}, (
        f"{path.name}: world sizes above {BINDER_MAX_WORLD_SIZE} (cell index: sizes); "
        f"tag the cell {MANY_RANKS_TAG!r} if the oversubscription is the point"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_notebook_decides_anything_by_the_cpu_count(path):
    found = {i: d for i, _, tree in code_cells(path) if (d := cpu_count_decisions(tree))}
    assert found == {}, f"{path.name}: Binder gives 1 CPU whatever the host has (cell index: places)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_notebook_allocates_large_tensors(path):
    found = {i: t for i, _, tree in code_cells(path) if (t := large_tensors(tree))}
    assert found == {}, f"{path.name}: tensors over {MAX_TENSOR_ELEMENTS} elements (cell index: calls)"


# The checks above, checked: each finds what it should and only that.


def _tree(source: str) -> ast.Module:
    return ast.parse(source)


def test_world_sizes_are_found_through_loops_and_keywords():
    tree = _tree(
        "sizes = [2, 4, 12]\nlat = {n: bl.run(f, n) for n in sizes}\nbl.run(f, 16)\n"
        "settings = [dict(world_size=9), {'world_size': 10}]\nexplore_straggler(world_size=11)"
    )
    assert world_sizes(tree) == {2, 4, 9, 10, 11, 12, 16}


def test_threads_above_one_are_found():
    tree = _tree(
        "bl.run(f, 4, threads=2)\nbl.run(f, 4, threads=1)\ntorch.set_num_threads(4)\nn = 3\nbl.run(f, 2, threads=n)"
    )
    assert len(thread_counts(tree)) == 3


def test_showing_the_cpu_count_is_fine_deciding_by_it_is_not():
    assert cpu_count_decisions(_tree("cores = len(os.sched_getaffinity(0))\nprint(cores)\nax.axvline(cores)")) == []
    assert len(cpu_count_decisions(_tree("n = os.cpu_count()\nbl.run(f, n)"))) == 1
    assert len(cpu_count_decisions(_tree("if os.cpu_count() > 2:\n    pass"))) == 2  # the if and its comparison


def test_large_literal_tensors_are_found():
    assert len(large_tensors(_tree("torch.randn(8192, 8192)\ntorch.zeros((4, 4))\ntorch.ones(100)"))) == 1


def test_magics_are_skipped_when_parsing(tmp_path):
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("%matplotlib inline\n!ls\nimport os"),
            nbformat.v4.new_code_cell("%%bash\necho hi"),
        ]
    )
    nbformat.write(nb, tmp_path / "magic.ipynb")
    assert [imported_modules(tree) for _, _, tree in code_cells(tmp_path / "magic.ipynb")] == [{"os"}]


def test_an_import_nothing_installs_is_reported():
    assert uncovered_imports({"os", "barrierlab", "torch", "not_a_real_module"}, binder_distributions()) == {
        "not_a_real_module": []
    }
