"""File access inside the sandbox (issue #17 item 7, issue #18 item 8).

``fs.realpath*`` outside the grants is denied like every other fs call, and gives no
existence oracle: for random paths inside and outside the grants, existing and missing,
every realpath variant (sync, sync native, callback, callback native, promises; string,
Buffer and URL forms; the module object and the named ESM exports) answers inside a grant
as the kernel does and outside with one and the same refusal.

A refusal that escapes the tool reads in the manifest's terms (``read access to `<path>` is
denied: declare it in manifest `permissions.fs.read```), never Node's command-line hint.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SandboxError
from splice_build.mcp.interface import ToolOutcome
from splice_build.mcp.mapping import tool_result

pytestmark = pytest.mark.node

GRANTS = {"fs": {"read": ["workspace"], "write": ["out"]}}
# A write grant inside a read grant: Node's fs.cp stats every directory from the copy's
# destination up to its source's, which must all be readable.
NESTED_GRANTS = {"fs": {"read": ["workspace"], "write": ["workspace/out"]}}

PROBE = r"""
import fs from 'node:fs';
import { realpath as promisesRealpath } from 'node:fs/promises';
import { realpathSync as namedSync, realpath as namedCallback } from 'node:fs';
const outcome = (e) => [e.code, e.message];
const callback = (f) => new Promise((resolve) => f((e, v) => resolve(e ? outcome(e) : ['ok', String(v)])));
const sync = (f) => { try { return ['ok', String(f())]; } catch (e) { return outcome(e); } };
const promise = (p) => p.then((v) => ['ok', String(v)], outcome);
export default async ({ paths }) => {
  const seen = {};
  for (const p of paths) {
    const forms = { string: p, buffer: Buffer.from(p), url: new URL(`file://${p}`) };
    for (const [form, arg] of Object.entries(forms)) {
      const row = {
        realpathSync: sync(() => fs.realpathSync(arg)),
        'realpathSync.native': sync(() => fs.realpathSync.native(arg)),
        realpath: await callback((done) => fs.realpath(arg, done)),
        'realpath.native': await callback((done) => fs.realpath.native(arg, done)),
        'promises.realpath': await promise(fs.promises.realpath(arg)),
        'fs/promises realpath': await promise(promisesRealpath(arg)),
        'named realpathSync': sync(() => namedSync(arg)),
        'named realpathSync.native': sync(() => namedSync.native(arg)),
        'named realpath': await callback((done) => namedCallback(arg, done)),
      };
      seen[`${form} ${p}`] = row;
    }
  }
  return seen;
};
"""
VARIANTS = 9
DENIED = [
    "ERR_ACCESS_DENIED",
    "Access to this API has been restricted. Use --allow-fs-read to manage permissions.",
]


def _tree(project: Path, rng: random.Random) -> tuple[list[Path], list[Path], list[Path]]:
    """Grants and their surroundings with random names: (inside existing, inside missing,
    outside), the outside ones half existing, half missing."""
    regions = {
        "workspace": True,
        "out": True,
        "private": False,
        "workspace-sibling": False,
    }
    inside, missing, outside = [], [], []
    for region, granted in regions.items():
        base = project / region
        base.mkdir(exist_ok=True)
        for _ in range(3):
            name = "".join(rng.choice("abcdefgh-_.0") for _ in range(rng.randint(1, 9))).strip(".")
            name = name or "x"
            present = base / f"f{name}"
            present.write_text("x", encoding="utf-8")
            absent = base / f"m{name}"
            nested = base / f"d{name}" / "deeper"
            nested.parent.mkdir(exist_ok=True)
            nested.write_text("x", encoding="utf-8")
            if granted:
                inside += [present, nested, nested.parent]
                missing += [absent, nested.parent / "nope"]
            else:
                outside += [present, absent, nested, nested.parent, nested.parent / "nope"]
    outside += [
        project,
        project / "splice.json",
        project / "absent.json",
        project / "workspace" / ".." / "splice.json",
        project / "workspace" / ".." / "absent.json",
        Path("/etc/passwd"),
        Path("/etc/splice-absent"),
        Path("/"),
        Path("/nonexistent/deeper/path"),
    ]
    return inside, missing, outside


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_realpath_outside_the_grants_is_refused_alike_for_existing_and_missing(
    run_tool, project: Path, seed: int
) -> None:
    inside, missing, outside = _tree(project, random.Random(seed))
    paths = [str(p) for p in inside + missing + outside]
    result = run_tool(PROBE, {"paths": paths}, permissions=GRANTS)
    assert result.ok, result.to_json()
    seen = result.output
    for form in ("string", "buffer", "url"):
        for path in inside:
            row = seen[f"{form} {path}"]
            assert len(row) == VARIANTS
            assert set(map(tuple, row.values())) == {("ok", os.path.realpath(path))}, (path, row)
        for path in missing:
            row = seen[f"{form} {path}"]
            assert {value[0] for value in row.values()} == {"ENOENT"}, (path, row)
        for path in outside:
            row = seen[f"{form} {path}"]
            # One refusal for every variant, existing or not: nothing tells them apart.
            assert set(map(tuple, row.values())) == {tuple(DENIED)}, (path, row)


FS_REFUSALS = [
    (
        "write_outside",
        "import fs from 'node:fs'; export default (i, ctx) =>"
        " fs.writeFileSync(`${ctx.paths.project}/splice.json`, '{}');",
        "write access to `<project>/splice.json` is denied: declare it in manifest "
        "`permissions.fs.write`",
    ),
    (
        "read_outside",
        "import fs from 'node:fs'; export default (i, ctx) =>"
        " fs.readFileSync(`${ctx.paths.project}/private.txt`, 'utf8');",
        "read access to `<project>/private.txt` is denied: declare it in manifest "
        "`permissions.fs.read`",
    ),
    (
        "write_into_read_grant",
        "import fs from 'node:fs/promises'; export default async (i, ctx) =>"
        " fs.writeFile(`${ctx.paths.project}/workspace/new.txt`, 'x');",
        "write access to `<project>/workspace/new.txt` is denied: declare it in manifest "
        "`permissions.fs.write`",
    ),
    (
        "realpath_outside",
        "import fs from 'node:fs'; export default () => fs.realpathSync('/etc/passwd');",
        "read access to `/etc/passwd` is denied: declare it in manifest `permissions.fs.read`",
    ),
]


@pytest.mark.parametrize(
    ("body", "message"), [(b, m) for _, b, m in FS_REFUSALS], ids=[n for n, _, _ in FS_REFUSALS]
)
def test_a_file_refusal_speaks_of_the_manifest(
    run_tool, project: Path, body: str, message: str
) -> None:
    (project / "private.txt").write_text("secret", encoding="utf-8")
    (project / "workspace").mkdir()
    result = run_tool(body, permissions={"fs": {"read": ["workspace"]}})
    assert result.error is not None, result.to_json()
    assert result.to_json()["error"] == {"code": ErrorCode.PERMISSION_DENIED, "message": message}
    assert "--allow-fs" not in json.dumps(result.to_json())
    assert (project / "splice.json").read_text(encoding="utf-8") == '{"packages": {}}\n'


def test_a_refusal_at_load_time_speaks_of_the_manifest_too(run_tool, project: Path) -> None:
    """A top-level read, while the module is being evaluated."""
    (project / "private.txt").write_text("secret", encoding="utf-8")
    body = (
        "import fs from 'node:fs';"
        f"fs.readFileSync({json.dumps(str(project / 'private.txt'))});"
        "export default () => 1;"
    )
    result = run_tool(body)
    assert result.error is not None and result.error.code == ErrorCode.PERMISSION_DENIED
    assert result.error.message == (
        "Could not load tool: read access to `<project>/private.txt` is denied: declare it in "
        "manifest `permissions.fs.read`"
    )


OTHER_CALLS = r"""
import fs from 'node:fs';
const outcome = (f) => { try { f(); return 'ok'; } catch (e) { return e.code; } };
export default async ({ paths, inside }) => {
  const seen = {};
  for (const p of paths) {
    seen[p] = {
      existsSync: outcome(() => fs.existsSync(p)),
      statSync: outcome(() => fs.statSync(p)),
      lstatSync: outcome(() => fs.lstatSync(p)),
      statfsSync: outcome(() => fs.statfsSync(p)),
      accessSync: outcome(() => fs.accessSync(p)),
      readlinkSync: outcome(() => fs.readlinkSync(p)),
      readdirSync: outcome(() => fs.readdirSync(p)),
      opendirSync: outcome(() => fs.opendirSync(p)),
      openSync: outcome(() => fs.openSync(p, 'r')),
      openAsBlob: await (async () => fs.openAsBlob(p))().then(() => 'ok', (e) => e.code),
      watchFile: outcome(() => fs.watchFile(p, () => {})),
      watch: outcome(() => fs.watch(p).close()),
      cpSync: outcome(() => fs.cpSync(p, `${inside}/copy`)),
      copyFileSync: outcome(() => fs.copyFileSync(p, `${inside}/copy`)),
      chmodSync: outcome(() => fs.chmodSync(p, 0o600)),
      lutimesSync: outcome(() => fs.lutimesSync(p, 1, 1)),
      mkdtempSync: outcome(() => fs.mkdtempSync(`${p}-`)),
      rmSync: outcome(() => fs.rmSync(`${p}-absent`, { force: true })),
      renameSync: outcome(() => fs.renameSync(`${inside}/a.txt`, p)),
      globSync: (() => { try { return fs.globSync(`${p}*`).length; } catch (e) { return e.code; } })(),
    };
  }
  return seen;
};
"""


def test_no_other_fs_call_tells_an_existing_path_outside_from_a_missing_one(
    run_tool, project: Path
) -> None:
    """The same answer for an existing and a missing path outside the grants, call by call."""
    (project / "out").mkdir()
    (project / "out" / "a.txt").write_text("x", encoding="utf-8")
    (project / "private").mkdir()
    (project / "private" / "secret.txt").write_text("s", encoding="utf-8")
    pairs = [
        (project / "private" / "secret.txt", project / "private" / "absent.txt"),
        (project / "private", project / "absent-dir"),
        (Path("/etc/passwd"), Path("/etc/splice-absent")),
    ]
    paths = [str(p) for pair in pairs for p in pair]
    result = run_tool(
        OTHER_CALLS,
        {"paths": paths, "inside": str(project / "out")},
        permissions={"fs": {"write": ["out"]}},
    )
    assert result.ok, result.to_json()
    for existing, missing in pairs:
        answer = result.output[str(existing)]
        assert answer == result.output[str(missing)], (existing, answer)
        assert answer.pop("globSync") == 0  # a glob lists only what it may read
        assert set(answer.values()) == {"ERR_ACCESS_DENIED"}, (existing, answer)
    assert (project / "out" / "a.txt").exists()
    assert (project / "private" / "secret.txt").read_text(encoding="utf-8") == "s"


@pytest.mark.parametrize("grant", ["notes.txt", "notes.txt/out", "a" * 256])
def test_a_write_grant_that_cannot_be_a_directory_is_a_coded_error(
    project: Path, tmp_path: Path, grant: str
) -> None:
    """A file where the grant's directory must be (or on the way to it), or a name longer
    than the file system allows: NOT_WRITABLE before any process, never an exception."""
    from splice_build.runtime import SpliceRuntime
    from testing.hostile_packages import write_package

    (project / "notes.txt").write_text("kept", encoding="utf-8")
    permissions = {"fs": {"read": [], "write": [grant]}}
    pkg_dir = write_package(tmp_path / "pkgs", "export default () => 1;", permissions=permissions)
    with SpliceRuntime(project_root=project, env={}) as runtime:
        result = runtime.execute(runtime.load(pkg_dir), "t", {})
    assert result.error is not None and result.error.code == ErrorCode.NOT_WRITABLE
    assert "<project>/" in result.error.message and str(project) not in result.error.message
    assert (project / "notes.txt").read_text(encoding="utf-8") == "kept"
    # What to do reaches every surface: the result, its JSON and an MCP client's text.
    hint = "a write grant is a directory: move what is there, or make it writable"
    assert result.error.hint == hint and result.to_json()["error"]["hint"] == hint
    answer = tool_result(ToolOutcome.from_result_json(result.to_json()), structured=True)
    assert answer["content"][0]["text"].endswith(f"; nothing was run\nhint: {hint}")


WILDCARD_PROBE = """
import fs from 'node:fs';
export default (i) => {
  const o = {};
  try { o.read = fs.readFileSync(i.other + '/f', 'utf8'); } catch (e) { o.read = e.code; }
  try { fs.writeFileSync(i.other + '/owned', 'x'); o.write = 'written'; } catch (e) { o.write = e.code; }
  return o;
};
"""


@pytest.mark.parametrize("isolation", ["in-process", "auto"])
def test_a_project_path_with_a_wildcard_is_refused(tmp_path: Path, isolation: str) -> None:
    """Node reads "*" in --allow-fs-write=/…/p*/ws as a wildcard: the grant ws of a project
    at p* would reach pother/deep/ws, another project's files."""
    from splice_build.runtime import SpliceRuntime
    from testing.hostile_packages import write_package

    project = tmp_path / "p*"
    project.mkdir()
    (project / "splice.json").write_text('{"packages": {}}\n', encoding="utf-8")
    other = tmp_path / "pother" / "deep" / "ws"
    other.mkdir(parents=True)
    (other / "f").write_text("another project's file", encoding="utf-8")
    permissions = {"fs": {"read": [], "write": ["ws"]}}
    pkg_dir = write_package(tmp_path / "pkgs", WILDCARD_PROBE, permissions=permissions)
    with SpliceRuntime(project_root=project, env={}, isolation=isolation) as runtime:
        result = runtime.execute(runtime.load(pkg_dir), "t", {"other": str(other)})
    assert result.error is not None, result.to_json()
    assert result.error.code == ErrorCode.PERMISSIONS_NOT_GRANTED
    assert sorted(p.name for p in other.iterdir()) == ["f"]


