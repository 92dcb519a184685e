"""Manifest dicts and in-memory package files for spec tests (no files on disk)."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

_TOOL: dict[str, Any] = {
    "name": "hello",
    "description": "Say hello",
    "entry": "tools/hello.ts",
    "input": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    "output": {"type": "object", "properties": {"message": {"type": "string"}}},
}
_MANIFEST: dict[str, Any] = {
    "specVersion": 1,
    "namespace": "splice",
    "name": "example",
    "version": "0.1.0",
    "description": "Example",
    "permissions": {},
    "tools": [_TOOL],
}
_DROP = object()
MOST_ENTRIES = 1000  # of one permission list: schemas/permissions.schema.json maxItems


def tool_dict(**overrides: Any) -> dict[str, Any]:
    """A valid tool definition; ``key=DROP`` removes a key."""
    return _apply(copy.deepcopy(_TOOL), overrides)


def manifest_dict(**overrides: Any) -> dict[str, Any]:
    """A valid manifest (``@splice/example`` 0.1.0, one tool); ``key=DROP`` removes a key."""
    return _apply(copy.deepcopy(_MANIFEST), overrides)


def deep_grants(count: int = MOST_ENTRIES) -> list[str]:
    """``count`` file grants as deep as an entry may be (256 characters: 128 names each),
    each apart from the others at its first name, none of them made in any project."""
    return [(f"{i:x}" + "/a" * 127)[:256].rstrip("/") for i in range(count)]


def nested_schema(levels: int, *, via: str = "items") -> dict[str, Any]:
    """A schema whose innermost ``{"type": "string"}`` sits ``levels`` levels below the root,
    nested through ``items`` (arrays) or ``properties`` (objects)."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        if via == "items":
            schema = {"type": "array", "items": schema}
        else:
            schema = {"type": "object", "properties": {"child": schema}}
    return schema


def package_files(
    manifest: dict[str, Any] | None = None, extra: Mapping[str, bytes] | None = None
) -> dict[str, bytes]:
    """manifest.json, SKILL.md and every tool entry as bytes, plus ``extra`` files."""
    manifest = manifest if manifest is not None else manifest_dict()
    files = {
        "manifest.json": json.dumps(manifest).encode(),
        "SKILL.md": b"# Example\n\nSays hello.\n",
    }
    for tool in manifest.get("tools", []):
        files[tool["entry"]] = b"export default (input) => ({ message: `Hello, ${input.name}` });\n"
    files.update(extra or {})
    return files


def _apply(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    for key, value in overrides.items():
        if value is _DROP:
            base.pop(key, None)
        else:
            base[key] = value
    return base


DROP: Any = _DROP
