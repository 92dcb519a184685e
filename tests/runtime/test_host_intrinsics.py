"""Host code never touches tool-replaceable objects (runtime/host/pristine.mjs).

A tool replaces every replaceable function and accessor of every global constructor, every
prototype and every intrinsic it can reach (iterators, %TypedArray%, generator and stream
prototypes, ``constructor`` and ``Symbol.species`` included), and adds getters and setters
on ``Object.prototype`` and ``Array.prototype`` for every property name the host's source
uses (read from the host files, not listed here). Then it uses fetch (a body, headers,
JSON, a streamed body, a refusal, a failure), a capability, ``ctx.log`` and its result.
Every replacement records a call made directly by host code whose receiver is not an object
the tool made or was given: there must be none, and everything must still work.

Node's module loader runs in the same realm and looks up URL's methods and getters when it
runs; the module guard must hold whatever a tool does to them, and they are frozen
(harden.mjs). A second tool replaces every property of the URL classes in turn and imports
after each (``test_the_url_classes_cannot_steer_the_loader_or_the_guard``).

With reuse, the bytes of later jobs pass through the same process: a tool that enlarges
Node's shared Buffer pool, wraps every byte class and catches every name the host reads
finds neither a job's id nor its own input in anything it got hold of
(``test_no_frame_reaches_the_tool_of_a_reused_process``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from splice_build.runtime import SpliceRuntime
from splice_build.runtime.host_files import host_dir
from splice_build.spec.reuse import ReusePolicy
from testing.hostile_packages import write_package
from testing.netservers import NetServer, serve

pytestmark = pytest.mark.node

TOOL = Path(__file__).with_name("resources") / "poison_tool.mjs"
URL_WALK_TOOL = Path(__file__).with_name("resources") / "url_walk_tool.mjs"
FRAME_CATCHER_TOOL = Path(__file__).with_name("resources") / "frame_catcher_tool.mjs"


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


# Properties the loader or the guard uses: the walk must reach them (it walks every one).
URL_PROPERTIES_USED = {
    "URL.canParse",
    "URL.parse",
    "URL.prototype.href",
    "URL.prototype.protocol",
    "URL.prototype.hostname",
    "URL.prototype.pathname",
    "URL.prototype.search",
    "URL.prototype.hash",
    "URL.prototype.searchParams",
    "URL.prototype.toString",
    "URLSearchParams.prototype.get",
    "URLSearchParams.prototype.toString",
    "URLSearchParams iterator.next",
    "globalThis.URL",
}


@pytest.mark.parametrize("isolation", ["auto", "in-process"])
def test_the_url_classes_cannot_steer_the_loader_or_the_guard(
    tmp_path: Path, isolation: str
) -> None:
    """Each property of URL, URL.prototype, URLSearchParams, its prototype and its iterator,
    replaced in turn by a liar that answers for another module (one the tool wrote into its
    write grant, or a packaged one), to everyone, to the host's code only or to Node's loader
    only: the written module is refused every time, a packaged one loads as it is every
    time. None can be replaced (frozen); the global bindings ``URL`` and ``URLSearchParams``
    can, and change nothing."""
    pkg = write_package(
        tmp_path / "pkgs",
        URL_WALK_TOOL.read_text(encoding="utf-8"),
        permissions={"fs": {"read": [], "write": ["w"]}},
        extra_files={"tools/t2.mjs": 'export default "harmless packaged module";\n'},
        timeout_ms=60000,
    )
    project = tmp_path / "project"
    (project / "w").mkdir(parents=True)
    runtime = SpliceRuntime(project_root=project, env={}, isolation=isolation)
    result = runtime.execute(runtime.load(pkg), "t", {"hostUrl": host_dir().as_uri()})
    assert result.ok, result.to_json()
    walked = {entry["name"]: entry for entry in result.output}
    assert set(walked) >= URL_PROPERTIES_USED
    replaced = {name for name, entry in walked.items() if entry["replaced"]}
    assert replaced == {"globalThis.URL", "globalThis.URLSearchParams"}
    for name, entry in walked.items():
        assert len(entry["seen"]) == 6  # two decoys, three ways of lying
        for seen in entry["seen"]:
            assert seen["outside"] == "ERR_ACCESS_DENIED", (name, seen)
            assert seen["inside"] == "loaded: harmless packaged module", (name, seen)


@pytest.mark.parametrize("isolation", ["auto", "in-process"])
def test_no_frame_reaches_the_tool_of_a_reused_process(tmp_path: Path, isolation: str) -> None:
    """PROTOCOL.md: the host keeps a job's id where the tool cannot read it. Jobs read by the
    blocking reader and by the asynchronous one (after a capability call), results written:
    none of their bytes is in Node's shared pool or in any container the tool's wrappers were
    handed, and no object the host read a name on holds an id."""
    pkg = write_package(
        tmp_path / "pkgs",
        FRAME_CATCHER_TOOL.read_text(encoding="utf-8"),
        permissions={"capabilities": ["web.search"]},
        timeout_ms=60000,
    )
    project = tmp_path / "project"
    project.mkdir()
    runtime = SpliceRuntime(
        project_root=project,
        env={},
        broker=EchoBroker(),
        isolation=isolation,
        reuse=ReusePolicy(),
    )
    try:
        loaded = runtime.load(pkg)
        setup = runtime.execute(loaded, "t", {"names": host_property_names()})
        assert setup.ok, setup.to_json()
        assert setup.output == {"poolBytes": 4 << 20}
        for n, listen in ((2, False), (3, True), (4, False), (5, False)):
            result = runtime.execute(loaded, "t", {"marker": f"marker-{n}-x", "listen": listen})
            assert result.ok, result.to_json()
            assert result.output["found"] == [], (n, result.output)
            assert result.output["control"] is True
    finally:
        runtime.close()


# Its first call replaces Object.keys (which found nothing) and the array iterator (which
# adds an undeclared capability); the next call, in the same process, reads its context.
KEYS_AND_ITERATOR_TOOL = """
let calls = 0;
export default (input, ctx) => {
  calls += 1;
  if (calls === 1) {
    Object.keys = () => [];
    Array.prototype[Symbol.iterator] = function* poisoned() { yield 'web.search'; yield 'vault.read'; };
    return 'poisoned';
  }
  const caps = ctx.permissions.capabilities;
  return { frozen: Object.isFrozen(caps), caps: Array.from({ length: caps.length }, (_, i) => caps[i]) };
};
"""


@pytest.mark.parametrize("isolation", ["auto", "in-process"])
def test_a_reused_process_builds_the_next_context_with_pristine_functions(
    tmp_path: Path, isolation: str
) -> None:
    """host.mjs builds each job's context after the tool's code ran (reuse): its permissions
    are frozen and its declared capabilities copied without `Object.keys` or an iterator."""
    pkg = write_package(
        tmp_path / "pkgs",
        KEYS_AND_ITERATOR_TOOL,
        permissions={"capabilities": ["web.search"]},
    )
    project = tmp_path / "project"
    project.mkdir()
    runtime = SpliceRuntime(
        project_root=project, env={}, broker=EchoBroker(), isolation=isolation, reuse=ReusePolicy()
    )
    try:
        loaded = runtime.load(pkg)
        assert runtime.execute(loaded, "t", {}).output == "poisoned"
        second = runtime.execute(loaded, "t", {})
        assert second.ok, second.to_json()
        assert second.output == {"frozen": True, "caps": ["web.search"]}
    finally:
        runtime.close()
