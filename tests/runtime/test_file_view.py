"""The file view (issue #17, docs/security.md "The OS layer"): a tool's root holds only Node,
the host, its package, its grants, four devices and a private /proc, so a symbolic link (or a
directory swapped for one mid-call) that points outside the grants leads nowhere; and, in
every layer, no core file and a working directory that is not the package directory."""

from __future__ import annotations

import contextlib
import errno
import os
import pwd
import resource
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from splice_build.errors import ErrorCode
from splice_build.runtime import SpliceRuntime, ToolResult
from splice_build.runtime.host_files import host_dir
from splice_build.runtime.isolation import fileview, rlimits
from splice_build.runtime.isolation.fileview import node_files
from splice_build.runtime.isolation.plan import plan_for
from splice_build.runtime.isolation.support import detect
from splice_build.runtime.node import find_node
from splice_build.runtime.sandbox import SandboxSpec, empty_directory, start
from testing.hostile_packages import write_package
from testing.isolation import needs_os_layer, os_layer_missing

pytestmark = pytest.mark.node

SECRET = "SECRET-OUTSIDE-THE-GRANTS"
WORKSPACE = {"fs": {"read": ["ws"], "write": []}}
WORKSPACE_RW = {"fs": {"read": [], "write": ["ws"]}}

LOOK = """
import fs from 'node:fs';
const ls = (p) => { try { return fs.readdirSync(p).sort(); } catch (e) { return e.code; } };
const rd = (p) => { try { return fs.readFileSync(p, 'utf8'); } catch (e) { return e.code; } };
const wr = (p) => { try { fs.writeFileSync(p, 'x'); return 'written'; } catch (e) { return e.code; } };
export default (i, ctx) => ({
  root: ls('/'), dev: ls('/dev'), etc: ls('/etc'), proc: ls('/proc').filter((n) => /^\\d+$/.test(n)),
  passwd: rd('/etc/passwd'), home: ls(i.home), tmp: ls('/tmp'), marker: rd(i.marker),
  project: ls(ctx.paths.project), splicejson: rd(ctx.paths.project + '/splice.json'),
  inside: rd(ctx.paths.project + '/ws/a.txt'), host: ls(i.host).includes('host.mjs'),
  manifest: rd(ctx.paths.package + '/manifest.json').length > 0,
  writeRoot: wr('/new'), writeTmp: wr('/tmp/new'), writeGrant: wr(ctx.paths.project + '/ws/new'),
  writePackage: wr(ctx.paths.package + '/new'), urandom: fs.readSync(fs.openSync('/dev/urandom'), Buffer.alloc(8)) === 8,
  cwd: process.cwd(),
});
"""


@pytest.fixture
def file_view() -> None:
    """Skip (or, where the OS layer is required, fail) unless a file view can be built."""
    support = detect()
    if not support.file_view:
        os_layer_missing(f"no file view here: {support.file_view_reason}")


@pytest.fixture
def workspace(project: Path) -> Path:
    ws = project / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("inside", encoding="utf-8")
    return ws


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside every grant, holding a secret file."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "file").write_text(SECRET, encoding="utf-8")
    return out


@pytest.fixture
def ungranted(project: Path) -> Path:
    """A directory of the project outside every grant, holding a secret file: a grant that
    a link leads out of the project is refused before any view is planned
    (tests/install/test_consent_links.py), so the links the tools move into grants here
    lead to this one."""
    out = project / "ungranted"
    out.mkdir()
    (out / "file").write_text(SECRET, encoding="utf-8")
    return out


def _node() -> Path:
    return find_node(os.environ).path


def _next_parts(directory: Path, paths: list[Path]) -> set[str]:
    """The names directly under ``directory`` on the way to ``paths``."""
    return {
        p.relative_to(directory).parts[0]
        for p in paths
        if p.is_relative_to(directory) and p != directory
    }