KERNEL_PROBE = """
import fs from 'node:fs';
export default (i, ctx) => {
  const out = ctx.paths.project + '/out';
  const fd = fs.openSync(out + '/mem', 'r+');
  return { mem: fd, root: fs.readdirSync(out + '/root').length };
};
"""


def test_a_grant_through_a_link_into_the_kernels_file_systems_is_refused(
    run_tool, project: Path
) -> None:
    """A checkout's ``out -> /proc/self`` with ``fs.write: ["out"]``: Node checks only the path
    string, so without the file view the tool opened ``out/mem`` for writing (native code past
    every in-process guard) and listed ``out/root`` (the host's whole file system); with it,
    ``out/fd/N`` still reopened the host's own descriptors by path. Every link into /proc,
    /sys or /dev is refused before any process starts."""
    targets = {"out": "/proc/self", "fd": "/dev/fd", "shm": "/dev/shm", "sys": "/sys/kernel"}
    for name, target in targets.items():
        os.symlink(target, project / name)
    for name, target in targets.items():
        try:  # with a warm pool, load's prewarm already refuses
            error = run_tool(KERNEL_PROBE, permissions={"fs": {"read": [], "write": [name]}}).error
        except SandboxError as exc:
            error = exc
        assert error is not None, target
        assert error.code == ErrorCode.PERMISSIONS_NOT_GRANTED, (target, error)
        kernel = "/proc" if target in {"/proc/self", "/dev/fd"} else target[:4]
        problem = f'permissions.fs.write: "{name}" is inside the kernel\'s {kernel}'
        assert list(error.details) == [problem]


