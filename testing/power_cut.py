"""A model of what a power cut can lose, checked at every rename a real command makes.

A ``kill -9`` loses nothing the process handed to the kernel; a power cut (or a kernel
panic) loses whatever was not forced to the disk: a file's bytes until ``fsync`` of the file,
a name made, moved or removed in a directory until ``fsync`` of that directory. So the
order Splice writes in matters only for a power cut, and no kill can show it.

``PowerCutModel`` follows the project's changes in process: an audit hook
(``sys.addaudithook``) sees every file opened for writing, directory made, rename and removal
under ``root``; ``os.fsync`` is wrapped to see what was made durable (the path of the
descriptor, from ``/proc/self/fd``; Linux only). A path is *dirty* from its change to its
``fsync``. At each rename it checks the three rules a crash-consistent transaction needs
(docs/lifecycle.md#crash-safety):

1. **contents before names**: a file or tree renamed to a name outside ``.splice/tmp`` is
   wholly durable first (no empty or truncated file can appear under its final name);
2. **journal before change**: once a rename touches a name outside ``.splice/tmp``, the
   journal and the directories that hold it are durable (a recovery can always read it);
3. **everything before the commit**: when ``splice.lock`` is replaced, the installed tree and
   every directory above it up to ``.splice`` are durable, and so is every name the command
   put in the artifact cache (``home``): the lock may name a version only the cache holds.

Each broken rule is recorded as ``(rule, path)``; the test asserts none was.

The caches in ``.splice`` (the stat cache, the member memo, the walks' record) are written
without fsync (``atomic_write_bytes(durable=False)``): each is ignored whole when it cannot
be read and checks every entry against what it describes, so losing or tearing one only
costs the next run work. Their renames are checked by no rule and dirty nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from splice_build.project.layout import STAT_CACHE_FILE
from splice_build.project.walk_record import RECORD_FILE
from splice_build.project.workspace import MEMO_FILE

if TYPE_CHECKING:
    import pytest

_CACHES = (STAT_CACHE_FILE, MEMO_FILE, RECORD_FILE)
_WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT
_active: list[PowerCutModel] = []
# Where each event carries a directory descriptor: a path relative to one is not followed.
_DIR_FD = {"os.mkdir": (2,), "os.rename": (2, 3), "os.remove": (1,), "os.rmdir": (1,)}


class PowerCutModel:
    """Dirty paths under ``root`` and the rules broken so far (see the module docstring)."""

    def __init__(self, root: Path, home: Path | None = None) -> None:
        self.root = os.path.realpath(root)
        self.cache = None if home is None else os.path.join(os.path.realpath(home), "cache")
        self.tmp = os.path.join(self.root, ".splice", "tmp")
        self.caches = {os.path.join(self.root, ".splice", name) for name in _CACHES}
        self.dirty: set[str] = set()
        self.broken: list[tuple[str, str]] = []

    def _inside(self, path: str) -> bool:
        return any(
            path == top or path.startswith(top + os.sep)
            for top in (self.root, self.cache and os.path.dirname(self.cache))
            if top
        )

    def _in_tmp(self, path: str) -> bool:
        return path == self.tmp or path.startswith(self.tmp + os.sep)

    def _under(self, top: str) -> set[str]:
        return {p for p in self.dirty if p == top or p.startswith(top + os.sep)}

    def changed(self, path: str) -> None:
        self.dirty.add(path)

    def synced(self, path: str) -> None:
        self.dirty.discard(path)

    def opened(self, path: str, flags: int) -> None:
        if not flags & _WRITING:
            return
        if not os.path.lexists(path):
            self.dirty.add(os.path.dirname(path))
        self.dirty.add(path)

    def made(self, path: str) -> None:
        self.dirty.update({path, os.path.dirname(path)})

    def removed(self, path: str) -> None:
        self.dirty -= self._under(path)
        self.dirty.add(os.path.dirname(path))

    def renamed(self, source: str, target: str) -> None:
        if target in self.caches:
            self.dirty -= self._under(source)
            return
        self._check(source, target)
        moved = self._under(source)
        self.dirty -= moved | self._under(target)
        self.dirty |= {target + p[len(source) :] for p in moved}
        self.dirty.update({os.path.dirname(source), os.path.dirname(target)})

    def _check(self, source: str, target: str) -> None:
        if self._in_tmp(target) and self._in_tmp(source):
            return
        if not self._in_tmp(target):
            self.broken += [("contents before names", p) for p in sorted(self._under(source))]
        journal = os.path.join(self.tmp, "journal.json")
        if os.path.lexists(journal):
            splice_dir = os.path.dirname(self.tmp)
            for path in (journal, self.tmp, splice_dir):
                if path in self.dirty:
                    self.broken.append(("journal before change", path))
        if target == os.path.join(self.root, "splice.lock"):
            splice_dir = os.path.join(self.root, ".splice")
            packages = os.path.join(splice_dir, "packages")
            cached = self._under(self.cache) if self.cache else set()
            for path in sorted(self._under(packages) | ({splice_dir} & self.dirty) | cached):
                self.broken.append(("everything before the commit", path))


def _hook(event: str, args: tuple[object, ...]) -> None:
    if not _active:
        return
    model = _active[-1]
    if event not in {"open", "os.mkdir", "os.rename", "os.remove", "os.rmdir", "shutil.rmtree"}:
        return
    if not isinstance(args[0], str | bytes | os.PathLike):
        return
    if any(args[i] not in (None, -1) for i in _DIR_FD.get(event, ())):
        return  # relative to a directory descriptor (shutil.rmtree's own steps): counted whole
    path = os.path.abspath(os.fsdecode(args[0]))
    if not model._inside(path):
        return
    if event == "open":
        if isinstance(args[2], int):
            model.opened(path, args[2])
    elif event == "os.mkdir":
        model.made(path)
    elif event == "os.rename":
        model.renamed(path, os.path.abspath(os.fsdecode(args[1])))  # type: ignore[arg-type]
    else:
        model.removed(path)


_hooked = False


@contextmanager
def power_cut_model(root: Path, home: Path | None = None) -> Iterator[PowerCutModel]:
    """Follow the changes under ``root`` and ``home`` (SPLICE_HOME) while the block runs."""
    global _hooked
    if not _hooked:
        sys.addaudithook(_hook)  # audit hooks cannot be removed: it idles outside the block
        _hooked = True
    model = PowerCutModel(root, home)
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        real_fsync(fd)
        path = os.readlink(f"/proc/self/fd/{fd}")
        if model._inside(path):
            model.synced(path)

    os.fsync = fsync  # type: ignore[assignment]
    _active.append(model)
    try:
        yield model
    finally:
        _active.remove(model)
        os.fsync = real_fsync


def count_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The descriptors ``os.fsync`` is called with from now on (until ``monkeypatch`` is
    undone), each still synced."""
    synced: list[int] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced
