"""`splice verify` reads project state, so it first finishes or undoes an install a crash
cut short, as every such command does (docs/lifecycle.md#crash-safety).

The crash is made in process: the staged copy's rename into place fails and the rollback is
skipped, so the journal, the backup and a missing package directory are left as a ``kill
-9`` at that step leaves them. `splice verify` read that state as it was and failed its
``installed`` check (``NOT_INSTALLED``) for a package the next `splice list` found intact."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from splice_build.install import transaction
from splice_build.project.layout import ProjectLayout
from splice_build.project.lockfile import load_lockfile
from splice_build.sdk import Splice
from testing.registry_fixtures import new_project

PACKAGE = "@splice/example"


def test_verify_recovers_an_interrupted_install_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = new_project(tmp_path / "p")
    splice = Splice(project)
    splice.add([PACKAGE])
    layout = ProjectLayout(project)
    staged = transaction.staging_dir(layout, PACKAGE)
    shutil.copytree(layout.package_dir(PACKAGE), staged, dirs_exist_ok=True)
    renames = [0]
    real_rename = transaction._rename

    def cut_at_the_second_rename(source: Path, target: Path) -> None:
        renames[0] += 1
        if renames[0] == 2:
            raise KeyboardInterrupt  # the process dies here
        real_rename(source, target)

    with monkeypatch.context() as patched:
        patched.setattr(transaction, "_rename", cut_at_the_second_rename)
        patched.setattr(transaction, "_rollback_all", lambda layout, swaps: None)
        swap = transaction.swap_for(layout, PACKAGE, staged)
        with pytest.raises(KeyboardInterrupt):
            transaction.apply(layout, [swap], load_lockfile(project), {})
    assert not layout.package_dir(PACKAGE).exists() and layout.tmp_dir.exists()
    report = splice.verify(PACKAGE)
    installed = {c["id"]: c for c in report["checks"]}["installed"]
    assert installed["status"] == "passed", installed
    assert not layout.tmp_dir.exists()
