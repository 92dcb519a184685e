"""The registry client reads every answer a registry can legitimately give: the deepest
manifest the registry accepts (a manifest.json at the file limit, nested as deep as its bytes
allow) and strings with a lone surrogate, as ``JSON.parse`` keeps them
(docs/compatibility.md#manifest). Anything deeper is refused unparsed
(tests/registry/test_hostile_registry.py): client and server agree on the same bound,
``spec.limits.MAX_MANIFEST_DEPTH``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from splice_build.registry.client.answers import MAX_ANSWER_DEPTH
from splice_build.registry.client.http import HttpRegistryClient
from splice_build.spec.json_depth import nesting_depth
from splice_build.spec.limits import MAX_FILE_BYTES, MAX_MANIFEST_DEPTH
from testing.packages import minimal_manifest
from testing.registry_fixtures import publish
from testing.registry_server import registry_server


def _manifest_text(name: str, default: str) -> str:
    manifest = minimal_manifest(name=name)
    manifest["tools"][0]["input"]["properties"]["name"]["default"] = "SLOT"
    return json.dumps(manifest, separators=(",", ":")).replace('"SLOT"', default)


def _deepest_manifest() -> tuple[str, int]:
    """manifest.json of exactly the file limit, its ``default`` as deep as the rest allows."""
    skeleton = _manifest_text("deepest", "")
    levels = (MAX_FILE_BYTES - len(skeleton)) // 2
    text = _manifest_text("deepest", "[" * levels + "]" * levels)
    assert MAX_FILE_BYTES - 1 <= len(text) <= MAX_FILE_BYTES
    return text, levels


def _default(answer: dict) -> object:
    return answer["manifest"]["tools"][0]["input"]["properties"]["name"]["default"]


@pytest.mark.slow  # about 6 s: packing, publishing and reading a million levels (bench_deep_publish)
def test_the_deepest_manifest_a_registry_accepts_is_read_over_http(tmp_path: Path) -> None:
    text, levels = _deepest_manifest()
    store = tmp_path / "store"
    publish(store, tmp_path / "work", name="deepest", files={"manifest.json": text})
    with registry_server(store, admin=False) as server:
        client = HttpRegistryClient(server.url)
        try:
            answer = client.version("@acme/deepest", "1.0.0")
        finally:
            client.close()
    assert nesting_depth(_default(answer), MAX_MANIFEST_DEPTH) == levels
    assert nesting_depth(answer, MAX_ANSWER_DEPTH) <= MAX_ANSWER_DEPTH


def test_a_manifest_string_with_a_lone_surrogate_is_read_over_http(tmp_path: Path) -> None:
    store = tmp_path / "store"
    text = _manifest_text("surrogate", '"\\ud800 alone"')
    publish(store, tmp_path / "work", name="surrogate", files={"manifest.json": text})
    with registry_server(store, admin=False) as server:
        client = HttpRegistryClient(server.url)
        try:
            answer = client.version("@acme/surrogate", "1.0.0")
        finally:
            client.close()
    assert _default(answer) == "\ud800 alone"
