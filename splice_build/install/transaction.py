"""Swapping installed directories and ``splice.lock`` as one crash-safe change.

docs/architecture.md#invariants, 8. A directory and a file cannot be replaced by one rename, so a change
is a small journaled transaction (``.splice/tmp/journal.json``):

1. the new package files are complete in a staging directory (``.splice/tmp/<name>-<12 hex>``);
2. the journal is written atomically: the swaps, the lock after the change and
   ``splice.json`` after the change;
3. each old directory is renamed to its backup (``…-previous``), each staged one into place;
4. ``splice.lock`` is written atomically: **the commit point**;
5. ``splice.json`` is written; backups and the journal are deleted.

:func:`recover` (run under the project lock before any state is read or changed) finishes or
undoes a transaction a crash interrupted (and deletes staging copies of an install killed
before its journal was written): if ``splice.lock`` already says what the journal
wanted, the swaps are completed (roll forward), otherwise undone (roll back). Every step of
both directions can itself be interrupted and re-run. A failure inside :func:`apply` rolls
back at once and re-raises.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from splice_build.project.atomic import atomic_write_json, decode_json, fsync_directory
from splice_build.project.layout import ProjectLayout
from splice_build.project.lockfile import Lockfile, load_lockfile, save_lockfile
from splice_build.project.locking import lock
from splice_build.project.project_file import ProjectFile
from splice_build.records import dataclass

JOURNAL = "journal.json"


@dataclass(frozen=True)
class Swap:
    """One package directory change: install ``staged`` at ``final`` (None: remove ``final``)."""

    final: Path
    backup: Path
    staged: Path | None

    def to_json(self) -> dict[str, str | None]:
        return {
            "final": str(self.final),
            "backup": str(self.backup),
            "staged": None if self.staged is None else str(self.staged),
        }

    @classmethod
    def from_json(cls, value: dict[str, str | None]) -> Swap:
        staged = value["staged"]
        return cls(
            Path(str(value["final"])),
            Path(str(value["backup"])),
            None if staged is None else Path(staged),
        )


def staging_dir(layout: ProjectLayout, package_id: str) -> Path:
    """A fresh ``.splice/tmp/<name>-<12 hex>`` (created); its backup is ``…-previous``."""
    name = layout.package_dir(package_id).name
    layout.tmp_dir.mkdir(parents=True, exist_ok=True)
    path = layout.tmp_dir / f"{name}-{secrets.token_hex(6)}"
    path.mkdir()
    return path


def discard_staging(layout: ProjectLayout, staged: Path) -> None:
    """Delete a staging copy that will not be installed, and ``.splice/tmp`` once empty."""
    remove_tree(staged)
    with contextlib.suppress(OSError):
        layout.tmp_dir.rmdir()  # only when empty


def swap_for(layout: ProjectLayout, package_id: str, staged: Path | None) -> Swap:
    """The swap installing ``staged`` (or removing the package when None)."""
    final = layout.package_dir(package_id)
    base = staged if staged is not None else staging_dir(layout, package_id)
    if staged is None:
        base.rmdir()  # only its unique name is needed for the backup
    return Swap(final, base.with_name(base.name + "-previous"), staged)


def apply(
    layout: ProjectLayout,
    swaps: Sequence[Swap],
    lock_after: Lockfile,
    project_after: ProjectFile | None,
) -> None:
    """Run steps 2–5 of the module docstring; on any failure roll back and re-raise."""
    journal = {
        "swaps": [s.to_json() for s in swaps],
        "lock": lock_after.to_json(),
        "project": None if project_after is None else project_after.to_json(),
    }
    layout.tmp_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(layout.tmp_dir / JOURNAL, journal)
    try:
        for swap in swaps:
            _forward(swap)
        save_lockfile(layout.root, lock_after)
    except BaseException:
        _rollback_all(layout, swaps)
        raise
    _finish(layout, swaps, journal["project"])


def recover(layout: ProjectLayout) -> bool:
    """Finish or undo an interrupted transaction; returns True when there was one.

    Call it holding the project lock.
    """
    from splice_build.spec.regular_file import read_regular_file

    path = layout.tmp_dir / JOURNAL
    try:
        journal = decode_json(read_regular_file(path))
    except FileNotFoundError:
        _drop_leftovers(layout)
        return False
    except OSError as exc:  # .splice/tmp a file, the journal a FIFO or a directory
        from splice_build.errors import ErrorCode, ProjectError

        raise ProjectError(
            ErrorCode.NOT_WRITABLE,
            f"{path} cannot be read ({exc.strerror}); installs keep their journal there",
            hint=f"remove {layout.tmp_dir}; the next install creates it again",
        ) from None
    except ValueError:
        # The journal is written atomically, so this is not a crash; refuse to guess.
        raise AssertionError(f"BUG: unreadable journal {path}") from None
    assert isinstance(journal, dict)
    swaps = [Swap.from_json(s) for s in journal["swaps"]]
    if load_lockfile(layout.root).to_json() == journal["lock"]:
        for swap in swaps:
            _forward(swap)
        _finish(layout, swaps, journal["project"])
    else:
        _rollback_all(layout, swaps)
    return True


def _forward(swap: Swap) -> None:
    """Put the new state at ``final`` (idempotent; the old one ends up at ``backup``)."""
    if swap.staged is None:
        if swap.final.exists() and not swap.backup.exists():
            _rename(swap.final, swap.backup)
        elif swap.final.exists():
            remove_tree(swap.final)
        return
    if not swap.staged.exists():
        return  # already moved in
    if swap.final.exists():
        if swap.backup.exists():
            remove_tree(swap.final)
        else:
            _rename(swap.final, swap.backup)
    swap.final.parent.mkdir(parents=True, exist_ok=True)
    _rename(swap.staged, swap.final)


def _rollback(swap: Swap) -> None:
    """Put the old state back at ``final`` (idempotent)."""
    if swap.staged is not None and swap.staged.exists():
        if swap.backup.exists() and not swap.final.exists():
            _rename(swap.backup, swap.final)
        remove_tree(swap.staged)
        return
    if swap.backup.exists():
        if swap.final.exists():
            remove_tree(swap.final)
        _rename(swap.backup, swap.final)
    elif swap.staged is not None:
        # No backup and the staged copy moved in: the package was new; remove it.
        remove_tree(swap.final)


def _rollback_all(layout: ProjectLayout, swaps: Sequence[Swap]) -> None:
    for swap in reversed(swaps):
        _rollback(swap)
    _drop_journal(layout)


def _finish(layout: ProjectLayout, swaps: Sequence[Swap], project_after: object) -> None:
    if project_after is not None and _current_project(layout) != project_after:
        atomic_write_json(layout.project_file, project_after)
    for swap in swaps:
        remove_tree(swap.backup)
        _prune_empty(swap.final.parent, layout.packages_dir)
    _drop_journal(layout)


def _current_project(layout: ProjectLayout) -> object:
    try:
        return decode_json(layout.project_file.read_bytes())
    except (OSError, ValueError):
        return None  # rewritten below


def _drop_journal(layout: ProjectLayout) -> None:
    with contextlib.suppress(FileNotFoundError):
        (layout.tmp_dir / JOURNAL).unlink()
        fsync_directory(layout.tmp_dir)
    with contextlib.suppress(OSError):
        layout.tmp_dir.rmdir()  # only when empty


def _drop_leftovers(layout: ProjectLayout) -> None:
    """Without a journal, anything in ``.splice/tmp`` is a staging copy of a killed install."""
    if layout.tmp_dir.is_dir():
        for leftover in layout.tmp_dir.iterdir():
            remove_tree(leftover)
        _drop_journal(layout)


def _prune_empty(scope_dir: Path, packages_dir: Path) -> None:
    """Remove an empty ``@ns`` dir, then an empty ``packages`` dir (docs/compatibility.md#splice-layout)."""
    for directory in (scope_dir, packages_dir):
        with contextlib.suppress(OSError):
            directory.rmdir()


def _rename(source: Path, target: Path) -> None:
    os.replace(source, target)
    fsync_directory(target.parent)
    if source.parent != target.parent:
        fsync_directory(source.parent)


def remove_tree(path: Path) -> None:
    """Delete a file or directory tree if it exists (links are removed, never followed)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


@contextlib.contextmanager
def project_lock(
    layout: ProjectLayout, on_blocked: Callable[[], None] | None = None
) -> Iterator[None]:
    """Hold the project's lock and finish any transaction a crash interrupted."""
    with lock(layout.state_lock, on_blocked):
        recover(layout)
        yield
