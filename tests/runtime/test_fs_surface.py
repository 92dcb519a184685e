"""Every file-system function a tool can reach, and what answers for it.

Without the OS layer (isolation in-process) only Node's permission model and the host's
guards (runtime/host/) stand between a tool and a mode, an owner, a link or a time it should
not set. Each function of ``node:fs``, ``fs/promises``, a ``FileHandle`` and a ``Dir`` is
listed here with what answers for it, so that a Node that adds one fails the walk until
someone decides. The descriptor forms Node refuses outright under its permission model
(``fchmod``, ``fchown``, ``futimes`` and a handle's ``chmod``, ``chown``, ``utimes``) are
called for real: a Node that allows one again fails here.

A copy (``fs.copyFile`` in every form, the files ``fs.cp`` and ``cpSync`` copy) got its
source's mode through libuv's ``fchmod``, which no umask masks, and as root its owner: a
root-owned set-user-ID program in a read grant, copied and rewritten, ran as root for uid
65534 (runtime/host/file_copies.mjs).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode
from splice_build.runtime import SpliceRuntime
from testing.hostile_packages import write_package

pytestmark = pytest.mark.node

GRANTS = {"fs": {"read": ["workspace"], "write": ["out"]}}

# Node's permission model checks the path of each (read, or write for a change: rename,
# link, truncate, unlink, utimes, lutimes, mkdir, whose mode the umask masks and which drops
# the set-ID bits), and none sets a mode or an owner otherwise.
BY_PATH = (
    "Dir Dirent FileReadStream ReadStream Stats _toUnixTimestamp access exists glob link "
    "lstat lutimes mkdir mkdtemp mkdtempDisposableSync openAsBlob opendir readFile readdir "
    "readlink realpath rename stat statfs truncate unlink unwatchFile utimes "
    "watch watchFile createReadStream"
)
# fd_guard.mjs: only a descriptor the tool opened.
BY_DESCRIPTOR = "close fdatasync fstat fsync ftruncate read readv write writev"
# Node refuses them under its permission model (called below).
NODE_REFUSES = "fchmod fchown futimes"
# file_modes.mjs: chmod, chown and the mode of a new file (writeFile, appendFile and the
# write streams open with open or writeFileSync).
FILE_MODES = (
    "chmod chown lchown open writeFile appendFile createWriteStream WriteStream "
    "FileWriteStream Utf8Stream"
)
# fs_gaps.mjs (cp, cpSync, rm, rmdir); symlink needs every permission.
FS_GAPS = "cp rm rmdir symlink"
# file_copies.mjs.
FILE_COPIES = "copyFile"
# Names without a Sync form; every other name's Sync form is answered as the name is.
WITHOUT_SYNC = {"Dir", "Dirent", "FileReadStream", "ReadStream", "Stats", "_toUnixTimestamp"}
WITHOUT_SYNC |= {"createReadStream", "createWriteStream", "WriteStream", "FileWriteStream"}
WITHOUT_SYNC |= {"Utf8Stream", "openAsBlob", "unwatchFile", "watch", "watchFile"}
WITHOUT_SYNC |= {"mkdtempDisposableSync"}
# fs/promises: the same answers; lchmod is not implemented on Linux (file_modes.mjs guards it).
PROMISES = (
    "access appendFile chmod chown copyFile cp glob lchmod lchown link lstat lutimes mkdir "
    "mkdtemp mkdtempDisposable open opendir readFile readdir readlink realpath rename rm rmdir "
    "stat statfs symlink truncate unlink utimes watch writeFile"
)
# A FileHandle (fd_guard.mjs: only one fs/promises open returned); chmod, chown and utimes
# are the descriptor forms Node refuses, and file_modes.mjs refuses what they would open;
# fd_guard.mjs fixes each handle's own fd. A handle sent through a MessagePort arrives as a
# new one that open did not return (refused).
HANDLE = (
    "appendFile chmod chown constructor createReadStream createWriteStream datasync fd "
    "getAsyncId read readFile readLines readableWebStream readv stat sync truncate utimes "
    "write writeFile writev Symbol(Symbol.asyncDispose) Symbol(messaging_transfer_symbol) "
    "Symbol(messaging_transfer_list_symbol) Symbol(messaging_deserialize_symbol) "
    "Symbol(kRef) Symbol(kUnref)"
)
# A Dir reads its directory only.
DIR = (
    "close closeSync constructor entries path processReadResult read readSync "
    "readSyncRecursive Symbol(Symbol.dispose) Symbol(Symbol.asyncDispose) "
    "Symbol(Symbol.asyncIterator)"
)


def _fs_names() -> set[str]:
    names: set[str] = set()
    for group in (BY_PATH, BY_DESCRIPTOR, NODE_REFUSES, FILE_MODES, FS_GAPS, FILE_COPIES):
        for name in group.split():
            names.add(name)
            if name not in WITHOUT_SYNC:
                names.add(f"{name}Sync")
    return names


SURFACE = r"""
import fs from 'node:fs';
const functions = (o) => Reflect.ownKeys(o).filter((k) => {
  const d = Object.getOwnPropertyDescriptor(o, k);
  return d.get !== undefined || typeof d.value === 'function';
}).map(String).sort();
const code = (p) => p.then(() => 'done', (e) => e.code);
const sync = (f) => { try { f(); return 'done'; } catch (e) { return e.code; } };
const callback = (f) => new Promise((r) => f((e) => r(e ? e.code : 'done')));
export default async (input, ctx) => {
  const out = ctx.paths.project + '/out';
  fs.writeFileSync(out + '/f', 'x');
  const fd = fs.openSync(out + '/f', 'r');
  const handle = await fs.promises.open(out + '/f', 'r');
  const dir = fs.opendirSync(out);
  const names = {
    // promises is walked below; F_OK and the like are getters of fs.constants' numbers.
    fs: functions(fs).filter((k) => k !== 'promises' && !(k in fs.constants)),
    promises: functions(fs.promises),
    handle: functions(Object.getPrototypeOf(handle)),
    dir: functions(Object.getPrototypeOf(dir)),
  };
  dir.closeSync();
  const uid = process.geteuid(), gid = process.getegid();
  const refused = [
    sync(() => fs.fchmodSync(fd, 0o600)),
    await callback((d) => fs.fchmod(fd, 0o600, d)),
    sync(() => fs.fchownSync(fd, uid, gid)),
    await callback((d) => fs.fchown(fd, uid, gid, d)),
    sync(() => fs.futimesSync(fd, 1, 1)),
    await callback((d) => fs.futimes(fd, 1, 1, d)),
    await code(handle.chmod(0o600)),
    await code(handle.chown(uid, gid)),
    await code(handle.utimes(1, 1)),
  ];
  fs.closeSync(fd);
  await handle.close();
  return { names, refused };
};
"""


def test_every_fs_function_is_answered_for(run_tool, project: Path) -> None:
    """The walk: each function is listed with what answers for it, and the descriptor forms
    Node refuses stay refused (ERR_ACCESS_DENIED)."""
    (project / "out").mkdir()
    result = run_tool(SURFACE, permissions=GRANTS)
    assert result.ok, result.to_json()
    names = result.output["names"]
    assert set(names["fs"]) == _fs_names()
    assert set(names["promises"]) == set(PROMISES.split())
    assert set(names["handle"]) == set(HANDLE.split())
    assert set(names["dir"]) == set(DIR.split())
    assert result.output["refused"] == ["ERR_ACCESS_DENIED"] * 9


COPIES = r"""
import fs from 'node:fs';
const code = (p) => p.then(() => 'copied', (e) => e.code);
const sync = (f) => { try { f(); return 'copied'; } catch (e) { return e.code; } };
export default async (input, ctx) => {
  const ws = ctx.paths.project + '/workspace', out = ctx.paths.project + '/out';
  const outcomes = [];
  for (const name of input.names) {
    outcomes.push(sync(() => fs.copyFileSync(ws + '/' + name, out + '/' + name + '.sync')));
    outcomes.push(await new Promise((r) => fs.copyFile(ws + '/' + name, out + '/' + name + '.cb', (e) => r(e ? e.code : 'copied'))));
    outcomes.push(await code(fs.promises.copyFile(ws + '/' + name, out + '/' + name + '.p')));
    // Node takes a function third argument for the callback, whatever follows it.
    outcomes.push(await new Promise((r) => fs.copyFile(ws + '/' + name, out + '/' + name + '.late', (e) => r(e ? e.code : 'copied'), 'x')));
    // A copy that would replace a file refuses with COPYFILE_EXCL, as Node's own does.
    outcomes.push(sync(() => fs.copyFileSync(ws + '/' + name, out + '/' + name + '.p', fs.constants.COPYFILE_EXCL)));
    // cpSync over a file copied in C++, where no chmod followed.
    fs.writeFileSync(out + '/' + name + '.over', 'old');
    outcomes.push(sync(() => fs.cpSync(ws + '/' + name, out + '/' + name + '.over')));
  }
  if (input.rewrite) fs.writeFileSync(out + '/setid.sync', fs.readFileSync(ws + '/program'));
  return outcomes;
};
"""


# copyFileSync, copyFile, fs/promises copyFile, copyFile with an argument after its callback,
# then a COPYFILE_EXCL copy over the third.
COPIED = ["copied", "copied", "copied", "copied", "EEXIST"]
FORMS = ("sync", "cb", "p", "late", "over")


def _copy(
    project: Path, tmp_path: Path, names: list[str], rewrite: bool
) -> tuple[list[str], dict[str, os.stat_result]]:
    """Copy ``names`` from the read grant into the write grant by every copyFile form and
    cpSync over a file (in-process: no OS layer): the outcomes, and each copy's stat."""
    package = write_package(tmp_path / "packages", COPIES, permissions=GRANTS)
    with SpliceRuntime(project_root=project, env={}, isolation="in-process") as runtime:
        result = runtime.execute(runtime.load(package), "t", {"names": names, "rewrite": rewrite})
    assert result.ok, result.to_json()
    return result.output, {p.name: p.stat() for p in (project / "out").iterdir()}


def test_a_copy_is_closed_to_other_users(project: Path, tmp_path: Path) -> None:
    """A copy of a file others may write gave a copy they may write (libuv's fchmod); it
    gets the source's mode less what the tool's umask closes now, and the host's directory
    for the copy is gone."""
    (project / "workspace").mkdir()
    (project / "out").mkdir()
    for name, mode in (("open", 0o666), ("private", 0o600)):
        (project / "workspace" / name).write_text(name, encoding="utf-8")
        (project / "workspace" / name).chmod(mode)
    outcomes, copies = _copy(project, tmp_path, ["open", "private"], rewrite=False)
    # cpSync's own chmod to 0666 after the copy is refused (file_modes.mjs).
    assert outcomes == [*COPIED, "ERR_ACCESS_DENIED", *COPIED, "copied"]
    assert sorted(copies) == sorted(f"{n}.{f}" for n in ("open", "private") for f in FORMS)
    for name, stat in copies.items():
        # Others' write is always closed; the group's unless the program's umask opened it.
        expected = (0o600,) if name.startswith("private") else (0o644, 0o664)
        assert stat.st_mode & 0o7777 in expected, name


FIFO_COPIES = r"""
import fs from 'node:fs';
export default async (input, ctx) => {
  const from = ctx.paths.project + '/workspace/fifo', to = ctx.paths.project + '/out/copy';
  const outcomes = [];
  try { fs.copyFileSync(from, to); outcomes.push('copied'); } catch (e) { outcomes.push(e.code); }
  outcomes.push(await new Promise((r) => fs.copyFile(from, to, (e) => r(e ? e.code : 'copied'))));
  outcomes.push(await fs.promises.copyFile(from, to).then(() => 'copied', (e) => e.code));
  return { outcomes, left: fs.readdirSync(ctx.paths.project + '/out') };
};
"""


