"""Fuzz targets for the records Splice reads about who may write where (fuzz/README.md).

``grant_records`` writes the bytes as a grant record (project/grant_record.py), a checkout's
own ``.splice/write-grants.json`` or SPLICE_HOME's, and runs workspace discovery's drop of
what tools may have written (``drop_tool_written``), then ``remember``, as the runtime does
before a tool starts. ``posix_acl`` reads the bytes as a POSIX ACL's extended attribute, as
a FUSE or network file system may hand back any (project/posix_acl.py ``parse``).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from splice_build.install.consent_record import ConsentRecord

Check = Callable[[bytes], None]


def grant_records() -> Check:
    """First byte even: the rest is the checkout's own record; odd: SPLICE_HOME's.
    ``@ROOT@``, ``@OUT@``, ``@DEV@`` and ``@INO@`` become the project's real path, its
    granted ``out`` and that directory's device and inode, so that mutations reach records
    whose entries name what is there."""
    from fuzz.targets import Finding, _scratch
    from splice_build.project.grant_record import RECORD_NAME, read_records, remember
    from splice_build.project.tool_written import drop_tool_written

    base = _scratch() / "grants"
    home, repo = base / "home", base / "repo"
    home.mkdir(mode=0o700, parents=True)
    planted = repo / "out" / "planted"
    planted.mkdir(parents=True)
    for project in (repo, planted):
        (project / "splice.json").write_text("{}\n")
    (repo / ".splice").mkdir()
    out = repo / "out"
    info = os.stat(out)
    names = {
        b"@ROOT@": os.fsencode(os.path.realpath(repo)),
        b"@OUT@": os.fsencode(os.path.realpath(out)),
        b"@DEV@": str(info.st_dev).encode(),
        b"@INO@": str(info.st_ino).encode(),
    }
    records = {0: repo / ".splice" / RECORD_NAME, 1: home / RECORD_NAME}

    def check(data: bytes) -> None:
        if not data:
            return
        body = data[1:]
        for name, value in names.items():
            body = body.replace(name, value)
        shipped = data[0] % 2 == 0
        record = records[data[0] % 2]
        records[1 - data[0] % 2].unlink(missing_ok=True)
        record.write_bytes(body)
        kept, _dropped, _ignored = drop_tool_written([planted, repo], [repo], home)
        if shipped and repo not in kept:
            raise Finding("a checkout's own grant record dropped its own project")
        try:
            remember(record, repo, [("out", out)])
        except OverflowError:
            return  # full of live entries: the tool does not run (documented)
        if (info.st_dev, info.st_ino) not in {r.identity for r in read_records(record)}:
            raise Finding("remember wrote a record that does not hold what it recorded")
        kept, _dropped, _ignored = drop_tool_written([planted, repo], [repo], home)
        if planted in kept:
            raise Finding("a recorded grant does not hold the project planted in it")

    return check


# The kernel's order of an ACL's entries (posix_acl_valid walks them in it).
_ORDER = {0x01: 0, 0x02: 1, 0x04: 2, 0x08: 3, 0x10: 4, 0x20: 5}


def _kernel_accepts(found: list[tuple[int, int, int]]) -> bool:
    """posix_acl_valid (fs/posix_acl.c) on the entries in the kernel's order, and no named
    user or group twice (the order the kernel keeps names each once): the oracle."""
    ordered = sorted(found, key=lambda entry: (_ORDER.get(entry[0], 9), entry[2]))
    state, needs_mask = "user_obj", False
    for tag, perm, _ident in ordered:
        if perm & ~0o7:
            return False
        if tag == 0x01 and state == "user_obj":
            state = "user"
        elif tag in (0x02, 0x08) and state == ("user" if tag == 0x02 else "group"):
            needs_mask = True
        elif tag == 0x04 and state == "user":
            state = "group"
        elif tag == 0x10 and state == "group":
            state = "other"
        elif tag == 0x20 and (state == "other" or (state == "group" and not needs_mask)):
            state = "done"
        else:
            return False
    named = [(tag, ident) for tag, _perm, ident in found if tag in (0x02, 0x08)]
    return state == "done" and len(set(named)) == len(named)


def posix_acl() -> Check:
    """``parse`` accepts exactly the ACLs the kernel would (in its order), reads back to the
    same bytes, and the writers of an accepted one are only entries with write, none past a
    mask without it."""
    from fuzz.targets import Finding
    from splice_build.project.posix_acl import _writers_in, parse

    info = os.stat_result((0o42775, 0, 0, 0, 1000, 2000, 0, 0, 0, 0))

    def check(data: bytes) -> None:
        try:
            found = parse(data)
        except ValueError:
            entries = len(data) >= 4 and not (len(data) - 4) % 8
            version = entries and struct.unpack_from("<I", data)[0] == 2
            if version and _kernel_accepts(
                [struct.unpack_from("<HHI", data, at) for at in range(4, len(data), 8)]
            ):
                raise Finding("parse refused an ACL the kernel accepts") from None
            return
        if not _kernel_accepts(found):
            raise Finding(f"parse accepted an ACL the kernel refuses: {found[:8]}")
        again = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in found)
        if again != data:
            raise Finding("the entries parsed do not write back to the attribute")
        users, groups = _writers_in(found, info)
        masked = any(tag == 0x10 and not perm & 0o2 for tag, perm, _ in found)
        writing = {(tag, ident) for tag, perm, ident in found if perm & 0o2}
        if masked and (users or groups):
            raise Finding("a writer past a mask without write")
        if any((0x02, uid) not in writing for uid in users):
            raise Finding("a user without write among the writers")
        owning = {info.st_gid} if any(tag == 0x04 for tag, _ in writing) else set()
        if not groups <= {ident for tag, ident in writing if tag == 0x08} | owning:
            raise Finding("a group without write among the writers")

    return check


def graph_records() -> Check:
    """The bytes as the ``lock`` task's record in a doit database of ``.splice/`` (which a
    checkout can ship), read through ``SavingSqliteDB`` as ``splice install`` reads it:
    doit's status check of the task (its ``file_dep`` a real ``splice.json``) neither raises
    nor skips it, and what ``save_success`` then writes is a record these tasks write.
    ``@SPLICE_JSON@`` becomes that file's path, so that mutations reach its saved state."""
    import sqlite3

    from doit.dependency import Dependency
    from doit.task import Task

    from fuzz.targets import Finding, _scratch
    from splice_build.tasks.checker import Sha256Checker
    from splice_build.tasks.loader import SavingSqliteDB, _written_here

    root = _scratch() / "graph"
    root.mkdir()
    project_file = root / "splice.json"
    project_file.write_text('{"specVersion": 1, "packages": {}}\n')
    db = root / "graph.sqlite3"

    def check(data: bytes) -> None:
        data = data.replace(b"@SPLICE_JSON@", os.fsencode(project_file))
        db.unlink(missing_ok=True)
        with sqlite3.connect(db) as conn:
            conn.execute("create table doit (task_id text not null primary key, task_data json)")
            conn.execute("insert into doit values ('lock', ?)", (data,))
        conn.close()
        task = Task("lock", [lambda: None], file_dep=[str(project_file)])
        dependency = Dependency(SavingSqliteDB, str(db), checker_cls=Sha256Checker)
        try:
            if dependency.status_is_ignore(task):
                raise Finding("a record made doit skip the task")
            status = dependency.get_status(task, {}).status
            if status not in ("run", "up-to-date"):
                raise Finding(f"status {status!r}")
            dependency.save_success(task)
            record = dependency.backend._get_task_data("lock")
            if not _written_here(record):
                raise Finding(f"save_success wrote a record read as none: {record!r:.200}")
        finally:
            dependency.backend._conn.close()

    return check


