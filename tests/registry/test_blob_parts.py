"""The filesystem artifact store leaves no temp file of an interrupted write behind, and
never removes one another writer is still writing (splice_build/registry/blobs/filesystem.py).

A write killed between its temp file and the rename left ``.tmp-….part`` beside the
artifact for good: `splice registry serve` SIGKILLed there during a publish kept it across
restarts. Now the temp files live in ``artifacts/.parts``, each locked by its writer until
renamed, and opening the store removes those it can lock. Each writer here is a forked
child, stopped (SIGSTOP, holding what it holds) or killed (SIGKILL) by an audit hook at one
step of its write: just before the rename, or just after creating its file and before
locking it (the window a sweep may take the file in).
"""

from __future__ import annotations

import fcntl
import os
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from splice_build.registry.blobs.filesystem import PARTS, FilesystemBlobStore
from splice_build.registry.blobs.interface import artifact_key
from testing.projects import run_python


def _key(n: int) -> str:
    return artifact_key("acme", "tool", f"1.0.{n}", f"{n:064x}", legacy=False)


def _writer(root: Path, n: int, event: str, sig: signal.Signals) -> int:
    """A child writing ``_key(n)`` that sends itself ``sig`` at the first ``event`` of its
    write (``os.rename`` of its temp file, or ``fcntl.flock`` of its writer's lock); its pid,
    once it is stopped or dead."""
    pid = os.fork()
    if pid == 0:  # the child: only the write
        try:
            store = FilesystemBlobStore(root)  # its own sweep runs before the hook
            seen = [False]

            def hook(name: str, args: tuple[Any, ...]) -> None:
                writers_lock = name == "fcntl.flock" and args[1] == fcntl.LOCK_EX
                renamed = name == "os.rename" and str(args[0]).endswith(".part")
                if not seen[0] and name == event and (writers_lock or renamed):
                    seen[0] = True
                    os.kill(os.getpid(), sig)

            sys.addaudithook(hook)
            store.put(_key(n), b"bytes %d" % n)
        except BaseException:
            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, os.WUNTRACED)
    expected = os.WIFSTOPPED(status) if sig == signal.SIGSTOP else os.WIFSIGNALED(status)
    assert expected, status
    return pid


def _finish(pid: int) -> None:
    os.kill(pid, signal.SIGCONT)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status


def test_interrupted_writes_are_swept_and_live_ones_kept(tmp_path: Path) -> None:
    root = tmp_path / "artifacts"
    parts = root / PARTS
    _writer(root, 1, "os.rename", signal.SIGKILL)  # killed with its bytes written
    (killed,) = parts.iterdir()
    assert killed.read_bytes() == b"bytes 1" and not (root / _key(1)).exists()

    stopped = _writer(root, 2, "os.rename", signal.SIGSTOP)  # alive, its file locked
    (live,) = set(parts.iterdir()) - {killed}
    fresh = _writer(root, 3, "fcntl.flock", signal.SIGSTOP)  # created, not locked yet
    (unlocked,) = set(parts.iterdir()) - {killed, live}

    FilesystemBlobStore(root)  # the sweep of a store opening, as a server or worker starts
    assert set(parts.iterdir()) == {live}  # the killed write's and the unlocked file went

    _finish(fresh)  # its file was taken: it writes a new one, and completes
    _finish(stopped)
    assert [(root / _key(n)).read_bytes() for n in (2, 3)] == [b"bytes 2", b"bytes 3"]
    assert not (root / _key(1)).exists() and list(parts.iterdir()) == []
    assert unlocked != live and not unlocked.exists()


def test_temp_files_an_older_version_left_are_removed_once_a_day_old(tmp_path: Path) -> None:
    """Before ``artifacts/.parts``, a killed write left ``.tmp-XXXXXXXX.part`` beside its
    artifact, unlocked, and the sweep never looked there: it stayed for good. An older
    server sharing the store may be writing one now (a write takes seconds), so only those
    a day old go; the walk is made until none is left, then a marker ends it."""
    from splice_build.registry.blobs import filesystem

    version = tmp_path / "packages" / "acme" / "tool" / "1.0.0"
    version.mkdir(parents=True)
    old, young = version / ".tmp-k3j_9x2a.part", version / ".tmp-zz00aa11.part"
    kept = [version / ".tmp-short.part", version / "a.tar.gz", tmp_path / ".tmp-k3j_9x2b.part"]
    for path in [old, young, *kept]:
        path.write_bytes(b"half an artifact")
    linked = version / ".tmp-linkedxx.part"
    linked.symlink_to(kept[1])
    day_ago = time.time() - 24 * 3600 - 60  # docs/registry.md: a day
    for path in (old, *kept):
        os.utime(path, (day_ago, day_ago))
    FilesystemBlobStore(tmp_path)
    assert not old.exists() and young.exists() and linked.is_symlink()
    assert all(path.exists() for path in kept)
    assert not (tmp_path / filesystem.LEGACY_SWEPT).exists()  # the young one is still there
    os.utime(young, (day_ago, day_ago))
    FilesystemBlobStore(tmp_path)
    assert not young.exists() and linked.is_symlink()  # a link is no temp file: left alone
    assert (tmp_path / filesystem.LEGACY_SWEPT).exists()


def test_a_store_that_cannot_be_written_is_not_walked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only store (a read-only mount: 44 ms an open for 5,000 versions, measured) can
    hold no marker, so every open walked every version directory, and could remove nothing.
    ``os.access`` answers as the mount does (root's writes to a read-only one included)."""
    from splice_build.registry.blobs import filesystem

    def walked(packages: Path) -> Iterator[str]:
        raise AssertionError(f"walked {packages}")

    real_access = os.access
    monkeypatch.setattr(filesystem, "_version_directories", walked)
    monkeypatch.setattr(
        filesystem.os,
        "access",
        lambda path, mode, **kw: mode != os.W_OK and real_access(path, mode, **kw),
    )
    FilesystemBlobStore(tmp_path)
    assert not (tmp_path / filesystem.LEGACY_SWEPT).exists()


UMASK_ZERO_PUBLISH = """
import sys
from pathlib import Path
from splice_build.registry.client.embedded import EmbeddedRegistryClient
from splice_build.spec.pack import pack_directory
from testing.packages import minimal_manifest, write_package
work = Path(sys.argv[1])
package = write_package(work / "pkg", minimal_manifest(namespace="acme", name="greeter"))
client = EmbeddedRegistryClient(work / "srv" / "registry" / "data")
try:
    client.publish(pack_directory(package).archive)
finally:
    client.close()
"""


def test_a_store_made_under_umask_zero_is_writable_by_its_owner_alone(tmp_path: Path) -> None:
    """A registry started by a daemon whose umask is 0 (``registry serve --data
    /srv/registry/data``): its data directory, the directories above it that it made, and the
    artifacts' directories were 0777, so every local user could replace ``registry.db`` or an
    artifact, which makes them the registry's admin (docs/registry.md). They are made as
    ``project/creation_modes.py`` says now: never writable by others."""
    done = run_python(UMASK_ZERO_PUBLISH, str(tmp_path), umask=0)
    assert done.returncode == 0, done.stderr
    made = [tmp_path / "srv", *sorted((tmp_path / "srv").rglob("*"))]
    assert any(path.name.endswith(".tar.gz") for path in made), made
    open_to_others = [
        f"{path.relative_to(tmp_path)} {path.stat().st_mode & 0o7777:o}"
        for path in made
        if path.stat().st_mode & 0o002
    ]
    assert open_to_others == []