def test_a_copy_of_a_fifo_is_refused_at_once(project: Path, tmp_path: Path) -> None:
    """A FIFO in a read grant held every copy of it, in each form, at the open of its
    source until the call's timeout (as Node's own copy does: libuv opens it blocking); it
    is refused before anything is written, as the host's copy takes only a file."""
    (project / "workspace").mkdir()
    (project / "out").mkdir()
    os.mkfifo(project / "workspace" / "fifo")
    package = write_package(
        tmp_path / "packages", FIFO_COPIES, permissions=GRANTS, timeout_ms=5_000
    )
    with SpliceRuntime(project_root=project, env={}, isolation="in-process") as runtime:
        result = runtime.execute(runtime.load(package), "t", {})
    assert result.ok, result.to_json()
    assert result.output == {"outcomes": ["ERR_ACCESS_DENIED"] * 3, "left": []}


ONTO_FIFOS = r"""
import fs from 'node:fs';
export default async (input, ctx) => {
  const from = ctx.paths.project + '/workspace/a', out = ctx.paths.project + '/out/';
  const outcomes = [];
  for (const to of [out + 'read', out + 'unread']) {
    try { fs.copyFileSync(from, to); outcomes.push('copied'); } catch (e) { outcomes.push(e.code); }
    outcomes.push(await new Promise((r) => fs.copyFile(from, to, (e) => r(e ? e.code : 'copied'))));
    outcomes.push(await fs.promises.copyFile(from, to).then(() => 'copied', (e) => e.code));
  }
  return outcomes;
};
"""


