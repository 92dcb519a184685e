"""Build real malicious (and ordinary) packages for runtime tests.

``write_package(root, body)`` writes a complete package directory whose single tool ``t``
has ``body`` as its entry module source; permissions, schemas, timeouts and extra files are
keyword options. Hostile bodies live in the tests that use them, named after the attack.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ANY_OBJECT: dict[str, Any] = {"type": "object"}


def write_package(
    root: Path,
    body: str,
    *,
    entry: str = "tools/t.mjs",
    permissions: Mapping[str, Any] | None = None,
    input_schema: Mapping[str, Any] | None = None,
    output_schema: Mapping[str, Any] | None = None,
    timeout_ms: int | None = None,
    runtime: Mapping[str, Any] | None = None,
    extra_files: Mapping[str, str | bytes] | None = None,
    name: str = "hostile",
) -> Path:
    """Write the package under ``root / name`` and return its directory."""
    tool: dict[str, Any] = {
        "name": "t",
        "description": "A test tool.",
        "entry": entry,
        "input": dict(input_schema or ANY_OBJECT),
    }
    if output_schema is not None:
        tool["output"] = dict(output_schema)
    if timeout_ms is not None:
        tool["timeoutMs"] = timeout_ms
    manifest: dict[str, Any] = {
        "specVersion": 1,
        "namespace": "test",
        "name": name,
        "version": "1.0.0",
        "description": "A package built by testing.hostile_packages.",
        "tools": [tool],
    }
    if permissions is not None:
        manifest["permissions"] = dict(permissions)
    if runtime is not None:
        manifest["runtime"] = dict(runtime)
    pkg = root / name
    (pkg / entry).parent.mkdir(parents=True, exist_ok=True)
    (pkg / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    (pkg / "SKILL.md").write_text(f"# {name}\n\nTest package.\n", encoding="utf-8")
    (pkg / entry).write_text(body, encoding="utf-8")
    for rel, content in (extra_files or {}).items():
        target = pkg / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return pkg


def tool_returning(expression: str, *, imports: str = "") -> str:
    """A module whose default export returns ``expression`` (evaluated per call)."""
    return (
        f"{imports}\nexport default async function t(input, ctx) {{\n  return {expression};\n}}\n"
    )