# Every asynchronous recursive removal of a directory the tool may read but not write; Node
# throws each refusal uncaught from inside its own lstat callback (fs_gaps.mjs).
RECURSIVE_REMOVALS = r"""
import fs from 'node:fs';
import { rm } from 'node:fs/promises';
const outcome = (e) => (e ? [e.code, e.permission, e.resource === dir] : ['removed']);
let dir;
export default async (input, ctx) => {
  dir = ctx.paths.project + '/workspace';
  const opts = { recursive: true };
  const seen = [];
  seen.push(await new Promise((r) => fs.rm(dir, opts, (e) => r(outcome(e)))));
  seen.push(await new Promise((r) => fs.rmdir(new URL('file://' + dir), opts, (e) => r(outcome(e)))));
  seen.push(await fs.promises.rmdir(dir, opts).then(() => outcome(), outcome));
  seen.push(await rm(dir, opts).then(() => outcome(), outcome));
  seen.push(await rm(dir + '/missing', opts).then(() => outcome(), (e) => [e.code]));
  // A path given as bytes (it was not looked at: Node threw uncaught again).
  seen.push(await new Promise((r) => fs.rm(Buffer.from(dir), opts, (e) => r(outcome(e)))));
  seen.push(await rm(Buffer.from(dir), opts).then(() => outcome(), outcome));
  // Node read the path and options again, and threw uncaught when they answered otherwise: an
  // object Node takes for a URL, a URL whose own pathname names the directory to Node only,
  // `recursive` false to the host and true to Node; bytes that are not UTF-8 name no path.
  const code = (e) => [e.code];
  const duck = { href: 'file://' + dir, protocol: 'file:', hostname: '', pathname: dir };
  seen.push(await new Promise((r) => fs.rm(duck, opts, (e) => r(code(e)))));
  const url = new URL('file://' + dir);
  let reads = 0;
  const sub = ctx.paths.project + '/out/sub';
  Object.defineProperty(url, 'pathname', { get: () => (reads++ === 0 ? sub : dir) });
  seen.push(await rm(url, opts).then(() => outcome(), outcome));
  let asked = 0;
  const late = { get recursive() { asked += 1; return asked > 1; } };
  seen.push(await new Promise((r) => fs.rm(dir, late, (e) => r(code(e)))));
  seen.push(await rm(Buffer.from([...Buffer.from(dir + '/'), 0xff]), opts).then(outcome, code));
  // Node's callback is the third argument, whatever follows it.
  seen.push(await new Promise((r) => fs.rm(dir, opts, (e) => r(outcome(e)), 'x')));
  return { seen, kept: fs.readdirSync(dir), sub: fs.existsSync(sub) };
};
"""


