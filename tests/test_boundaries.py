"""docs/architecture.md#boundaries: which layers may never import which, checked on every import
statement of the package (top-level and inside functions); and no two layers import each
other, directly or around a loop, counting every import that runs (annotation-only imports
under ``if TYPE_CHECKING:`` create no dependency when the code runs and are left out).

A layer is the first name below ``splice_build``: a subpackage (``tasks``) or a module
(``sdk``)."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "splice_build"

# layer -> layers it must never import (docs/architecture.md#boundaries)
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "spec": ("cli", "tasks", "registry", "runtime", "install", "mcp", "broker", "project", "sdk"),
    "runtime": ("registry", "install", "cli", "tasks", "sdk"),
    "registry": ("runtime", "install", "tasks", "sdk", "broker"),
    "security": ("cli", "runtime"),
    "mcp": ("registry",),
    # The graph is entered by the CLI, MCP (through the SDK) and doit, never the reverse.
    "tasks": ("cli", "mcp", "sdk"),
}


def _imports(path: Path, *, typing_only: bool = True) -> set[str]:
    """The absolute imports of ``path``; ``typing_only=False`` skips ``if TYPE_CHECKING:``."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if not typing_only and isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "splice_build" else None


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_nothing_it_must_not(layer: str) -> None:
    offences = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for module in _imports(path):
            if _layer_of(module) in FORBIDDEN[layer]:
                offences.append(f"{path.relative_to(PACKAGE.parent)} imports {module}")
    assert offences == []


def test_the_checker_sees_function_level_imports(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from splice_build.registry.client import open_registry\n")
    assert _layer_of(next(iter(_imports(probe)))) == "registry"


def _layer_graph(package: Path) -> dict[str, dict[str, str]]:
    """layer -> {imported layer: one file that imports it}, imports that run only."""
    graph: dict[str, dict[str, str]] = {}
    for path in sorted(package.rglob("*.py")):
        layer = path.relative_to(package).parts[0].removesuffix(".py")
        for module in _imports(path, typing_only=False):
            target = _layer_of(module)
            if target is not None and target != layer:
                where = path.relative_to(package.parent).as_posix()
                graph.setdefault(layer, {}).setdefault(target, where)
    return graph


def _cycles(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """Every elementary loop of ``graph``, each once, starting at its smallest layer."""
    found: list[list[str]] = []

    def walk(start: str, path: list[str]) -> None:
        for target in sorted(graph.get(path[-1], {})):
            if target == start:
                found.append([*path, start])
            elif target > start and target not in path:
                walk(start, [*path, target])

    for start in sorted(graph):
        walk(start, [start])
    return found


def test_no_two_layers_import_each_other() -> None:
    graph = _layer_graph(PACKAGE)
    loops = [
        " -> ".join(f"{a} ({graph[a][b]})" for a, b in itertools.pairwise(loop)) + f" -> {loop[-1]}"
        for loop in _cycles(graph)
    ]
    assert loops == []


def test_the_cycle_check_finds_a_loop_and_ignores_annotations(tmp_path: Path) -> None:
    package = tmp_path / "splice_build"
    for layer, body in {
        "sdk.py": "from splice_build.tasks.graph import run_graph\n",
        "tasks/graph.py": "def f():\n    from splice_build.install.x import y\n",
        "install/x.py": "import splice_build.sdk\n",
        "spec/a.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from splice_build.sdk import Splice\n"
        ),
    }.items():
        (package / layer).parent.mkdir(parents=True, exist_ok=True)
        (package / layer).write_text(body)
    graph = _layer_graph(package)
    assert _cycles(graph) == [["install", "sdk", "tasks", "install"]]
    assert "spec" not in graph  # an annotation-only import is no dependency