def consent_record() -> Check:
    """The bytes as a project's consent record in SPLICE_HOME (install/consent_record.py),
    read as ``splice run`` reads it: a record, None or the corrupt record; one read grants
    exactly what its bytes name, and written back reads back the same. First byte odd: the
    file is another user's (uid 65534), which is no record. ``@ROOT@`` becomes the project's
    real path, JSON-escaped, so that mutations reach records of this project."""
    import json

    from fuzz.targets import Finding, _scratch
    from splice_build.install.consent_record import read_record, record_path, write_record
    from splice_build.project.home import make_private_dirs

    base = _scratch() / "consent"
    home, root = base / "home", base / "project"
    root.mkdir(parents=True)
    make_private_dirs(home)
    path = record_path(home, root)
    make_private_dirs(path.parent)
    escaped = json.dumps(os.path.realpath(root))[1:-1].encode()
    foreign = os.geteuid() == 0

    def check(data: bytes) -> None:
        if not data:
            return
        body = data[1:].replace(b"@ROOT@", escaped)
        path.unlink(missing_ok=True)
        path.write_bytes(body)
        os.chmod(path, 0o600)
        others = foreign and data[0] % 2 == 1
        if others:
            os.chown(path, 65534, 65534)
        record = read_record(home, root)
        if others:
            if record is not None:
                raise Finding("a record another user owns was read")
            return
        if record is None:
            raise Finding("a record that is there read as none")
        if record.corrupt:
            if record.grants or record.links:
                raise Finding("the corrupt record names grants")
            return
        _grants_as_named(json.loads(body), record)
        write_record(home, root, record.grants, record.links)
        again = read_record(home, root)
        kept = {k: dict(v) for k, v in record.links.items() if k in record.grants and v}
        if again is None or again.corrupt or dict(again.grants) != dict(record.grants):
            raise Finding("a record written back does not read back its grants")
        if {k: dict(v) for k, v in again.links.items()} != kept:
            raise Finding("a record written back does not read back its links")

    return check


