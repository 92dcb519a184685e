"""127.0.0.1 variants of the network skills, built in tests (issue 8's testing rule).

The real ``@splice/http`` (``network: ["*"]``) and ``@splice/github``
(``network: ["api.github.com"]``) can never reach a local test server: the guard refuses
loopback for them. A variant is a copy of the package with exactly two possible changes,
both made here and nowhere else:

- ``permissions.network`` becomes ``["127.0.0.1"]`` — the explicit IP-literal grant of the
  network guard (docs/network-security.md, rule 3);
- for github, the one ``API_BASE`` line of ``lib/github.mjs`` is replaced by the local
  server's base URL (a plain text substitution that must match exactly once).

Everything else — tools, schemas, error handling — is the shipped code.
"""

from __future__ import annotations

import json
from pathlib import Path

from testing.skill_runner import copy_skill

LOOPBACK = "127.0.0.1"
GITHUB_BASE_LINE = 'export const API_BASE = "https://api.github.com";'


def loopback_variant(name: str, destination: Path) -> Path:
    """A copy of the official package ``name`` whose only network grant is 127.0.0.1."""
    package = copy_skill(name, destination)
    manifest_path = package / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["permissions"]["network"] = [LOOPBACK]
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return package


def github_variant(destination: Path, base_url: str) -> Path:
    """The 127.0.0.1 variant of @splice/github, talking to ``base_url`` instead of GitHub."""
    package = loopback_variant("github", destination)
    lib = package / "lib" / "github.mjs"
    source = lib.read_text(encoding="utf-8")
    if source.count(GITHUB_BASE_LINE) != 1:
        raise AssertionError(f"{lib} must contain {GITHUB_BASE_LINE!r} exactly once")
    replacement = f"export const API_BASE = {json.dumps(base_url)};"
    lib.write_text(source.replace(GITHUB_BASE_LINE, replacement), encoding="utf-8")
    return package