def _run(
    project: Path,
    tmp_path: Path,
    body: str,
    input: Any = None,
    *,
    isolation: str = "require-os",
    guards_off: bool = False,
    **options: Any,
) -> ToolResult:
    runtime = SpliceRuntime(
        project_root=project, env={}, isolation=isolation, _unsafe_in_process_guards_off=guards_off
    )
    pkg_dir = write_package(
        tmp_path / "pkgs", body, name=f"v{len(list(tmp_path.glob('pkgs/*')))}", **options
    )
    return runtime.execute(runtime.load(pkg_dir), "t", input or {})


@needs_os_layer()
@pytest.mark.usefixtures("file_view")
def test_the_view_holds_only_what_is_listed(project: Path, tmp_path: Path, workspace: Path) -> None:
    """With every in-process guard off, only the kernel's view decides what exists."""
    with tempfile.NamedTemporaryFile(dir=tempfile.gettempdir(), prefix="splice-marker-") as marker:
        home = pwd.getpwuid(os.getuid()).pw_dir
        result = _run(
            project,
            tmp_path,
            LOOK,
            {"home": home, "marker": marker.name, "host": str(host_dir())},
            guards_off=True,
            permissions=WORKSPACE,
        )
    assert result.ok, result.to_json()
    out = result.output
    assert out["dev"] == ["null", "random", "urandom", "zero"] and out["urandom"], out
    assert out["etc"] == ["ld.so.cache"] or out["etc"] == "ENOENT", out
    assert out["passwd"] == "ENOENT" and out["marker"] == "ENOENT", out
    assert out["proc"] == ["1"], out
    # The project holds only the grant; its splice.json does not exist.
    assert out["project"] == ["ws"] and out["splicejson"] == "ENOENT", out
    assert out["inside"] == "inside" and out["host"] is True and out["manifest"] is True, out
    # /tmp (the test's tmp_path lives there) and the user's home hold at most the way to
    # what is bound: the project, the packages, the host and Node.
    bound = [project, tmp_path, host_dir(), *(Path(f) for f in node_files(_node()))]
    tmp = Path(tempfile.gettempdir())
    assert out["tmp"] == "ENOENT" or set(out["tmp"]) <= _next_parts(tmp, bound), out
    assert out["home"] == "ENOENT" or set(out["home"]) <= _next_parts(Path(home), bound), out
    # Read-only everywhere but the write grants (none here): the root, the package, the grant.
    assert out["writeRoot"] == "EROFS" and out["writeTmp"] in ("EROFS", "ENOENT"), out
    assert out["writeGrant"] == "EROFS" and out["writePackage"] == "EROFS", out
    assert out["cwd"] == "/", out
    assert result.to_json()["isolation"]["fileView"] == "minimal"
    assert not (workspace / "new").exists() and not Path(home, "new").exists()


@needs_os_layer()
@pytest.mark.usefixtures("file_view")
def test_a_write_grant_is_writable_and_not_executable(project: Path, tmp_path: Path) -> None:
    (project / "ws").mkdir()
    result = _run(
        project,
        tmp_path,
        "import fs from 'node:fs'; import { spawnSync } from 'node:child_process';\n"
        "export default (i, ctx) => { const p = ctx.paths.project + '/ws/run';\n"
        "  fs.copyFileSync(process.execPath, p); fs.chmodSync(p, 0o755);\n"
        "  const code = (c) => { const r = spawnSync(c, ['-e', '0'], { stdio: 'ignore' }); return r.error ? r.error.code : r.status; };\n"
        "  return [code(process.execPath), code(p)]; };\n",
        guards_off=True,
        permissions=WORKSPACE_RW,
    )
    assert result.ok, result.to_json()
    assert result.output == [0, "EACCES"]  # Node runs; the grant is mounted noexec
    assert (project / "ws" / "run").stat().st_size > 0