def test_a_copy_onto_a_fifo_is_refused_at_once(project: Path, tmp_path: Path) -> None:
    """A copy onto a FIFO in the write grant was held at the open of its destination until
    the call's timeout when no one read it, and wrote into it when someone did (and changed
    its mode); the destination is opened without blocking and must be a file too."""
    (project / "workspace").mkdir()
    (project / "workspace" / "a").write_text("bytes")
    (project / "out").mkdir()
    for name in ("read", "unread"):
        os.mkfifo(project / "out" / name, 0o640)
    reader = os.open(project / "out" / "read", os.O_RDONLY | os.O_NONBLOCK)
    package = write_package(tmp_path / "packages", ONTO_FIFOS, permissions=GRANTS, timeout_ms=5_000)
    try:
        with SpliceRuntime(project_root=project, env={}, isolation="in-process") as runtime:
            result = runtime.execute(runtime.load(package), "t", {})
        assert os.read(reader, 64) == b""
    finally:
        os.close(reader)
    assert result.ok, result.to_json()
    assert result.output == ["ERR_ACCESS_DENIED"] * 3 + ["ENXIO"] * 3
    for name in ("read", "unread"):
        kept = (project / "out" / name).lstat().st_mode
        assert (project / "out" / name).is_fifo() and kept & 0o7777 == 0o640, name


@pytest.mark.skipif(os.geteuid() != 0, reason="only root keeps the set-ID bits through a copy")
def test_a_copy_keeps_no_set_id_bit_nor_another_owner(project: Path, tmp_path: Path) -> None:
    """As root, a copy of a root-owned set-user-ID program was 04755 and stayed so through
    the tool's rewrite of its bytes (uid 65534 ran it as root), and a copy of uid 65534's
    file was theirs. Neither now."""
    (project / "workspace").mkdir()
    (project / "out").mkdir()
    shutil.copy(shutil.which("true") or "/bin/true", project / "workspace" / "program")
    shutil.copy(project / "workspace" / "program", project / "workspace" / "setid")
    (project / "workspace" / "setid").chmod(0o4755)
    (project / "workspace" / "theirs").write_text("theirs", encoding="utf-8")
    os.chown(project / "workspace" / "theirs", 65534, 65534)
    outcomes, copies = _copy(project, tmp_path, ["setid", "theirs"], rewrite=True)
    assert outcomes == [*COPIED, "ERR_ACCESS_DENIED", *COPIED, "copied"]
    setid = {n: s.st_mode & 0o7777 for n, s in copies.items() if n.startswith("setid")}
    assert setid == {f"setid.{form}": 0o755 for form in FORMS}
    assert {s.st_uid for s in copies.values()} == {0}


