"""Adversarial tools against the network guard: custom dispatchers, undici through any
global, ``new Request`` tricks, fetch through globalThis lookups, and prototype pollution
aimed at the guard's own checks and at node:http's options (issue #4)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode
from splice_build.runtime import SpliceRuntime, ToolResult
from testing.hostile_packages import write_package
from testing.netservers import NetServer, serve, unix_listener

pytestmark = pytest.mark.node


@pytest.fixture(scope="module")
def server() -> Iterator[NetServer]:
    with serve() as running:
        yield running


@pytest.fixture
def tool(tmp_path: Path) -> Callable[..., ToolResult]:
    project = tmp_path / "project"
    project.mkdir()
    counter = iter(range(1000))

    def run(body: str, network: list[str], resolver: dict | None = None) -> ToolResult:
        pkg = write_package(
            tmp_path / "pkgs", body, name=f"a{next(counter)}", permissions={"network": network}
        )
        runtime = SpliceRuntime(project_root=project, env={}, _unsafe_test_resolver=resolver)
        return runtime.execute(runtime.load(pkg), "t", {})

    return run


def _forbidden(server: NetServer) -> str:
    return f"http://127.0.0.2:{server.port}/echo"


def test_fetch_with_a_custom_dispatcher(tool, server: NetServer) -> None:
    result = tool(
        "export default () => fetch('"
        + server.url()
        + "', { dispatcher: { dispatch() { return true; } } });",
        ["127.0.0.1"],
    )
    assert result.error is not None and result.error.code == ErrorCode.PERMISSION_DENIED
    assert "dispatcher" in result.error.message


def test_undici_is_not_reachable_through_any_global(tool, server: NetServer) -> None:
    """Every own property and symbol of globalThis (and the values' own members): anything
    with a ``dispatch`` or ``request`` function refuses; the dispatcher slot cannot change."""
    before = len(server.seen)
    body = (
        "export default async () => { new Response('x'); new Headers(); new Request('http://x.test/');"
        " const origin = 'http://127.0.0.1:" + str(server.port) + "'; const results = [];"
        " const seen = new Set(); const visit = (v) => { if (!v || seen.has(v)) return; seen.add(v);"
        "  for (const m of ['dispatch', 'request', 'connect', 'stream', 'pipeline']) {"
        "   let fn; try { fn = v[m]; } catch { continue; } if (typeof fn !== 'function') continue;"
        "   try { const r = fn.call(v, { origin, path: '/echo', method: 'GET' }, {});"
        "     results.push(m + ':returned'); if (r && r.catch) r.catch(() => {}); }"
        "   catch (e) { results.push(m + ':' + (e.code === 'ERR_ACCESS_DENIED' ? 'denied' : 'threw')); } } };"
        " for (const key of Reflect.ownKeys(globalThis)) { let v; try { v = globalThis[key]; } catch { continue; }"
        "  if (v && (typeof v === 'object' || typeof v === 'function')) { visit(v);"
        "   for (const k2 of Reflect.ownKeys(v)) { try { visit(v[k2]); } catch {} } } }"
        " const slot = Symbol.for('undici.globalDispatcher.1'); let replaced = 'no';"
        " try { globalThis[slot] = { dispatch() { return true; } }; replaced = 'assigned'; } catch { }"
        " try { Object.defineProperty(globalThis, slot, { value: {} }); replaced = 'redefined'; } catch { }"
        " await new Promise((r) => setTimeout(r, 200));"
        " return { dispatch: results.filter((r) => r.startsWith('dispatch')), replaced,"
        "  ws: typeof WebSocket, es: typeof EventSource }; };"
    )
    result = tool(body, ["*"])
    assert result.ok, result.to_json()
    assert result.output["dispatch"] == ["dispatch:denied"]
    assert result.output["replaced"] == "no"
    assert result.output["ws"] == "undefined" and result.output["es"] == "undefined"
    assert len(server.seen) == before


def test_request_whose_url_changes_between_reads(tool, server: NetServer) -> None:
    """The URL is read once: a getter that answers 'forbidden' first is refused, and one that
    answers 'allowed' first is never asked again (the forbidden target sees nothing)."""
    for first, expect in (("bad", "denied"), ("good", "good")):
        result = tool(
            "class Tricky extends Request { constructor(u) { super(u); this.n = 0; }"
            f" get url() {{ this.n += 1; const bad = '{_forbidden(server)}', good = '{server.url('/echo?good')}';"
            f" return (this.n === 1) === ('{first}' === 'bad') ? bad : good; }} }}"
            f" export default async () => {{ const r = new Tricky('{server.url()}');"
            " try { const res = await fetch(r); return [(await res.json()).path, r.n]; }"
            " catch (e) { return [e.code === 'ERR_ACCESS_DENIED' ? 'denied' : e.message, r.n]; } };",
            ["127.0.0.1", "*"],
        )
        assert result.output == [("/echo?good" if expect == "good" else "denied"), 1]


def test_request_tricks_are_checked(tool, server: NetServer) -> None:
    redirect_to_metadata = server.url("/redirect?to=http://169.254.169.254/")
    result = tool(
        "export default async () => { const out = [];"
        " const attempt = async (f) => { try { await f(); out.push('reached'); }"
        "  catch (e) { out.push(e.code === 'ERR_ACCESS_DENIED' ? 'denied' : 'error'); } };"
        f" await attempt(() => fetch(new Request('{_forbidden(server)}')));"
        f" await attempt(() => fetch(new Request('{_forbidden(server)}', {{ dispatcher: {{}} }})));"
        f" await attempt(() => fetch(new Request('{redirect_to_metadata}')));"
        f" await attempt(() => fetch(new Request('{server.url()}'), {{ dispatcher: {{}} }}));"
        f" await attempt(() => fetch({{ url: '{server.url()}', toString() {{ return '{_forbidden(server)}'; }} }}));"
        f" await attempt(() => fetch(Object.assign(new URL('{server.url()}'), {{}}), {{ method: 'CONNECT' }}));"
        " return out; };",
        ["127.0.0.1", "*"],
    )
    assert result.output == ["denied", "denied", "denied", "denied", "denied", "error"]


def test_fetch_through_globalthis_lookups_is_the_guard(tool, server: NetServer) -> None:
    result = tool(
        "export default async () => { const g = globalThis; const ways = ["
        " g.fetch, g['fe' + 'tch'], Reflect.get(g, 'fetch'), Object.getOwnPropertyDescriptor(g, 'fetch').value,"
        " (0, g.fetch), Object.values(Object.getOwnPropertyDescriptors(g)).map((d) => d.value)"
        "   .find((v) => typeof v === 'function' && v.name === 'fetch'),"
        " g.constructor?.prototype?.fetch ?? g.fetch ];"
        " const same = ways.every((w) => w === fetch); const out = [];"
        " for (const w of ways) { try { await Function.prototype.call.call(w, null,"
        f" '{_forbidden(server)}'); out.push('reached'); }} catch (e) {{ out.push(e.code); }} }}"
        " return { same, out: [...new Set(out)] }; };",
        ["127.0.0.1", "*"],
    )
    assert result.output == {"same": True, "out": ["ERR_ACCESS_DENIED"]}


@pytest.mark.parametrize(
    "pollution",
    [
        "Object.defineProperty(URL.prototype, 'hostname', { get() { return '127.0.0.1'; } });"
        " Object.defineProperty(URL.prototype, 'href', { get() { return 'http://127.0.0.1/'; } });",
        "Array.prototype.includes = () => true; Array.prototype.some = () => true;"
        " String.prototype.endsWith = () => true; String.prototype.startsWith = () => true;"
        " String.prototype.slice = function () { return '127.0.0.1'; };",
        "Array.prototype[Symbol.iterator] = function* () { yield '127.0.0.2'; };"
        " Object.defineProperty(Array.prototype, '0', { get() { return '*'; }, set() {} });",
        "globalThis.URL = class { constructor() { this.hostname = '127.0.0.1'; this.protocol = 'http:'; } };",
    ],
    ids=["url-getters", "string-array-methods", "array-iterator-and-index", "url-global"],
)
def test_polluted_prototypes_do_not_change_the_check(
    tool, server: NetServer, pollution: str
) -> None:
    before = len(server.seen)
    # (URL.prototype is frozen before the tool loads, harden.mjs: redefining its getters throws)
    result = tool(
        f"export default async () => {{ try {{ {pollution} }} catch {{}}"
        f" return fetch('{_forbidden(server)}'); }};",
        ["127.0.0.1"],
    )
    assert result.error is not None and result.error.code == ErrorCode.PERMISSION_DENIED
    assert len(server.seen) == before


def test_object_prototype_socket_options_are_ignored(tool, server: NetServer) -> None:
    """socketPath / createConnection / lookup on Object.prototype would steer node:http's
    internals; the guard's options own every one of them."""
    sock = Path("/tmp") / f"splice-net-{server.port}.sock"
    sock.unlink(missing_ok=True)
    before = len(server.seen)
    with unix_listener(sock) as received:
        result = tool(
            "export default async () => {"
            f" Object.prototype.socketPath = '{sock}';"
            " Object.prototype.createConnection = () => { throw new Error('hijacked'); };"
            # (node's EventEmitter also finds this function as a 'lookup' listener: it must
            # not throw there; it is never used to resolve the target)
            " Object.prototype.lookup = (h, o, cb) => typeof cb === 'function'"
            " && cb(null, [{ address: '127.0.0.1', family: 4 }]);"
            f" const r = await fetch('{server.url('/echo?polluted')}'); const path = (await r.json()).path;"
            f" let rebound = 'none'; try {{ await fetch('http://public.test:{server.port}/echo',"
            " { signal: AbortSignal.timeout(1500) }); rebound = 'reached'; }"
            " catch (e) { rebound = e.code === 'ERR_ACCESS_DENIED' ? 'denied' : 'failed'; }"
            " return { path, rebound }; };",
            ["127.0.0.1", "*"],
            resolver={},  # the guard's own lookup finds nothing: only a polluted one could connect
        )
    sock.unlink(missing_ok=True)
    assert result.output == {"path": "/echo?polluted", "rebound": "failed"}, result.to_json()
    assert received == []
    assert [s.path for s in server.seen[before:]] == ["/echo?polluted"]