def _grants_as_named(value: dict[str, Any], record: ConsentRecord) -> None:
    """Each grant and link ``record`` holds is one the parsed JSON ``value`` names, no more."""
    from fuzz.targets import Finding
    from splice_build.spec.permissions import schema_leaves

    version = value["version"]
    if type(version) is not int:
        raise Finding(f"a record of version {version!r} was read")
    packages = value["packages"]
    if set(record.grants) != set(packages):
        raise Finding("the packages granted are not those the record names")
    for package, grant in record.grants.items():
        for leaf in schema_leaves():
            named: object = packages[package]
            for key in leaf:
                named = named.get(key, {}) if isinstance(named, dict) else {}
            held = getattr(grant, "_".join(leaf))
            if not set(held) <= set(named or ()):
                raise Finding(f"{package}: {'.'.join(leaf)} holds more than the record names")
    links = value.get("links", {}) if version == 2 else {}
    if {k: dict(v) for k, v in record.links.items()} != links:
        raise Finding("the links read are not those the record names")
    for package in links:
        if package not in packages and record.links_for(package):
            raise Finding(f"{package}: links accepted for a package the record grants nothing")


def _outside_tree(base: Path) -> tuple[Path, Path, Path]:
    """A project with links that stay inside it, leave it, dangle and loop; a directory
    outside it; and a link to the project (a project reached through a link of its own)."""
    project, away = base / "project", base / "elsewhere"
    (project / "ws" / "sub").mkdir(parents=True)
    (away / "dir").mkdir(parents=True)
    (base / "project-twin").mkdir()  # its path starts with the project's
    (project / "file.txt").write_text("x")
    links = {
        "in": "ws",
        "ws/deep": "../in/sub",
        "out": "../elsewhere",
        "abs": str(away / "dir"),
        "top": "/",
        "self": ".",
        "up": "..",
        "gone": "../elsewhere/new-file",
        "loop": "loop",
        "ws/back": "../../elsewhere/dir",
        "chain": "ws/back",
        "again": str(project),
        "ws/home": "../../project/ws",
        "twin": "../project-twin",
    }
    for name, target in links.items():
        os.symlink(target, project / name)
    os.symlink("project", base / "project-link")
    return project, base / "project-link", away


def _real(path: str) -> str | None:
    """Where the kernel's walk of ``path`` ends, followed one component at a time with
    lstat and readlink (a missing component and what follows kept as written, as a write
    would create it); None for a loop."""
    parts = [p for p in path.split("/") if p]
    done, hops = "/", 0
    while parts:
        part = parts.pop(0)
        if part == ".":
            continue
        if part == "..":
            done = os.path.dirname(done)
            continue
        candidate = os.path.join(done, part)
        if os.path.islink(candidate):
            hops += 1
            if hops > 40:
                return None
            target = os.readlink(candidate)
            if target.startswith("/"):
                done = "/"
            parts[:0] = [p for p in target.split("/") if p]
            continue
        done = candidate
    return done


def outside_links() -> Check:
    """Each line of the bytes a file grant (``w:`` first: a write grant), with ``\\t`` and
    the real path this machine accepted it leading to (``@AWAY@``: the outside directory);
    entries a manifest cannot hold are dropped. First byte odd: the project is named through
    a link to it. What ``unaccepted_links`` returns leads out of the project by the kernel's
    walk (or could not be resolved), what it leaves out leads inside or was accepted with the
    real path it leads to."""
    from fuzz.targets import Finding, _scratch
    from splice_build.spec.outside_grants import UNRESOLVED, unaccepted_links
    from splice_build.spec.permissions import Permissions, is_grantable_path

    project, linked, away = _outside_tree(_scratch() / "outside")
    real_root = os.path.realpath(project)
    real_away = os.fsencode(os.path.realpath(away))

    def check(data: bytes) -> None:
        if not data:
            return
        reads, writes, accepted = [], [], {}
        text = data[1:].replace(b"@AWAY@", real_away).decode("utf-8", "replace")
        for line in text.split("\n"):
            entry, _, real = line.partition("\t")
            entry, write = (entry[2:], True) if entry.startswith("w:") else (entry, False)
            if not is_grantable_path(entry):
                continue
            (writes if write else reads).append(entry)
            if real:
                accepted[entry] = real
        permissions = Permissions(fs_read=tuple(reads), fs_write=tuple(writes))
        root = linked if data[0] % 2 else project
        found = unaccepted_links(root, permissions, accepted or None)
        for entry in {*reads, *writes}:
            real = _real(os.path.join(real_root, entry))
            if real is None:
                continue  # a loop leads nowhere
            leaves = real != real_root and not real.startswith(real_root + "/")
            if entry in found:
                if found[entry] != UNRESOLVED and (not leaves or found[entry] != real):
                    raise Finding(f"{entry}: returned as {found[entry]!r}, leads to {real!r}")
            elif leaves and accepted.get(entry) != real:
                raise Finding(f"{entry}: leads out to {real!r}, not returned nor accepted")

    return check