COPIES_UNTIL_KILLED = r"""
import fs from 'node:fs';
export default (input, ctx) => {
  for (;;) fs.copyFileSync(ctx.paths.project + '/workspace/setid', ctx.paths.project + '/out/c');
};
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="only root keeps the set-ID bits through a copy")
def test_a_copy_killed_midway_leaves_no_set_id_file(project: Path, tmp_path: Path) -> None:
    """A copy made by libuv and fixed after holds the source's 04755 while its bytes go in:
    a tool copying until its timeout killed it left such a file (4 runs of 5) to
    rename and rewrite at its next call. The host's copy never holds one."""
    (project / "workspace").mkdir()
    (project / "out").mkdir()
    source = project / "workspace" / "setid"
    source.write_bytes(os.urandom(20 << 20))
    source.chmod(0o4755)
    package = write_package(
        tmp_path / "packages", COPIES_UNTIL_KILLED, permissions=GRANTS, timeout_ms=300
    )
    with SpliceRuntime(project_root=project, env={}, isolation="in-process") as runtime:
        result = runtime.execute(runtime.load(package), "t", {})
    assert result.error is not None and result.error.code == ErrorCode.TIMEOUT
    left = {str(p.relative_to(project)): p.lstat().st_mode & 0o7777 for p in project.rglob("*")}
    assert left.pop("workspace/setid") == 0o4755
    assert [name for name, mode in left.items() if mode & 0o6000] == []


COPIES_OVER_FILES = r"""
import fs from 'node:fs';
const sync = (f) => { try { f(); return 'copied'; } catch (e) { return e.code; } };
// `${src}/` one byte past PATH_MAX: the host could not tell the source from a directory.
const long = (dir, name) => {
  const pad = 4095 - (dir.length + 1 + name.length);
  return dir + '/' + (pad % 2 ? '/' : '') + './'.repeat(pad >> 1) + name;
};
export default (input, ctx) => {
  const p = ctx.paths.project, out = p + '/out';
  const outcomes = [];
  for (const name of input.names) {
    for (const way of ['long', 'alone', 'put back']) fs.writeFileSync(`${out}/${name}.${way}`, 'old');
    outcomes.push(sync(() => fs.cpSync(long(p + '/workspace', name), `${out}/${name}.long`)));
    // A file granted alone: the host could not resolve its directory.
    outcomes.push(sync(() => fs.cpSync(`${p}/alone/${name}`, `${out}/${name}.alone`)));
    // Node's Stats of the source runs a setter of Object.prototype after the host's filter.
    let armed = false;
    Object.defineProperty(Object.prototype, 'blksize', {
      configurable: true,
      set(value) {
        Object.defineProperty(this, 'blksize', { value, writable: true, enumerable: true });
        if (armed) fs.writeFileSync(`${out}/${name}.put back`, 'old');
        armed = false;
      },
    });
    const filter = () => { armed = true; return true; };
    outcomes.push(sync(() => fs.cpSync(`${p}/workspace/${name}`, `${out}/${name}.put back`, { filter })));
    delete Object.prototype.blksize;
  }
  return outcomes;
};
"""