def test_a_refused_recursive_removal_reaches_the_tool(run_tool, project: Path) -> None:
    """The tool catches the refusal (before: an uncaught ERR_ACCESS_DENIED ended the call
    whatever it caught) and nothing is removed."""
    (project / "workspace").mkdir()
    (project / "workspace" / "keep.txt").write_text("kept", encoding="utf-8")
    (project / "out" / "sub").mkdir(parents=True)
    result = run_tool(RECURSIVE_REMOVALS, permissions=GRANTS)
    assert result.ok, result.to_json()
    refused = ["ERR_ACCESS_DENIED", "FileSystemWrite", True]
    # A missing path is refused alike (Node answered ENOENT for it, and threw for the others).
    # The URL removes what the host read it as; `recursive` read false is no recursive removal.
    read_once = [["ERR_ACCESS_DENIED"], ["removed"], ["ERR_FS_EISDIR"], ["ERR_ACCESS_DENIED"]]
    assert result.output == {
        "seen": [refused] * 4 + [["ERR_ACCESS_DENIED"]] + [refused] * 2 + read_once + [refused],
        "kept": ["keep.txt"],
        "sub": False,
    }


# Copies of a read grant holding a link to the project's root into a write grant, by every
# copy function; then a write through where the link would be.
COPIES_OF_A_LINK = r"""
import fs from 'node:fs';
import { cpSync } from 'node:fs';
const outcome = (f) => { try { f(); return 'copied'; } catch (e) { return e.code; } };
export default async (input, ctx) => {
  const data = ctx.paths.project + '/workspace';
  const out = ctx.paths.project + '/out';
  const seen = [
    outcome(() => fs.cpSync(data, out + '/a', { recursive: true })),
    outcome(() => cpSync(data, out + '/b', { recursive: true, filter: () => true })),
    await new Promise((r) => fs.cp(data, out + '/c', { recursive: true }, (e) => r(e ? e.code : 'copied'))),
    await fs.promises.cp(data, out + '/d', { recursive: true }).then(() => 'copied', (e) => e.code),
    outcome(() => fs.cpSync(data + '/keep.txt', out + '/keep.txt')),
    // Node calls a filter as a method of its options: clearing their filter brought back
    // the C++ copy for the directories below.
    outcome(() => cpSync(data, out + '/e', { recursive: true, filter() {
      try { this.filter = undefined; } catch {}
      return true;
    } })),
  ];
  const links = ['a', 'b', 'c', 'd', 'e'].filter((d) => fs.existsSync(out + '/' + d + '/sub/up'));
  const wrote = outcome(() => fs.writeFileSync(out + '/a/sub/up/splice.json', '{"packages": {"x": "1"}}'));
  return { seen, links, wrote };
};
"""