def git_index() -> Check:
    """``spec.git_links.gitlinks`` against git itself: the bytes are an index's body (its
    SHA-1 checksum appended, so that git reads what the mutations make), written as the
    index of a scratch repository; whenever git lists an entry of mode 160000 (a submodule
    ``git status`` enters), ``gitlinks`` lists it too or refuses the index as unreadable
    (the grant is then refused: fail closed). Anything but a tuple or ``UnreadableIndex``
    is a finding."""
    import hashlib
    import subprocess

    from fuzz.targets import Finding, _scratch
    from splice_build.spec.git_links import UnreadableIndex, gitlinks

    repo = _scratch() / "git-index"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    git_dir = repo / ".git"
    env = {"PATH": os.defpath, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo)}

    def check(data: bytes) -> None:
        (git_dir / "index").write_bytes(data + hashlib.sha1(data).digest())
        try:
            ours: tuple[str, ...] | None = gitlinks(str(git_dir))
        except UnreadableIndex:
            ours = None
        listed = subprocess.run(
            ["git", "-C", str(repo), "ls-files", "--stage", "-z"],
            capture_output=True,
            env=env,
            check=False,
        )
        if listed.returncode != 0 or ours is None:
            return  # git reads no entry, or the grant is refused
        theirs = {  # git shows an empty name as "./"
            os.path.normpath(os.fsdecode(entry.split(b"\t", 1)[1]))
            for entry in listed.stdout.split(b"\0")
            if entry.startswith(b"160000 ")
        }
        missed = theirs - {os.path.normpath(link) for link in ours}
        if missed:
            raise Finding(f"git enters submodules gitlinks does not list: {sorted(missed)}")

    return check


def walk_records() -> Check:
    """``project.walk_record.read_record`` on the bytes as ``.splice/walks.json``, then
    ``spec.project_below.project_below`` of a write grant trusting what it read, as a no-op
    ``splice sync`` and a run's checks do. ``@WS@``, ``@A@``, ``@B@`` become the granted directory and two
    directories below it, ``@DEV@`` their device, ``@INO_WS@``, ``@CT_WS@`` (and ``_A``,
    ``_B``) each one's inode and change time as a clean walk recorded them; a ``.git`` is
    then made in the granted directory, so that every record names its top as it was
    before. Whatever the record holds, the ``.git`` is found; what ``read_record`` returns
    is of the record's shape (each walk listing its top first) and reads back the same once
    ``write_walks`` wrote it (walks and index reads)."""
    from fuzz.targets import Finding, _scratch
    from splice_build.project.walk_record import read_record, write_walks
    from splice_build.spec import project_below as below
    from splice_build.spec.project_state import REPOSITORY_DIR, Walks

    base = _scratch() / "walks"
    root, again = base / "project", base / "again"
    granted = root / "ws"
    for directory in (granted / "a", granted / "b", again / ".splice"):
        directory.mkdir(parents=True)
    (root / ".splice").mkdir(mode=0o700)
    names = {b"@DEV@": str(os.stat(granted).st_dev).encode()}
    for mark, path in (("WS", granted), ("A", granted / "a"), ("B", granted / "b")):
        info = os.stat(path)
        names[f"@{mark}@".encode()] = os.fsencode(path)
        names[f"@INO_{mark}@".encode()] = str(info.st_ino).encode()
        names[f"@CT_{mark}@".encode()] = str(info.st_ctime_ns).encode()
    (granted / REPOSITORY_DIR).mkdir()  # the top's change time moves past every record
    record = root / ".splice" / "walks.json"
    planted = (PurePath(granted), REPOSITORY_DIR)

    def check(data: bytes) -> None:
        for name, value in names.items():
            data = data.replace(name, value)
        record.write_bytes(data)
        record.chmod(0o600)
        recorded, indexes = read_record(root)
        for (top, looked), listed in recorded.items():
            if type(looked) is not bool or not listed or listed[0][0] != top:
                raise Finding(f"a walk of {top!r} read as {listed!r:.200}")
        below._remembered.clear()
        walks = Walks(lambda: (recorded, indexes))
        found = below.project_below(PurePath(granted), walks, repositories=True)
        if found != planted:
            raise Finding(f"the grant's .git was not found, but {found!r}")
        if recorded or indexes:
            write_walks(again, recorded, {}, indexes, {})
            if read_record(again) != (recorded, indexes):
                raise Finding("a record read, written and read again changed")

    return check
