"""Layers point one way: the data types, the protocol, the keyspace and the small modules
beneath them never import the commands or the server (HACKING.md, "Layers"); the command
registry, a table of declarations, is the one module under fakekey/commands they may read.

Imports are read from the source (ast), anywhere in a module (a function's deferred
import counts), and followed through the fakekey modules they reach. An import under
`if TYPE_CHECKING:` is a name for annotations, never run, so it does not count; a parent
package's `__init__` is not followed (importing any submodule runs `fakekey/__init__.py`,
which is the public entry point and sits on top)."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parents[2] / "fakekey"

LOW_LAYERS = (
    "fakekey.types",
    "fakekey.resp",
    "fakekey.core.keyspace",
    "fakekey.core.clock",
    "fakekey.codecs.glob",
    "fakekey.core.users",
    "fakekey.codecs.errors",
    "fakekey.codecs.numbers",
    "fakekey.codecs.longdouble",
    "fakekey.codecs.geohash",
    "fakekey.codecs.hll",
    "fakekey.persistence.rdb",
    "fakekey.codecs.digest",
    "fakekey.core.tracking",
    "fakekey.resp.streaming",
    "fakekey.core.commandlog",
    "fakekey.core.registry",
)
HIGH_LAYERS = ("fakekey.commands", "fakekey.net.server", "fakekey.core.state")
# The registry is the table of command declarations (names, flags, key specs, ACL
# categories), with no handler of its own and nothing above it: ACL rules are written in
# its terms, so the low layers may read it. It is checked as a low layer itself.
DECLARATIONS = ("fakekey.core.registry",)


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
    relative = path.relative_to(PACKAGE_ROOT.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


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


@cache
def direct_imports(name: str) -> frozenset[str]:
    """The fakekey modules `name` imports at run time (`from pkg import mod` gives pkg.mod
    when mod is a module)."""
    path = module_path(name)
    if path is None:
        return frozenset()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    imported: set[str] = set()
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node, name, is_package)
            imported.add(source)
            imported.update(f"{source}.{alias.name}" for alias in node.names
                            if module_path(f"{source}.{alias.name}") is not None)
    return frozenset(m for m in imported if module_path(m) is not None)


def is_high(name: str) -> bool:
    return _within(name, HIGH_LAYERS) and not _within(name, DECLARATIONS)


def reachable(name: str) -> dict[str, str]:
    """Every fakekey module `name` reaches through run-time imports, each with the module
    that imports it (to show the path of a violation); the walk stops at a high layer."""
    seen: dict[str, str] = {}
    todo = [name]
    while todo:
        current = todo.pop()
        for imported in direct_imports(current):
            if imported not in seen and imported != name:
                seen[imported] = current
                if not is_high(imported):
                    todo.append(imported)
    return seen


def import_chain(start: str, end: str, parents: dict[str, str]) -> str:
    chain = [end]
    while chain[-1] != start:
        chain.append(parents[chain[-1]])
    return " -> ".join(reversed(chain))


def _within(name: str, layers: tuple[str, ...]) -> bool:
    return any(name == layer or name.startswith(layer + ".") for layer in layers)


def low_modules() -> list[str]:
    names = sorted(module_name(p) for p in PACKAGE_ROOT.rglob("*.py") if "__pycache__" not in p.parts)
    return [name for name in names if _within(name, LOW_LAYERS)]


def test_the_low_layers_exist() -> None:
    names = low_modules()
    for layer in LOW_LAYERS:
        assert any(_within(name, (layer,)) for name in names), f"{layer} not found"


@pytest.mark.parametrize("name", low_modules())
def test_low_layer_imports_nothing_above_it(name: str) -> None:
    parents = reachable(name)
    upward = sorted(m for m in parents if is_high(m))
    assert upward == [], "imports a higher layer: " + "; ".join(
        import_chain(name, m, parents) for m in upward)


def test_the_walk_sees_deferred_imports_and_ignores_type_checking(tmp_path: Path) -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from fakekey.core.state import ServerState\n"
        "def later():\n    from fakekey.commands.args import SYNTAX\n")
    tree = ast.parse(source)
    found = set()
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.ImportFrom):
            found.add(node.module)
    assert found == {"typing", "fakekey.commands.args"}
