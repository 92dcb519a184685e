"""What an installed package directory may hold when it is checked: every entry that no
verified package can contain is reported with its code, at once, and never read.

One walk in one process: each entry is put into the installed copy of ``@splice/example`` (from
the embedded registry, offline), ``Splice.list`` and ``Splice.verify`` are asked, and the entry is
taken out again. A sparse file larger than any package file (spec/limits.py) was read to the
end by every check, ``splice run`` and each ``splice mcp`` call included: 20 GiB held
``splice list`` for more than 20 s, a terabyte for about an hour. It is refused from its
``fstat`` now, like a FIFO or a link (spec/tree_digest.py). Directories nested past the
system's path limit made every check, ``splice install`` (the repair) included, end in
``INTERNAL_ERROR`` (``File name too long``); a tree that cannot be read whole is now found
modified, and ``splice install`` restores it."""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from splice_build.sdk import Splice
from splice_build.spec.limits import MAX_FILE_BYTES
from testing.registry_fixtures import new_project

PACKAGE = "@splice/example"
MODIFIED = "INSTALLED_PACKAGE_MODIFIED"
READ_BOUND = 64 * MAX_FILE_BYTES  # far more than the package, far less than the sparse file


def _sparse(path: Path) -> None:
    with path.open("wb") as handle:
        handle.truncate(1 << 40)


def _just_too_large(path: Path) -> None:
    path.write_bytes(b"\0" * (MAX_FILE_BYTES + 1))


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _socket(path: Path) -> None:
    here = os.getcwd()  # a socket's path is short: bound relative to its directory
    os.chdir(path.parent)
    try:
        bound = socket.socket(socket.AF_UNIX)
        bound.bind(path.name)
        bound.close()
    finally:
        os.chdir(here)


def _link_outside(path: Path) -> None:
    path.symlink_to("/etc/hostname")


def _nested_past_path_max(path: Path) -> None:
    """Directories of 200-byte names, 25 deep: a path no single call can name (5,000 bytes)."""
    path.mkdir()
    parent = os.open(path, os.O_RDONLY)
    try:
        for _ in range(25):
            os.mkdir("d" * 200, dir_fd=parent)
            child = os.open("d" * 200, os.O_RDONLY, dir_fd=parent)
            os.close(parent)
            parent = child
        os.close(os.open("last.js", os.O_WRONLY | os.O_CREAT, dir_fd=parent))
    finally:
        os.close(parent)


ENTRIES: dict[str, Callable[[Path], None]] = {
    "sparse-terabyte": _sparse,
    "one-byte-too-large": _just_too_large,
    "fifo": _fifo,
    "socket": _socket,
    "link-outside": _link_outside,
    "nested-past-path-max": _nested_past_path_max,
}


def test_entries_no_package_holds_are_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = new_project(tmp_path / "p")
    splice = Splice(project)
    splice.add([PACKAGE])
    target = project / ".splice/packages" / PACKAGE / "tools/added"
    read = [0]
    real_read = os.read

    def counted(fd: int, size: int) -> bytes:
        data = real_read(fd, size)
        read[0] += len(data)
        if read[0] > READ_BOUND:
            raise AssertionError("an installed file larger than any package file was read")
        return data

    monkeypatch.setattr(os, "read", counted)
    for name, make in ENTRIES.items():
        make(target)
        try:
            read[0] = 0
            (row,) = splice.list()
            assert (row["status"], row.get("code")) == ("invalid", MODIFIED), name
            checks = {c["id"]: c for c in splice.verify(PACKAGE)["checks"]}
            assert (checks["installed"]["status"], checks["installed"]["code"]) == (
                "failed",
                MODIFIED,
            ), name
        finally:
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)  # on descriptors: no path is too long for it
            else:
                target.unlink()
    _nested_past_path_max(target)
    splice.install()  # the repair replaces the tree it cannot read
    (row,) = splice.list()
    assert row["status"] == "ok"
    assert not target.exists()