def test_a_copy_makes_no_link_in_a_write_grant(run_tool, project: Path) -> None:
    """fs.cpSync made the links of a directory without the check of fs.symlink (Node's C++
    copy): through `out/a/sub/up` a tool rewrote splice.json (in-process; EROFS in the file
    view), and so through `out/e/sub/up` once the host gave every cpSync a filter, with a
    filter that cleared Node's options' own. Every copy refuses the link now, as fs.symlink
    does; files still copy."""
    (project / "workspace" / "sub").mkdir(parents=True)
    (project / "workspace" / "keep.txt").write_text("kept", encoding="utf-8")
    os.symlink("../..", project / "workspace" / "sub" / "up")
    (project / "out").mkdir()
    before = (project / "splice.json").read_text(encoding="utf-8")
    result = run_tool(COPIES_OF_A_LINK, permissions=GRANTS)
    assert result.ok, result.to_json()
    assert result.output == {
        "seen": ["ERR_ACCESS_DENIED"] * 4 + ["copied", "ERR_ACCESS_DENIED"],
        "links": [],
        "wrote": "ENOENT",
    }
    assert (project / "splice.json").read_text(encoding="utf-8") == before


# Every way a tool could open a file of its write grant to other users, and what stays
# allowed (modes and masks that keep others' write off).
OPENING_MODES = r"""
import fs from 'node:fs';
import { chmod } from 'node:fs/promises';
import { umask } from 'node:process';
const sync = (f) => { try { f(); return 'done'; } catch (e) { return e.code; } };
export default async (input, ctx) => {
  const out = ctx.paths.project + '/out';
  fs.mkdirSync(out + '/d');
  fs.writeFileSync(out + '/f', 'x');
  const fd = fs.openSync(out + '/f', 'r');
  const handle = await fs.promises.open(out + '/f', 'r');
  const refused = [
    sync(() => fs.chmodSync(out + '/d', 0o777)),
    sync(() => fs.chmodSync(out + '/d', '777')),
    sync(() => fs.fchmodSync(fd, 0o666)),
    await new Promise((r) => fs.chmod(out + '/d', 0o757, (e) => r(e ? e.code : 'done'))),
    await chmod(out + '/f', 0o602).then(() => 'done', (e) => e.code),
    await handle.chmod(0o666).then(() => 'done', (e) => e.code),
    sync(() => process.umask(0)),
    sync(() => umask('0')),
    // Node reads an octal string of any length.
    sync(() => fs.chmodSync(out + '/d', '0000000000000777')),
    sync(() => umask('0000000000000')),
    // Set-ID bits (the OS layer's seccomp filter answers EPERM).
    sync(() => fs.chmodSync(out + '/f', 0o4755)),
    sync(() => fs.chmodSync(out + '/d', 0o2700)),
    sync(() => fs.writeFileSync(out + '/g', 'x', { mode: 0o4755 })),
    await fs.promises.writeFile(out + '/h', 'x', { mode: 0o2755 }).then(() => 'done', (e) => e.code),
    await new Promise((r) => fs.open(out + '/i', 'w', 0o4700, (e) => r(e ? e.code : 'done'))),
    // Another owner (as root, uid 65534 got a directory to plant a link in).
    sync(() => fs.chownSync(out + '/d', process.geteuid() + 1, -1)),
    await fs.promises.chown(out + '/f', -1, process.getegid() + 1).then(() => 'done', (e) => e.code),
  ];
  const allowed = [
    sync(() => fs.chmodSync(out + '/d', 0o700)),
    sync(() => fs.chmodSync(out + '/f', '644')),
    sync(() => process.umask(0o077)),
    sync(() => fs.chownSync(out + '/d', process.geteuid(), -1)),
  ];
  await handle.close();
  fs.mkdirSync(out + '/e', 0o777);
  return { refused, allowed };
};
"""


