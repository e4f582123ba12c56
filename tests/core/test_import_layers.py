"""Each package's modules import each other without a circle, function-level imports included.

A circle means no module of it can be read, changed or tested without all the others; an import
inside a function is the same circle, only hidden from the interpreter. Imports under
``if TYPE_CHECKING:`` never run and are left out.
"""
from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import networkx as nx
import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = [REPO / "core" / "ember", *sorted(p for p in (REPO / "plugins").glob("*/ember_*") if p.is_dir())]


def module_names(root: Path) -> dict[str, Path]:
    """Dotted name of every module of the package at ``root`` (a package is named by its __init__)."""
    result = {}
    for path in root.rglob("*.py"):
        parts = [root.name, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        result[".".join(parts)] = path
    return result


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, inside_functions: bool = True) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree``, at any depth (or outside functions only), except those
    under ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.extend(node.orelse)
            continue
        if not inside_functions and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return found


def imported_modules(name: str, path: Path, modules: dict[str, Path], inside_functions: bool = True) -> set[str]:
    """The modules of the same package that the module ``name`` (at ``path``) imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in _imports(ast.parse(path.read_text(), str(path)), inside_functions):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join(anchor + ([base] if base else []))
        for alias in node.names:  # ``from .pkg import mod`` names a module; otherwise the names live in base
            sub = f"{base}.{alias.name}"
            targets.add(sub if sub in modules else base)
    return {t for t in targets if t in modules and t != name}


def import_graph(root: Path, inside_functions: bool = True) -> nx.DiGraph:
    modules = module_names(root)
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        targets = imported_modules(name, path, modules, inside_functions)
        graph.add_edges_from((name, target) for target in targets)
    return graph


def test_the_scanner_sees_function_level_and_relative_imports(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("def f():\n    from .sub import b\n    return b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a import f\n"
        "def g():\n    from .. import a\n")
    graph = import_graph(pkg)
    assert set(graph.edges) == {("pkg", "pkg.a"), ("pkg.a", "pkg.sub.b"), ("pkg.sub.b", "pkg.a")}
    assert nx.find_cycle(graph)
    assert set(import_graph(pkg, inside_functions=False).edges) == {("pkg", "pkg.a")}


@pytest.mark.parametrize("root", PACKAGES, ids=lambda p: p.name)
def test_package_has_no_import_cycle(root):
    graph = import_graph(root)
    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        return
    circles = list(itertools.islice(nx.simple_cycles(graph, length_bound=4), 5))
    pytest.fail(f"{root.name} imports in a circle: {' -> '.join(a for a, _ in cycle)} -> {cycle[0][0]}"
                + "".join(f"\n  also: {' -> '.join(c + c[:1])}" for c in circles))


def test_every_module_that_registers_handlers_is_imported_with_capture():
    """A module that fills a dispatch table at import time (``@handles_call``, ``@handles_attr``,
    ``@handles``...) must be imported when ``ember.capture`` is, through module-level imports:
    else its values' calls, attributes, iteration or truth fail."""
    root = REPO / "core" / "ember"
    modules = module_names(root)
    graph = import_graph(root, inside_functions=False)
    registering = {name for name, path in modules.items() if name.startswith("ember.capture.")
                   and re.search(r"^@handles(_\w+)?\(", path.read_text(), re.MULTILINE)}
    assert {"ember.capture.calls", "ember.capture.contexts", "ember.capture.torch_helpers",
            "ember.capture.tensors", "ember.capture.real_values"} <= registering
    assert registering - nx.descendants(graph, "ember.capture") == set()
