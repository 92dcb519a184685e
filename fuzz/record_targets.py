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
