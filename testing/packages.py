"""Write small, real package directories for tests."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

HELLO_TOOL = """export default function hello(input) {
  return { message: `Hello, ${input.name}.` };
}
"""


def minimal_manifest(**overrides: Any) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "specVersion": 1,
        "namespace": "acme",
        "name": "greeter",
        "version": "1.0.0",
        "description": "Greets people.",
        "tools": [
            {
                "name": "hello",
                "description": "Say hello.",
                "entry": "tools/hello.js",
                "input": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                    "additionalProperties": False,
                },
            }
        ],
    }
    manifest.update(overrides)
    return manifest


def write_package(
    directory: Path,
    manifest: Mapping[str, Any] | None = None,
    files: Mapping[str, str | bytes] | None = None,
) -> Path:
    """A package directory: manifest.json, SKILL.md, tools/hello.js, plus ``files``."""
    directory.mkdir(parents=True, exist_ok=True)
    contents: dict[str, str | bytes] = {
        "manifest.json": json.dumps(manifest or minimal_manifest(), indent=2),
        "SKILL.md": "# Greeter\n\nSays hello.\n",
        "tools/hello.js": HELLO_TOOL,
    }
    contents.update(files or {})
    for rel, data in contents.items():
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8")
    return directory
