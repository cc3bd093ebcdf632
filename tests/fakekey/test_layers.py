"""The package's shape: each folder is a layer, layers import only downwards, and no import
closes a cycle (HACKING.md, "Layers", states the same order; a test below holds the two
together).

Imports are read from the source (ast), anywhere in a module: an import inside a function
runs too, so it counts. An import under `if TYPE_CHECKING:` is a name for annotations,
never run, so it does not. `from pkg import name` is an import of `pkg.name` when that is a
module, else of `pkg` itself. Each module's layer comes from its path, so a new module is
checked the day it is added; one that fits no layer fails the test."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_ROOT = ROOT / "fakekey"

# Bottom to top. A module may import its own unit's modules and those of any lower layer;
# units that share a layer are independent of each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("fakekey._version", "fakekey.compiled"),
    ("fakekey.resp",),
    ("fakekey.codecs",),
    ("fakekey.types",),
    ("fakekey.config",),
    ("fakekey.memory",),
    ("fakekey.core",),
    ("fakekey.scripting",),
    ("fakekey.persistence",),
    ("fakekey.commands",),
    ("fakekey.modules",),
    ("fakekey.net",),
    ("fakekey.cli",),
    ("fakekey.testing", "fakekey.compat", "fakekey.emq"),
    ("fakekey", "fakekey.__main__"),  # the public names (loaded on first use); `python -m`
)
TOP_LEVEL_FILES_MAX = 5  # .py files directly in fakekey/, besides __init__ and __main__


def _within(name: str, unit: str) -> bool:
    return name == unit or name.startswith(unit + ".")


def unit_of(name: str) -> tuple[int, str]:
    """(layer number, unit) of a module: the longest unit that contains it."""
    best: tuple[int, str] | None = None
    for rank, units in enumerate(LAYERS):
        for unit in units:
            if _within(name, unit) and (best is None or len(unit) > len(best[1])):
                best = (rank, unit)
    if best is None:
        raise LookupError(f"{name} belongs to no layer: add its folder to LAYERS and HACKING.md")
    return best


def module_path(name: str) -> Path | None:
    """The source file of a fakekey module or package, None for anything else."""
    parts = name.split(".")
    if parts[0] != "fakekey":
        return None
    base = PACKAGE_ROOT.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> list[str]:
    return sorted(module_name(p) for p in PACKAGE_ROOT.rglob("*.py") if "__pycache__" not in p.parts)


def _is_type_checking_block(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of the tree except those inside `if TYPE_CHECKING:` bodies."""
    found: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        found.append(node)
        for child in ast.iter_child_nodes(node):
            if _is_type_checking_block(child):
                stack.extend(child.orelse)  # the else branch does run
            else:
                stack.append(child)
    return found


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_in(tree: ast.AST, importer: str, is_package: bool) -> set[str]:
    imported: set[str] = set()
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node, importer, is_package)
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                imported.add(submodule if module_path(submodule) is not None else source)
    return imported


@cache
def direct_imports(name: str) -> frozenset[str]:
    """The fakekey modules `name` imports at run time."""
    path = module_path(name)
    if path is None:
        return frozenset()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = imports_in(tree, name, path.name == "__init__.py")
    return frozenset(m for m in found if module_path(m) is not None and m != name)


def upward_imports(name: str) -> list[str]:
    rank, unit = unit_of(name)
    bad = []
    for imported in sorted(direct_imports(name)):
        other_rank, other_unit = unit_of(imported)
        if other_unit != unit and other_rank >= rank:
            bad.append(f"{imported} (layer {other_rank}, {other_unit})")
    return bad


def import_cycles(modules: list[str], edges: Callable[[str], frozenset[str]] = direct_imports) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan) in the graph
    `edges` draws."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:  # iterative: the graph's depth is not Python's limit
        nonlocal counter
        work = [(start, iter(sorted(edges(start))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(edges(succ)))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))

    for module in modules:
        if module not in index:
            visit(module)
    return cycles


# --- the tests ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", all_modules())
def test_module_imports_nothing_above_its_layer(name: str) -> None:
    assert upward_imports(name) == [], f"{name} (layer {unit_of(name)[0]}) imports upward"


def test_no_import_cycles() -> None:
    assert import_cycles(all_modules()) == []


def test_few_files_at_the_top() -> None:
    top = sorted(p.name for p in PACKAGE_ROOT.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(top) <= TOP_LEVEL_FILES_MAX, top


def test_every_unit_exists() -> None:
    modules = all_modules()
    for units in LAYERS:
        for unit in units:
            assert any(_within(m, unit) for m in modules), f"{unit} is in LAYERS but not in the tree"


LOADED = """
import importlib, json, sys
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted(m for m in sys.modules if m == "fakekey" or m.startswith("fakekey."))))
"""


def is_bare_package(name: str) -> bool:
    """A package whose __init__ imports nothing: loading it runs no other module."""
    path = module_path(name)
    return path is not None and path.name == "__init__.py" and not direct_imports(name)


@pytest.mark.parametrize("rank", range(len(LAYERS) - 1))
def test_importing_a_layer_loads_nothing_above_it(rank: int) -> None:
    """What Python really loads, parents' __init__ included: importing every module of a
    layer, in a fresh interpreter, loads no module of a higher layer. A compiled module
    loads the package of a type it names (to find that module's compiled library), so a
    bare package of a higher layer may come along; package __init__s stay bare for that."""
    names = [m for m in all_modules() if unit_of(m)[0] == rank]
    done = subprocess.run([sys.executable, "-c", LOADED, *names], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    loaded = [m for m in json.loads(done.stdout) if module_path(m) is not None]
    above = [m for m in loaded if unit_of(m)[0] > rank
             and m != "fakekey"  # every import runs the root's __init__, which loads nothing
             and not is_bare_package(m)]
    assert above == []


def test_hacking_md_states_the_same_order() -> None:
    """HACKING.md's numbered list under "Layers" names the units of each layer, bottom
    first, as LAYERS does."""
    text = (ROOT / "HACKING.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    stated = []
    for line in section.splitlines():
        if re.match(r"^\d+\. ", line):
            head = line.split(":", 1)[0]
            stated.append(tuple("fakekey" if u == "fakekey" else "fakekey." + u.rstrip("/")
                                for u in re.findall(r"`([^`]+)`", head)))
    assert stated == [tuple(units) for units in LAYERS]


def test_the_walk_sees_deferred_imports_and_ignores_type_checking() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from fakekey.core.state import ServerState\n"
        "def later():\n    from fakekey.commands.args import SYNTAX\n"
        "from fakekey.codecs import glob\n")
    found = imports_in(ast.parse(source), "fakekey.x", False)
    assert found == {"typing", "fakekey.commands.args", "fakekey.codecs.glob"}


def test_cycles_are_found() -> None:
    """The cycle finder itself, on a made-up graph."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(sorted(graph), lambda name: frozenset(graph.get(name, ()))) == [["a", "b", "c"]]