def test_a_tool_cannot_open_its_files_to_other_users(run_tool, project: Path) -> None:
    """chmod 0777 of a directory in the write grant let another user plant a link there, and
    the tool's next call wrote through it to a file of the user outside every grant
    (isolation in-process, uid 65534 as the other user). Modes and umasks that would give
    others write are refused (file_modes.mjs), and so are the set-ID bits, in a chmod or a new
    file's mode, as the OS layer's seccomp filter refuses them (in-process, a program the
    tool wrote and made 04755 ran as root for uid 65534), and a chown to another user or
    group. Nothing in the grant is open to them."""
    (project / "out").mkdir()
    result = run_tool(OPENING_MODES, permissions=GRANTS)
    assert result.ok, result.to_json()
    assert result.output == {"refused": ["ERR_ACCESS_DENIED"] * 17, "allowed": ["done"] * 4}
    modes = {p.name: p.stat().st_mode & 0o7777 for p in (project / "out").iterdir()}
    assert modes == {"d": 0o700, "e": 0o700, "f": 0o644}


# A copy made before the tool reached fs/promises (node:fs from process.getBuiltinModule
# reads no `fs.promises`, where an import of it does).
EARLY_COPY = r"""
export default async (input, ctx) => {
  const fs = process.getBuiltinModule('node:fs');
  const data = ctx.paths.project + '/workspace';
  const copy = (to) => new Promise((r) => fs.cp(data + '/open', to, { recursive: true }, r));
  const first = await copy(data + '/out/c');
  const later = await fs.promises.cp(data + '/open', data + '/out/d', { recursive: true })
    .then(() => null, (e) => e);
  return [first, later].map((e) => (e ? e.code : 'copied'));
};
"""


def test_a_first_copy_carries_no_open_mode(run_tool, project: Path) -> None:
    """Node's copies take fs/promises' chmod when they first load: a tool whose first copy
    came before it reached fs/promises had Node's own chmod carry a 0777 directory of its
    read grant over, for that copy and every later one (out/c and out/d 0777). Refused now,
    as every chmod that opens a directory to others is."""
    (project / "workspace" / "open").mkdir(parents=True)
    (project / "workspace" / "open").chmod(0o777)
    result = run_tool(EARLY_COPY, permissions=NESTED_GRANTS)
    assert result.ok, result.to_json()
    assert result.output == ["ERR_ACCESS_DENIED"] * 2
    copies = project / "workspace" / "out"
    assert {p.name: p.stat().st_mode & 0o022 for p in copies.iterdir()} == {"c": 0, "d": 0}
