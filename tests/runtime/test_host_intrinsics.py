"""Host code never touches tool-replaceable objects (runtime/host/pristine.mjs).

A tool replaces every replaceable function and accessor of every global constructor, every
prototype and every intrinsic it can reach (iterators, %TypedArray%, generator and stream
prototypes, ``constructor`` and ``Symbol.species`` included), and adds getters and setters
on ``Object.prototype`` and ``Array.prototype`` for every property name the host's source
uses (read from the host files, not listed here). Then it uses fetch (a body, headers,
JSON, a streamed body, a refusal, a failure), a capability, ``ctx.log`` and its result.
Every replacement records a call made directly by host code whose receiver is not an object
the tool made or was given: there must be none, and everything must still work.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from splice_build.runtime import SpliceRuntime
from splice_build.runtime.host_files import host_dir
from testing.hostile_packages import write_package
from testing.netservers import NetServer, serve

pytestmark = pytest.mark.node

TOOL = Path(__file__).with_name("resources") / "poison_tool.mjs"


class EchoBroker:
    def call(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        return {"status": "LIVE", "args": request["args"]}


def host_property_names() -> list[str]:
    """Every ``.name`` and quoted identifier in the host's modules (what it could read)."""
    names: set[str] = set()
    for source in host_dir().glob("*.mjs"):
        text = source.read_text(encoding="utf-8")
        names.update(re.findall(r"\.([A-Za-z_$][\w$]*)", text))
        names.update(re.findall(r"['\"]([A-Za-z_$][\w$-]*)['\"]", text))
    return sorted(names - {"__proto__"})


@pytest.fixture(scope="module")
def server() -> Iterator[NetServer]:
    with serve() as running:
        yield running


def test_the_name_list_is_taken_from_the_host() -> None:
    names = host_property_names()
    assert {"type", "id", "then", "constructor", "resolve", "done", "value"} <= set(names)
    assert len(names) > 150


@pytest.mark.parametrize("isolation", ["auto", "in-process"])
def test_a_poisoned_realm_reaches_no_host_object(
    tmp_path: Path, server: NetServer, isolation: str
) -> None:
    pkg = write_package(
        tmp_path / "pkgs",
        TOOL.read_text(encoding="utf-8"),
        permissions={"network": ["127.0.0.1"], "capabilities": ["web.search"]},
        timeout_ms=60000,
    )
    project = tmp_path / "project"
    project.mkdir()
    runtime = SpliceRuntime(project_root=project, env={}, broker=EchoBroker(), isolation=isolation)
    result = runtime.execute(
        runtime.load(pkg),
        "t",
        {
            "hostUrl": host_dir().as_uri(),
            "toolUrl": pkg.resolve().as_uri(),
            "names": host_property_names(),
            "indexes": [str(i) for i in range(64)],
            "echo": server.url("/echo"),
            "big": server.url("/big?bytes=3000000"),
            "denied": f"http://127.0.0.2:{server.port}/echo",
            "refused": "http://127.0.0.1:9/",
        },
    )
    assert result.ok, result.to_json()
    assert result.output["records"] == []
    assert result.output["checks"] == {
        "post": [200, "POST", "data", "1"],
        "streamed": 3000000,
        "text": True,
        "headersIter": True,
        "denied": "ERR_ACCESS_DENIED",
        "failed": ["fetch failed", "ECONNREFUSED"],
        "capability": "LIVE",
    }
    assert "hello from the poisoned tool { a: 1 }" in result.logs
