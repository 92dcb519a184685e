"""The bytes checked are the bytes run: a package directory renamed into place between the
caller's check against the lock (``Splice.run``, ``splice run``, ``splice mcp``) and the
job never runs under the checked package's grant (docs/security.md#installed-code).

The swap is what an update does (the old directory renamed aside, the new one renamed in,
install/transaction.py) or what anyone who may write the project's ``.splice`` can do.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode
from splice_build.runtime import SpliceRuntime
from splice_build.runtime.pool import WarmPool
from splice_build.spec.manifest import Manifest
from splice_build.spec.tree_digest import tree_digest
from testing.hostile_packages import tool_returning, write_package
from testing.isolation import require_os_layer

pytestmark = pytest.mark.node

CHECKED = tool_returning('"checked"')
SWAPPED = tool_returning('"swapped"')


@pytest.fixture(params=["cold", "cold-in-process", "warm"])
def runtime(request: pytest.FixtureRequest, project: Path) -> Iterator[SpliceRuntime]:
    pool = WarmPool() if request.param == "warm" else None
    isolation = "in-process" if request.param == "cold-in-process" else "auto"
    made = SpliceRuntime(project_root=project, env={}, pool=pool, isolation=isolation)
    yield made
    made.close()


def _verified(runtime: SpliceRuntime, directory: Path) -> object:
    digest = tree_digest(directory)
    assert digest is not None
    manifest = Manifest.from_json((directory / "manifest.json").read_bytes())
    return runtime.load_verified(directory, digest, manifest)


def test_a_directory_renamed_in_after_the_check_is_refused(
    runtime: SpliceRuntime, tmp_path: Path
) -> None:
    checked = write_package(tmp_path / "a", CHECKED)
    other = write_package(tmp_path / "b", SWAPPED)
    pkg = _verified(runtime, checked)
    os.rename(checked, tmp_path / "aside")
    os.rename(other, checked)
    result = runtime.execute(pkg, "t", {})  # type: ignore[arg-type]
    assert result.error is not None, result.to_json()
    assert result.error.code == ErrorCode.INSTALLED_PACKAGE_MODIFIED, result.to_json()


def test_the_directory_hashed_is_the_one_the_process_bound(project: Path, tmp_path: Path) -> None:
    """A warm process bound the checked directory; that directory is renamed aside and
    changed, and an intact copy put in its place: a re-check by path would hash the copy
    and send the job to the process that runs the changed files."""
    require_os_layer()
    runtime = SpliceRuntime(project_root=project, env={}, pool=WarmPool(), isolation="auto")
    try:
        checked = write_package(tmp_path / "a", CHECKED)
        pkg = _verified(runtime, checked)
        runtime.prewarm(pkg, wait=True)  # type: ignore[arg-type]
        aside = tmp_path / "aside"
        os.rename(checked, aside)
        shutil.copytree(aside, checked)
        (aside / "tools" / "t.mjs").write_text(SWAPPED, encoding="utf-8")
        result = runtime.execute(pkg, "t", {})  # type: ignore[arg-type]
        assert result.output != "swapped", result.to_json()
        assert result.ok and result.output == "checked", result.to_json()
    finally:
        runtime.close()


def test_files_that_cannot_be_hashed_are_refused_and_the_process_ended(
    runtime: SpliceRuntime, tmp_path: Path
) -> None:
    """A tree nested deeper than one path may name cannot be re-read (ENAMETOOLONG): the
    call is refused like any other mismatch, and the process already started is ended."""
    from splice_build.runtime.host_files import host_entry
    from testing.deep_tree import nested, unnested
    from testing.pool import sandbox_pids

    checked = write_package(tmp_path / "a", CHECKED)
    nested(checked, 2100)  # "a/" * 2100: longer than PATH_MAX
    try:
        manifest = Manifest.from_json((checked / "manifest.json").read_bytes())
        pkg = runtime.load_verified(checked, "sha256-" + "0" * 64, manifest)
        before = set(sandbox_pids(str(host_entry())))
        result = runtime.execute(pkg, "t", {})
        assert result.error is not None, result.to_json()
        assert result.error.code == ErrorCode.INSTALLED_PACKAGE_MODIFIED, result.to_json()
        assert "cannot be read" in " ".join(result.error.details), result.to_json()
        runtime.close()  # the warm pool's spare processes, not the refused call's
        assert set(sandbox_pids(str(host_entry()))) <= before
    finally:
        unnested(checked)
