"""DESIGN.md "Boundaries": which layers may never import which, checked on every import
statement of the package (top-level and inside functions)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "splice_build"

# layer -> layers it must never import (DESIGN.md, Boundaries)
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "spec": ("cli", "tasks", "registry", "runtime", "install", "mcp", "broker", "project", "sdk"),
    "runtime": ("registry", "install", "cli", "tasks", "sdk"),
    "registry": ("runtime", "install", "tasks", "sdk", "broker"),
    "security": ("cli", "runtime"),
    "mcp": ("registry",),
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


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