READ_THROUGH_LINK = """
import fs from 'node:fs';
export default (i, ctx) => {
  const rd = (p) => { try { return fs.readFileSync(p, 'utf8'); } catch (e) { return e.code; } };
  return { file: rd(ctx.paths.project + '/ws/link'), dir: rd(ctx.paths.project + '/ws/dirlink/file'),
           project: rd(ctx.paths.project + '/ws/up') };
};
"""


@needs_os_layer()
@pytest.mark.usefixtures("file_view")
def test_a_link_inside_a_grant_to_outside_leads_nowhere(
    project: Path, tmp_path: Path, workspace: Path, outside: Path
) -> None:
    """Guards on (the real configuration): Node checks the path string, which is granted."""
    (workspace / "link").symlink_to(outside / "file")
    (workspace / "dirlink").symlink_to(outside)
    (workspace / "up").symlink_to("../splice.json")
    result = _run(project, tmp_path, READ_THROUGH_LINK, permissions=WORKSPACE)
    assert result.ok, result.to_json()
    assert result.output == {"file": "ENOENT", "dir": "ENOENT", "project": "ENOENT"}


def _swapper(
    path: Path, target: Path, stop: threading.Event, rounds: int = 2000
) -> Callable[[], None]:
    """Swap ``path`` between a directory and a symbolic link to ``target``, ``rounds`` times
    at most (or until ``stop``)."""
    parked = path.with_name(path.name + ".parked")

    def swap() -> None:
        for _ in range(rounds):
            if stop.is_set():
                break
            with contextlib.suppress(OSError):
                path.rename(parked)
                path.symlink_to(target, target_is_directory=True)
                path.unlink()
                parked.rename(path)

    return swap


RACE_READ = """
import fs from 'node:fs';
export default (i, ctx) => {
  const seen = {};
  for (let n = 0; n < i.reads; n++) {
    let got; try { got = fs.readFileSync(ctx.paths.project + '/ws/d/file', 'utf8'); } catch (e) { got = e.code; }
    seen[got] = (seen[got] || 0) + 1;
  }
  return seen;
};
"""

RACE_WRITE = """
import fs from 'node:fs';
export default (i, ctx) => {
  const seen = {};
  for (let n = 0; n < i.writes; n++) {
    let got = 'ok';
    try { fs.writeFileSync(ctx.paths.project + '/ws/d/file', 'overwritten');
          fs.writeFileSync(ctx.paths.project + '/ws/d/new-' + n, 'x'); } catch (e) { got = e.code; }
    seen[got] = (seen[got] || 0) + 1;
  }
  return seen;
};
"""


@pytest.fixture
def racing(workspace: Path, outside: Path) -> Iterator[Callable[[], None]]:
    """``start()`` begins swapping ws/d with a link to ``outside`` in a background thread."""
    (workspace / "d").mkdir()
    (workspace / "d" / "file").write_text("inside", encoding="utf-8")
    stop = threading.Event()
    thread = threading.Thread(target=_swapper(workspace / "d", outside, stop), daemon=True)
    yield thread.start
    stop.set()
    if thread.is_alive():
        thread.join()


@needs_os_layer()
@pytest.mark.usefixtures("file_view")
@pytest.mark.parametrize("guards", ["on", "off"])
def test_a_swap_race_on_read_never_returns_a_byte_outside(
    project: Path, tmp_path: Path, racing: Callable[[], None], guards: str
) -> None:
    racing()
    result = _run(
        project,
        tmp_path,
        RACE_READ,
        {"reads": 20000},
        guards_off=guards == "off",
        permissions=WORKSPACE,
        timeout_ms=60000,
    )
    assert result.ok, result.to_json()
    assert SECRET not in result.output, result.output
    assert set(result.output) <= {"inside", "ENOENT", "ENOTDIR"}, result.output


