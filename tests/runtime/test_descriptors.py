"""A tool names only file descriptors that are its own (host/fd_guard.mjs).

Node's permission model checks paths, never descriptors. Node's own descriptors (libuv's
wake-up and signal pipes, epoll, eventfd, io_uring) are small numbers beside the tool's: 16
bytes written to one of those pipes made the process dereference them as a pointer (SIGSEGV,
reported TOOL_CRASHED; with a known address, native code). A FileHandle-like object with its
own ``fd`` reached any descriptor through fs/promises. Each is a real package run through the
runtime."""

from __future__ import annotations

from pathlib import Path

import pytest

from splice_build.errors import ErrorCode

pytestmark = pytest.mark.node

WRITES = {"fs": {"read": [], "write": ["out"]}}

# Every descriptor number but stdio and the job channel, written with 16 bytes: the size of
# the message libuv's signal pipe carries (a handle pointer and a signal number).
SPRAY_DESCRIPTORS = """
import fs from 'node:fs';
export default () => {
  const channel = [Number(process.argv[2]), Number(process.argv[3])];
  const codes = { channel };
  for (let fd = 3; fd < 64; fd += 1) {
    if (channel.includes(fd)) continue;
    try {
      fs.writeSync(fd, Buffer.alloc(16, 0x41));
      codes[fd] = 'written';
    } catch (err) {
      codes[fd] = err.code;
    }
  }
  return codes;
};
"""


def test_node_own_descriptors_are_refused(run_tool) -> None:
    result = run_tool(SPRAY_DESCRIPTORS)
    assert result.ok, result.to_json()
    codes = dict(result.output)
    channel = codes.pop("channel")  # their numbers are the parent's, whatever it has open
    assert set(codes) == {str(fd) for fd in range(3, 64) if fd not in channel}
    assert set(codes.values()) == {"ERR_ACCESS_DENIED"}, codes


# Each route a descriptor number or a handle takes into node:fs and fs/promises.
DESCRIPTOR_ROUTES = {
    "writeSync": "fs.writeSync(FD, 'x')",
    "named_export": "writeSync(FD, 'x')",
    "fstatSync": "fs.fstatSync(FD)",
    "readFileSync": "fs.readFileSync(FD)",
    "closeSync": "fs.closeSync(FD)",
    "write_callback": "new Promise((ok, no) => fs.write(FD, 'x', (e) => (e ? no(e) : ok())))",
    "write_stream": (
        "new Promise((ok, no) => { const s = fs.createWriteStream(null, { fd: FD });"
        " s.on('error', no); s.write('x', (e) => (e ? no(e) : ok())); })"
    ),
    "utf8_stream": (
        "new Promise((ok, no) => { const s = new fs.Utf8Stream({ fd: FD });"
        " s.on('error', no); s.write('x'); })"
    ),
    "forged_handle_write_file": (
        "fsp.open(OUT + '/h', 'w').then((h) => fsp.writeFile(Object.create(h, { fd: { value: FD } }), 'x'))"
    ),
    "forged_handle_method": (
        "fsp.open(OUT + '/h', 'w').then((h) => h.write.call(Object.create(h, { fd: { value: FD } }), 'x'))"
    ),
    "handle_own_descriptor": (
        "fsp.open(OUT + '/h', 'w').then((h) => { h[Object.getOwnPropertySymbols(h)"
        ".find((s) => s.description === 'kFd')] = FD; return h.write('x'); })"
    ),
    "proxied_handle": (
        "fsp.open(OUT + '/h', 'w').then((h) => fsp.readFile("
        "new Proxy(h, { get: (t, k) => (k === 'fd' ? FD : Reflect.get(t, k, t)) })))"
    ),
}


@pytest.mark.parametrize("route", sorted(DESCRIPTOR_ROUTES))
def test_every_route_to_a_descriptor_is_guarded(run_tool, route: str) -> None:
    """Descriptor 5 (a libuv descriptor in every sandbox process) by each route: refused."""
    body = (
        "import fs from 'node:fs'; import fsp from 'node:fs/promises';"
        " import { writeSync } from 'node:fs';"
        " export default async (i, ctx) => { const OUT = ctx.paths.project + '/out';"
        " fs.mkdirSync(OUT, { recursive: true }); const FD = 5;"
        f" await {DESCRIPTOR_ROUTES[route]}; return 'reached'; }};"
    )
    result = run_tool(body, permissions=WRITES)
    assert result.error is not None, result.to_json()
    assert result.error.code == ErrorCode.PERMISSION_DENIED, result.to_json()
    assert "file descriptor 5" in result.error.message or "file handle" in result.error.message


def test_a_forged_handle_writes_nothing_to_the_logs(run_tool) -> None:
    """Descriptor 2 is the tool's own stderr: a write through a forged handle would show."""
    result = run_tool(
        "import fsp from 'node:fs/promises'; export default async (i, ctx) => {"
        " const h = await fsp.open(ctx.paths.project + '/out/h', 'w');"
        " const fake = Object.create(h, { fd: { value: 2 } }); const codes = [];"
        " for (const f of [() => fsp.writeFile(fake, 'FORGED\\n'), () => fake.write('FORGED\\n')])"
        "  try { await f(); codes.push('written'); } catch (e) { codes.push(e.code); }"
        " await h.close(); return codes; };",
        permissions=WRITES,
    )
    assert result.ok, result.to_json()
    assert result.output == ["ERR_ACCESS_DENIED", "ERR_ACCESS_DENIED"]
    assert "FORGED" not in result.logs


