"""What one anonymous read of a published package costs the registry server.

A manifest may legally nest its tool input's ``default`` a million levels deep (the file limit
allows about 1,048,000, tests/registry/test_deep_answers.py). ``GET .../:version`` parsed the
stored manifest with the pure-Python ``json_text.parse_iterative`` and wrote it again with
``json_text.stringify``: about 5 s of the server's CPU for every anonymous read, for the bytes
publish had stored. The answer now carries the stored text (``json_text.parse_shallow``); the
pure-Python parser must not be reached at all, and the bytes stay those of the full parse.

Indenting an answer multiplies it by its depth: a 2 MiB manifest holding a million numbers 400
levels deep was answered in 860 MB (18-20 s of CPU on the server's event loop). An answer whose
indented form would more than double it (beyond ``json_text.READABLE_SLACK``) is now compact.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from splice_build.errors import ErrorCode, RegistryError
from splice_build.mcp.interface import ToolOutcome
from splice_build.mcp.mapping import tool_result
from splice_build.registry.http.app import create_app
from splice_build.registry.http.errors import json_bytes
from splice_build.registry.mcp_backend import PACKAGE_INFO, RegistryDiscoveryBackend, charged_to
from splice_build.registry.service.registry_service import RegistryService
from splice_build.registry.storage import open_service
from splice_build.spec import json_text
from testing.asgi import exchange, http_scope, sending
from testing.packages import minimal_manifest
from testing.registry import free
from testing.registry_fixtures import publish

DEPTH = 3000  # beyond what the C decoder reads (the interpreter's recursion limit)


def _manifest_text(depth: int, inner: str = "", name: str = "deep") -> str:
    manifest = minimal_manifest(name=name)
    manifest["tools"][0]["input"]["properties"]["name"]["default"] = "DEEP"
    return json.dumps(manifest).replace('"DEEP"', "[" * depth + inner + "]" * depth)


def _with_deep_manifest(tmp_path: Path) -> RegistryService:
    """A registry store holding ``@acme/deep``, whose ``default`` nests ``DEPTH`` levels."""
    store = tmp_path / "store"
    publish(store, tmp_path / "work", name="deep", files={"manifest.json": _manifest_text(DEPTH)})
    return open_service(store)


async def _get(app: Any, path: str) -> tuple[int, bytes]:
    """One GET through the real ASGI app, in this process."""
    return await exchange(app, http_scope("GET", path), sending())


def test_a_deep_manifest_is_answered_without_the_pure_python_parser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = _with_deep_manifest(tmp_path)
    try:
        stored = service.deps.meta.version("@acme/deep", "1.0.0")
        assert stored is not None
        full = json_bytes(service.version("acme", "deep", "1.0.0"))  # parsed and written again

        def refuse(*_args: object, **_kwargs: object) -> object:
            raise AssertionError("the pure-Python JSON parser ran for an anonymous read")

        monkeypatch.setattr(json_text, "parse_iterative", refuse)
        status, body = asyncio.run(_get(create_app(service), "/packages/acme/deep/1.0.0"))
    finally:
        service.deps.meta.close()
    assert status == 200, body[:300]
    assert body == full
    assert stored.manifest in body.decode()


def test_an_answer_that_indenting_would_multiply_is_compact(tmp_path: Path) -> None:
    store = tmp_path / "store"
    numbers = ",".join(["0"] * 5000)
    publish(store, tmp_path / "work", name="plain")
    text = _manifest_text(50, numbers, name="wide")  # 5,000 numbers 52 levels down
    publish(store, tmp_path / "work", name="wide", files={"manifest.json": text})
    service = open_service(store)
    try:
        app = create_app(service)
        wide = service.version("acme", "wide", "1.0.0")
        plain = service.version("acme", "plain", "1.0.0")
        answers = [asyncio.run(_get(app, f"/packages/acme/{n}/1.0.0")) for n in ("wide", "plain")]
    finally:
        service.deps.meta.close()
    (wide_status, wide_body), (plain_status, plain_body) = answers
    assert wide_status == plain_status == 200
    compact = json_text.dumps(wide)
    assert len(json_text.dumps(wide, indent=2)) > 2 * len(compact) + json_text.READABLE_SLACK
    assert wide_body == (compact + "\n").encode()
    assert plain_body == (json_text.dumps(plain, indent=2) + "\n").encode()  # as before


def test_a_tool_result_that_indenting_would_multiply_is_compact_and_any_depth_is_written() -> None:
    # The registry's registry_package_info answered a manifest with 1,000,000 numbers 150 levels
    # down in 335 MB (8.8 s of CPU); one nested past the C encoder was an internal error.
    wide: object = list(range(5000))
    for _ in range(50):
        wide = [wide]
    deep = json_text.parse("[" * 3000 + "]" * 3000)
    for output in ({"wide": wide}, {"deep": deep}):
        text = tool_result(ToolOutcome(ok=True, output=output), structured=True)
        assert text["content"][0]["text"] == json_text.dumps(output)
    small = {"a": [1, {"b": "\u202e"}]}
    text = tool_result(ToolOutcome(ok=True, output=small), structured=True)["content"][0]["text"]
    assert text == json.dumps(small, indent=2)  # as before (\\u202e escaped)


def test_registry_package_info_refuses_a_manifest_too_deep_for_the_c_decoder_unparsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It parsed, checked and wrote a million-level manifest in pure Python: 10 s of CPU a call.
    service = _with_deep_manifest(tmp_path)

    def refuse(*_args: object, **_kwargs: object) -> object:
        raise AssertionError("the pure-Python JSON parser ran for registry_package_info")

    monkeypatch.setattr(json_text, "parse_iterative", refuse)
    try:
        backend = RegistryDiscoveryBackend(service.deps)
        with charged_to(free), pytest.raises(RegistryError) as refused:
            backend.call_tool(PACKAGE_INFO, {"package": "@acme/deep"})
    finally:
        service.deps.meta.close()
    assert refused.value.code is ErrorCode.RESULT_TOO_LARGE
    assert "GET /packages/acme/deep/1.0.0" in refused.value.message


def test_registry_package_info_copies_no_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The manifest is parsed for the call and only written out, but its schemas were copied
    # twice in pure Python (Manifest.from_dict, describe_tools): a real server took 4.1 s of
    # CPU per call for a 2 MiB manifest of lists nested 8 deep, 0.83 s without the copies.
    store = tmp_path / "store"
    publish(store, tmp_path / "work", name="plain")
    service = open_service(store)

    def refuse(*_args: object, **_kwargs: object) -> object:
        raise AssertionError("registry_package_info copied a schema")

    monkeypatch.setattr(json_text, "copy", refuse)
    try:
        with charged_to(free):
            outcome = RegistryDiscoveryBackend(service.deps).call_tool(
                PACKAGE_INFO, {"package": "@acme/plain"}
            )
    finally:
        service.deps.meta.close()
    schema = minimal_manifest()["tools"][0]["input"]
    tools = json_text.parse(outcome.output["tools"].text)  # written once (mcp_backend.ManifestView)
    assert tools[0]["inputSchema"] == schema  # main: the AssertionError