def test_cpsync_never_copies_over_a_file_itself(run_tool, project: Path) -> None:
    """cpSync over a file the host's filter had not removed copied in C++ with the source's
    mode: a 0666 source gave a copy other users may write (the OS layer too) and, as root
    in-process, a set-user-ID program a 04755 copy. Such a file is refused EEXIST now; one
    the filter removes is copied by the guarded copy, whose chmod refuses those modes."""
    (project / "out").mkdir()
    sources = {"open": 0o666}
    if os.geteuid() == 0:
        sources["setid"] = 0o4755
    for directory in ("workspace", "alone"):
        (project / directory).mkdir()
        for name, mode in sources.items():
            shutil.copy(shutil.which("true") or "/bin/true", project / directory / name)
            (project / directory / name).chmod(mode)
    grants = {"fs": {"read": ["workspace", *(f"alone/{n}" for n in sources)], "write": ["out"]}}
    result = run_tool(COPIES_OVER_FILES, {"names": list(sources)}, permissions=grants)
    assert result.ok, result.to_json()
    assert result.output == ["ERR_FS_CP_EEXIST", "ERR_ACCESS_DENIED", "ERR_FS_CP_EEXIST"] * len(
        sources
    )
    modes = {p.name: p.stat().st_mode & 0o7777 for p in (project / "out").iterdir()}
    assert [name for name, mode in modes.items() if mode & 0o6002] == []


REWRITES_A_PROGRAM = r"""
import fs from 'node:fs';
export default (input, ctx) => {
  const program = ctx.paths.project + '/out/rootfs/program';
  fs.writeFileSync(program, fs.readFileSync(program));
  return fs.statSync(program).mode & 0o7777;
};
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="only root keeps the set-ID bits through a write")
def test_a_set_id_program_in_a_write_grant_loses_its_bits_when_rewritten(
    project: Path, tmp_path: Path
) -> None:
    """In-process, root kept CAP_FSETID, and with it a file's set-ID bits through the tool's
    writes: a root-owned 04755 program in the write grant (a root file system unpacked there)
    rewritten with the tool's own code stayed 04755, for any local user to run as root. The
    sandbox drops CAP_FSETID without the OS layer (the OS layer drops every capability)."""
    (project / "out" / "rootfs").mkdir(parents=True)
    program = project / "out" / "rootfs" / "program"
    shutil.copy(shutil.which("true") or "/bin/true", program)
    program.chmod(0o4755)
    package = write_package(tmp_path / "packages", REWRITES_A_PROGRAM, permissions=GRANTS)
    with SpliceRuntime(project_root=project, env={}, isolation="in-process") as runtime:
        result = runtime.execute(runtime.load(package), "t", {})
    assert result.ok, result.to_json()
    assert result.output == 0o755
    assert program.stat().st_mode & 0o7777 == 0o755


COPIES_ONTO_LINKS = r"""
import fs from 'node:fs';
const sync = (f) => { try { f(); return 'copied'; } catch (e) { return e.code; } };
export default (input, ctx) => {
  const p = ctx.paths.project;
  return ['dangling', 'loop'].flatMap((link) => [
    sync(() => fs.cpSync(`${p}/workspace`, `${p}/out/${link}`, { recursive: true })),
    sync(() => fs.cpSync(`${p}/workspace/f`, new URL(`file://${p}/out/${link}`))),
  ]);
};
"""


def test_cpsync_onto_a_link_that_leads_nowhere_is_an_error(run_tool, project: Path) -> None:
    """Node's cpSync onto a link that resolves nowhere (dangling, a loop; with the file view,
    any link leading out of the grants) threw a C++ exception from its path check
    (`std::filesystem::equivalent`) and aborted the process: TOOL_CRASHED, whatever the tool
    caught (found by the fs_walk_os fuzz target). The host answers Node's own stat error."""
    (project / "workspace").mkdir()
    (project / "workspace" / "f").write_text("f", encoding="utf-8")
    (project / "out").mkdir()
    (project / "out" / "dangling").symlink_to("../nowhere")
    (project / "out" / "loop").symlink_to("loop")
    result = run_tool(COPIES_ONTO_LINKS, permissions=GRANTS)
    assert result.ok, result.to_json()
    assert result.output == ["ENOENT", "ENOENT", "ELOOP", "ELOOP"]
    assert sorted(p.name for p in (project / "out").iterdir()) == ["dangling", "loop"]