def test_a_real_handle_names_only_the_descriptor_it_opened(run_tool) -> None:
    """A handle `open` returned kept its descriptor in a writable own property (``kFd``,
    which ``fd`` reads): set to 2, or shadowed by an own ``fd``, the real handle wrote the
    tool's stderr (and so any descriptor of Node's). Both are fixed on every handle now."""
    result = run_tool(
        "import fs from 'node:fs'; import fsp from 'node:fs/promises';"
        " export default async (i, ctx) => { const OUT = ctx.paths.project + '/out';"
        " fs.mkdirSync(OUT, { recursive: true }); const codes = {}; const changes = {"
        "  kFd: (h) => { h[Object.getOwnPropertySymbols(h).find((s) => s.description === 'kFd')] = 2; },"
        "  fd: (h) => Object.defineProperty(h, 'fd', { value: 2 }) };"
        " for (const [name, change] of Object.entries(changes)) {"
        "  const h = await fsp.open(OUT + '/' + name, 'w'); const fd = h.fd;"
        "  try { change(h); await h.write('FORGED\\n'); codes[name] = 'written'; }"
        "  catch (e) { codes[name] = e.code ?? e.name; }"
        "  codes[name + 'Kept'] = h.fd === fd; await h.write(name); await h.close();"
        "  codes[name + 'Closed'] = h.fd; }"
        " return codes; };",
        permissions=WRITES,
    )
    assert result.ok, result.to_json()
    assert result.output == {
        "kFd": "ERR_ACCESS_DENIED",
        "kFdKept": True,
        "kFdClosed": -1,
        "fd": "TypeError",
        "fdKept": True,
        "fdClosed": -1,
    }
    assert "FORGED" not in result.logs


def test_a_tool_uses_its_own_descriptors(run_tool, project: Path) -> None:
    """What a tool opens stays usable by every route, until it closes it."""
    (project / "out").mkdir()
    result = run_tool(
        "import fs from 'node:fs'; import fsp from 'node:fs/promises'; import util from 'node:util';"
        " export default async (i, ctx) => { const OUT = ctx.paths.project + '/out'; const got = {};"
        " const fd = fs.openSync(OUT + '/a', 'w'); fs.writeSync(fd, 'sync'); fs.closeSync(fd);"
        " got.sync = fs.readFileSync(OUT + '/a', 'utf8');"
        " try { fs.readSync(fd, Buffer.alloc(4)); } catch (e) { got.closed = e.code; }"
        " got.callback = await new Promise((ok, no) => fs.open(OUT + '/a', 'r', (e, f) => e ? no(e) :"
        "  fs.read(f, Buffer.alloc(4), 0, 4, 0, (e2, n, b) => fs.close(f, () => ok(b.toString())))));"
        " const w = fs.openSync(OUT + '/s', 'w');"
        " await new Promise((ok) => fs.createWriteStream(null, { fd: w }).end('stream', ok));"
        " got.stream = fs.readFileSync(OUT + '/s', 'utf8');"
        " const h = await fsp.open(OUT + '/p', 'w'); await h.write('handle'); await h.close();"
        " const r = await fsp.open(OUT + '/p'); got.handle = await fsp.readFile(r, 'utf8'); await r.close();"
        " got.stdout = fs.writeSync(1, 'to stdout\\n');"
        " got.stats = fs.statSync(OUT + '/p') instanceof fs.Stats;"
        " const pf = fs.openSync(OUT + '/p', 'r');"
        " const { bytesRead } = await util.promisify(fs.read)(pf, Buffer.alloc(6), 0, 6, 0);"
        " fs.closeSync(pf); got.promisified = [bytesRead, await util.promisify(fs.exists)(OUT + '/p')];"
        " return got; };",
        permissions=WRITES,
    )
    assert result.ok, result.to_json()
    assert result.output == {
        "sync": "sync",
        "closed": "ERR_ACCESS_DENIED",
        "callback": "sync",
        "stream": "stream",
        "handle": "handle",
        "stdout": 10,
        "stats": True,
        "promisified": [6, True],
    }
    assert "to stdout" in result.logs


def test_a_descriptor_is_closed_only_after_its_operations(run_tool, project: Path) -> None:
    """A close waits for the asynchronous operations queued on the descriptor: its number is
    never free (Node's to reuse for a pipe of its own) while one of them has yet to run. A
    read queued just before a closeSync failed EBADF about one time in three: that window is
    where a number reused by Node would have been read or written. Half the reads have an
    argument after their callback, which Node ignores: the callback was taken from the last
    argument, and such a read was not waited for (14 to 23 EBADF in these 200 reads)."""
    (project / "out").mkdir()
    result = run_tool(
        "import fs from 'node:fs'; export default async (i, ctx) => {"
        " const f = ctx.paths.project + '/out/r'; fs.writeFileSync(f, 'abcdef'); const seen = {};"
        " for (let n = 0; n < 200; n += 1) { const fd = fs.openSync(f, 'r');"
        "  const code = await new Promise((ok) => {"
        "   const after = n % 4 < 2 ? [] : ['x'];"
        "   fs.read(fd, Buffer.alloc(6), 0, 6, 0, (e, got) => ok(e ? e.code : got), ...after);"
        "   if (n % 2) fs.closeSync(fd); else fs.close(fd, () => {}); });"
        "  seen[code] = (seen[code] || 0) + 1; }"
        " return seen; };",
        permissions=WRITES,
    )
    assert result.ok, result.to_json()
    assert result.output == {"6": 200}