@needs_os_layer()
@pytest.mark.usefixtures("file_view")
@pytest.mark.parametrize("guards", ["on", "off"])
def test_a_swap_race_on_write_never_changes_a_byte_outside(
    project: Path, tmp_path: Path, racing: Callable[[], None], outside: Path, guards: str
) -> None:
    racing()
    result = _run(
        project,
        tmp_path,
        RACE_WRITE,
        {"writes": 5000},
        guards_off=guards == "off",
        permissions=WORKSPACE_RW,
        timeout_ms=60000,
    )
    assert result.ok, result.to_json()
    assert sorted(p.name for p in outside.iterdir()) == ["file"], result.output
    assert (outside / "file").read_text(encoding="utf-8") == SECRET


@pytest.fixture
def core_limit() -> Iterator[None]:
    """The user's own core limit raised as far as allowed (``ulimit -c unlimited``)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    if hard == 0:
        pytest.skip(reason="the hard core limit is 0 here: no process can dump core")
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))
    yield
    resource.setrlimit(resource.RLIMIT_CORE, (soft, hard))


def _cores(*roots: Path) -> set[Path]:
    found: set[Path] = set()
    for root in roots:
        if root.is_dir():
            found |= {p for p in root.rglob("*") if p.name.startswith("core")}
    return found


@pytest.mark.parametrize("isolation", ["auto", "in-process"])
def test_an_abort_leaves_no_core_file(
    project: Path, tmp_path: Path, core_limit: None, isolation: str
) -> None:
    places = (tmp_path, Path(empty_directory()), Path.cwd())
    before = _cores(*places)  # the checkout may hold files named so (e.g. a schema "core")
    result = _run(
        project,
        tmp_path,
        "export default () => { process.abort(); };\n",
        isolation=isolation,
        permissions={"fs": {"read": [], "write": ["out"]}},
    )
    assert result.error is not None and result.error.code == ErrorCode.TOOL_CRASHED, (
        result.to_json()
    )
    assert _cores(*places) - before == set()


LIMITS = """
import fs from 'node:fs';
import os from 'node:os';
export default (i, ctx) => {
  const core = fs.readFileSync('/proc/self/limits', 'utf8').split('\\n').find((l) => l.startsWith('Max core'));
  return { core: core.split(/\\s{2,}/).slice(1, 3), cwd: process.cwd(), package: ctx.paths.package, nice: os.getPriority() };
};
"""

RELATIVE = """
import fs from 'node:fs';
export default (i, ctx) => {
  let relative; try { fs.writeFileSync('relative-file', 'x'); relative = 'written'; } catch (e) { relative = e.code; }
  return { cwd: process.cwd(), package: ctx.paths.package, relative, entries: fs.readdirSync('.').length };
};
"""


@pytest.mark.parametrize("isolation", ["auto", "in-process"])
def test_every_layer_has_no_core_and_a_cwd_that_is_not_the_package(
    project: Path, tmp_path: Path, core_limit: None, isolation: str
) -> None:
    # Guards off: the tool reads its own limits (the permission model would deny /proc).
    result = _run(project, tmp_path, LIMITS, isolation=isolation, guards_off=True)
    assert result.ok, result.to_json()
    out = result.output
    assert out["core"] == ["0", "0"], out
    assert out["cwd"] != out["package"] and not out["cwd"].startswith(out["package"]), out
    assert result.to_json()["isolation"]["limits"]["coreBytes"] == 0
    # Below the supervising process's CPU priority (a busy tool cannot starve a server).
    assert out["nice"] == min(19, os.getpriority(os.PRIO_PROCESS, 0) + rlimits.NICENESS), out
    viewed = result.to_json()["isolation"]["fileView"] == "minimal"
    assert out["cwd"] == ("/" if viewed else empty_directory()), out
    # Guards on (the real configuration): a relative write lands nowhere.
    guarded = _run(project, tmp_path, RELATIVE, isolation=isolation)
    assert guarded.error is not None, guarded.to_json()
    assert guarded.error.code == ErrorCode.PERMISSION_DENIED, guarded.to_json()
    assert not list(tmp_path.rglob("relative-file")) and os.listdir(empty_directory()) == []


@needs_os_layer()
@pytest.mark.usefixtures("file_view")
def test_a_grant_that_is_a_link_leads_where_it_leads_outside(project: Path, tmp_path: Path) -> None:
    """The grant ``ws`` is a link to a sibling directory: inside the view it is still a link
    (recreated as on the host) and leads to the same files."""
    (project / "real-ws").mkdir()
    (project / "real-ws" / "a.txt").write_text("inside", encoding="utf-8")
    (project / "ws").symlink_to("real-ws")
    result = _run(
        project,
        tmp_path,
        "import fs from 'node:fs';\n"
        "export default (i, ctx) => ({ read: fs.readFileSync(ctx.paths.project + '/ws/a.txt', 'utf8'),\n"
        "  link: fs.lstatSync(ctx.paths.project + '/ws').isSymbolicLink() });\n",
        permissions=WORKSPACE,
    )
    assert result.ok, result.to_json()
    assert result.output == {"read": "inside", "link": True}
    assert result.to_json()["isolation"]["fileView"] == "minimal"


# Moves a link it found in its write grant to where a nested grant points (no link is created:
# Node's permission model refuses fs.symlink, not a rename), then reads through that grant.
REDIRECT_NESTED = """
import fs from 'node:fs';
const rd = (p) => { try { return fs.readFileSync(p, 'utf8'); } catch (e) { return e.code; } };
export default (i, ctx) => {
  const w = ctx.paths.project + '/work';
  if (i.plant) {
    fs.renameSync(w + '/a', w + '/parked');
    if (i.plant !== 'a') fs.mkdirSync(w + '/a');
    fs.renameSync(w + '/found-link', w + '/' + i.plant);
  }
  return { read: rd(w + '/a/ref/file'), written: (() => {
    try { fs.writeFileSync(w + '/a/out/new', 'x'); return 'written'; } catch (e) { return e.code; }
  })() };
};
"""


@needs_os_layer()
@pytest.mark.usefixtures("file_view")
@pytest.mark.parametrize("place", ["a/ref", "a/out", "a"])
def test_a_grant_inside_a_write_grant_is_never_redirected_by_the_tool(
    project: Path, tmp_path: Path, ungranted: Path, place: str
) -> None:
    """A read grant ``work/a/ref`` and a write grant ``work/a/out`` inside the write grant
    ``work``: the tool puts a link at one of them or at ``work/a`` (a link a checkout shipped
    inside ``work``, harmless under the view). Its next process must not get the link's
    target in its view, and the runtime must not create the write grant through the link."""
    work = project / "work"
    (work / "a").mkdir(parents=True)
    (work / "found-link").symlink_to(ungranted)
    runtime = SpliceRuntime(project_root=project, env={}, isolation="require-os")
    permissions = {"fs": {"read": ["work/a/ref"], "write": ["work", "work/a/out"]}}
    pkg = runtime.load(write_package(tmp_path / "pkgs", REDIRECT_NESTED, permissions=permissions))
    planted = runtime.execute(pkg, "t", {"plant": place})
    assert planted.ok, planted.to_json()
    assert (work / place).is_symlink()
    after = runtime.execute(pkg, "t", {})
    assert after.ok, after.to_json()
    assert after.output == {"read": "ENOENT", "written": "ENOENT"}
    assert sorted(p.name for p in ungranted.iterdir()) == ["file"]


LIST_WS = (
    "import fs from 'node:fs';\n"
    "export default (i, ctx) => fs.readdirSync(ctx.paths.project + '/ws');\n"
)


@needs_os_layer()
@pytest.mark.usefixtures("file_view")
def test_a_warm_process_never_binds_a_grant_renamed_away(
    project: Path, tmp_path: Path, workspace: Path
) -> None:
    """The warm process waiting for the next call bound ws/ when it started; the user then
    moves ws/ aside and makes a new one. The next call sees the new directory, and a start
    from the old plan refuses to mount the new one in its place."""
    from splice_build.runtime.pool import WarmPool
    from splice_build.runtime.sandbox import start

    with SpliceRuntime(
        project_root=project, env={}, isolation="require-os", pool=WarmPool()
    ) as runtime:
        pkg = runtime.load(write_package(tmp_path / "pkgs", LIST_WS, permissions=WORKSPACE_RW))
        assert runtime.execute(pkg, "t", {}).output == ["a.txt"]
        planned = runtime._spec(pkg)
        runtime.prewarm(pkg, wait=True)
        workspace.rename(project / "ws-private")
        workspace.mkdir()
        assert runtime.execute(pkg, "t", {}).output == []
    with pytest.raises(OSError):
        start(planned).close()


@needs_os_layer()
@pytest.mark.usefixtures("file_view")
def test_a_users_link_into_a_write_grant_still_leads_there(project: Path, tmp_path: Path) -> None:
    """The read grant ``ref`` is the user's link (at the project root, out of the tool's
    reach) into the write grant ``work``: not bound on its own, but the link is there and
    leads into ``work`` as on the host."""
    (project / "work" / "sub").mkdir(parents=True)
    (project / "work" / "sub" / "a.txt").write_text("inside", encoding="utf-8")
    (project / "ref").symlink_to("work/sub")
    result = _run(
        project,
        tmp_path,
        "import fs from 'node:fs';\n"
        "export default (i, ctx) => fs.readFileSync(ctx.paths.project + '/ref/a.txt', 'utf8');\n",
        permissions={"fs": {"read": ["ref"], "write": ["work"]}},
    )
    assert result.ok, result.to_json()
    assert result.output == "inside"


# Package "writer" (write grant ``work``) moves a link it found there onto ``work/ref``.
PLANT_REF = """
import fs from 'node:fs';
export default (i, ctx) => {
  const w = ctx.paths.project + '/work';
  fs.renameSync(w + '/ref', w + '/parked');
  fs.renameSync(w + '/found-link', w + '/ref');
  return fs.lstatSync(w + '/ref').isSymbolicLink();
};
"""
# Package "reader" (read grant ``work/ref``, write grant ``work/ref/out``).
READ_REF = """
import fs from 'node:fs';
const rd = (p) => { try { return fs.readFileSync(p, 'utf8'); } catch (e) { return e.code; } };
const wr = (p) => { try { fs.writeFileSync(p, 'x'); return 'written'; } catch (e) { return e.code; } };
export default (i, ctx) => ({
  read: rd(ctx.paths.project + '/work/ref/file'),
  written: wr(ctx.paths.project + '/work/ref/out/new'),
});
"""
WRITER = {"fs": {"read": [], "write": ["work"]}}
READER = {"fs": {"read": ["work/ref"], "write": ["work/ref/out"]}}


def _lock_with_grant(project: Path, permissions: dict[str, Any]) -> None:
    """A splice.lock naming one installed package with ``permissions`` as its grant."""
    import json

    entry = {
        "version": "1.0.0",
        "integrity": "sha256-" + "0" * 64,
        "resolved": "http://127.0.0.1:1/w.tgz",
        "permissions": permissions,
    }
    lock = {"lockfileVersion": 1, "packages": {"@test/writer": entry}}
    (project / "splice.lock").write_text(json.dumps(lock), encoding="utf-8")


@needs_os_layer()
@pytest.mark.usefixtures("file_view")
@pytest.mark.parametrize("writer_known_by", ["this runtime", "splice.lock"])
def test_another_packages_tool_never_redirects_a_grant(
    project: Path, tmp_path: Path, ungranted: Path, writer_known_by: str
) -> None:
    """The reader's grants lie inside the writer's write grant ``work``. The writer's tool
    puts a link (one a checkout shipped) at ``work/ref``: the reader's next process must not
    get the link's target in its view, nor the runtime create ``out`` through it. Until then
    the reader reads and writes there as the user laid it out (one package's output
    another's input)."""
    work = project / "work"
    (work / "ref" / "out").mkdir(parents=True)
    (work / "ref" / "file").write_text("mine", encoding="utf-8")
    (work / "found-link").symlink_to(ungranted)
    pkgs = tmp_path / "pkgs"
    writer = write_package(pkgs, PLANT_REF, name="writer", permissions=WRITER)
    reader = write_package(pkgs, READ_REF, name="reader", permissions=READER)
    runtime = SpliceRuntime(project_root=project, env={}, isolation="require-os")
    assert runtime.execute(runtime.load(reader), "t", {}).output == {
        "read": "mine",
        "written": "written",
    }
    planted = runtime.execute(runtime.load(writer), "t", {})
    assert planted.ok and planted.output is True, planted.to_json()
    if writer_known_by == "splice.lock":
        _lock_with_grant(project, WRITER)
        runtime = SpliceRuntime(project_root=project, env={}, isolation="require-os")
    after = runtime.execute(runtime.load(reader), "t", {})
    assert after.ok, after.to_json()
    # Not in the view; Node's permission model, resolving the link itself, may refuse first.
    assert set(after.output.values()) <= {"ENOENT", "ERR_ACCESS_DENIED"}, after.output
    assert sorted(p.name for p in ungranted.iterdir()) == ["file"]


def test_a_step_the_kernel_refuses_is_named_with_its_errno(file_view: None, tmp_path: Path) -> None:
    """A view the kernel refuses to build (here an attribute no kernel has, so
    ``mount_setattr`` is ``EINVAL``) is told with its errno and its step: ``Popen`` passes on
    only "Exception occurred in preexec_fn", and that was all a full tmpfs (``ENOSPC``) said."""
    unknown = fileview.Bind("/dev/null", "/dev/null", 1 << 30, directory=False)
    spec = SandboxSpec(
        node=find_node(),
        package_dir=tmp_path,
        isolation=plan_for("auto", detect()),
        view=fileview.FileView((unknown,)),
    )
    with pytest.raises(fileview.IsolationFailed) as refused:
        start(spec).close()
    assert refused.value.errno == errno.EINVAL
    assert "mount_setattr: Invalid argument (EINVAL)" in str(refused.value)


@needs_os_layer()
@pytest.mark.usefixtures("file_view")
def test_every_link_to_a_grant_is_in_the_view_however_long_its_text(
    project: Path, tmp_path: Path
) -> None:
    """24 read grants, each a link whose text is over 128 bytes: tmpfs keeps such a text in a
    page of its own, and the view's 64 KiB held 16. The rest were left out without a word,
    and the tool could not read through them (``ERR_ACCESS_DENIED``); the tmpfs is sized
    from the view's links now, and a link that does not fit fails the start instead."""
    far = project / "far" / ("x" * 150)
    grants = [f"l{number}" for number in range(24)]
    for grant in grants:
        (far / grant).mkdir(parents=True)
        (far / grant / "f").write_text("in", encoding="utf-8")
        (project / grant).symlink_to(far / grant)
    result = _run(
        project,
        tmp_path,
        "import fs from 'node:fs';\n"
        f"export default (i, ctx) => ({{ read: {grants!r}.map((g) => {{\n"
        "  try { return fs.readFileSync(ctx.paths.project + '/' + g + '/f', 'utf8'); }\n"
        "  catch (e) { return e.code; } }) });\n",
        permissions={"fs": {"read": grants, "write": []}},
    )
    assert result.ok, result.to_json()
    assert result.output == {"read": ["in"] * len(grants)}
