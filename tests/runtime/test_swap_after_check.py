"""The bytes checked are the bytes run: a package directory renamed into place between the
caller's check against the lock (``Splice.run``, ``splice run``, ``splice mcp``) and the
job never runs under the checked package's grant (docs/security.md#installed-code).

The swap is what an update does (the old directory renamed aside, the new one renamed in,
install/transaction.py) or what anyone who may write the project's ``.splice`` can do.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
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
    call is refused like any other mismatch, and the process already started is ended.
    Processes are told apart by this test's own directory in their command line (a
    package's grant names it): another test running at the same time has other ones."""
    from testing.deep_tree import nested, unnested
    from testing.pool import sandbox_pids

    checked = write_package(tmp_path / "a", CHECKED)
    nested(checked, 2100)  # "a/" * 2100: longer than PATH_MAX
    try:
        manifest = Manifest.from_json((checked / "manifest.json").read_bytes())
        pkg = runtime.load_verified(checked, "sha256-" + "0" * 64, manifest)
        before = set(sandbox_pids(str(tmp_path)))
        result = runtime.execute(pkg, "t", {})
        assert result.error is not None, result.to_json()
        assert result.error.code == ErrorCode.INSTALLED_PACKAGE_MODIFIED, result.to_json()
        assert "cannot be read" in " ".join(result.error.details), result.to_json()
        runtime.close()  # the warm pool's spare processes, not the refused call's
        assert set(sandbox_pids(str(tmp_path))) <= before
    finally:
        unnested(checked)


def _swap_for_link(path: Path, target: Path) -> Callable[[], None]:
    """Put a link to ``target`` in ``path``'s place; what puts the directory back."""
    parked = path.with_name(path.name + ".parked")
    os.rename(path, parked)
    path.symlink_to(target, target_is_directory=True)

    def back() -> None:
        path.unlink()
        os.rename(parked, path)

    return back


@pytest.fixture
def viewed(project: Path) -> Iterator[SpliceRuntime]:
    """A cold runtime with the file view, in-process guards off (the kernel alone holds)."""
    from splice_build.runtime.isolation.support import detect

    require_os_layer()
    if not detect().file_view:
        pytest.skip(reason=f"no file view here: {detect().file_view_reason}")
    made = SpliceRuntime(
        project_root=project, env={}, isolation="require-os", _unsafe_in_process_guards_off=True
    )
    yield made
    made.close()


@pytest.mark.parametrize("when", ["after the plan", "during the plan"])
def test_a_package_directory_swapped_for_a_link_around_the_plan_is_refused(
    viewed: SpliceRuntime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """The checked directory swapped for a link to another package (what a thread swapping
    it in a loop does at random: ``test_a_swap_race_around_the_start_...``), at the two moments that
    matter. After the plan, the bind found the link (ELOOP) and the start failed as
    TOOL_CRASHED; during the plan (the directory back before the check), the view bound the
    link's target, the check hashed the checked directory by its path again, and the other
    package's code ran under the checked one's grant."""
    checked = write_package(tmp_path / "a", CHECKED)
    other = write_package(tmp_path / "b", SWAPPED)
    pkg = _verified(viewed, checked)
    plan = viewed._spec

    def swapped_around_the_plan(package: object) -> object:
        if when == "after the plan":
            planned = plan(package)  # type: ignore[arg-type]
            _swap_for_link(checked, other)
            return planned
        back = _swap_for_link(checked, other)
        try:
            return plan(package)  # type: ignore[arg-type]
        finally:
            back()

    monkeypatch.setattr(viewed, "_spec", swapped_around_the_plan)
    result = viewed.execute(pkg, "t", {})  # type: ignore[arg-type]
    assert result.error is not None, result.to_json()
    assert result.error.code == ErrorCode.INSTALLED_PACKAGE_MODIFIED, result.to_json()


def test_a_grant_swapped_for_a_link_after_the_plan_is_refused(
    viewed: SpliceRuntime, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "ws").mkdir()
    (tmp_path / "outside").mkdir()
    body = "import fs from 'node:fs';\nexport default (i, ctx) => fs.readdirSync(ctx.paths.project + '/ws');\n"
    package = write_package(tmp_path / "a", body, permissions={"fs": {"read": ["ws"]}})
    pkg = _verified(viewed, package)
    plan = viewed._spec

    def swapped_after_the_plan(package: object) -> object:
        planned = plan(package)  # type: ignore[arg-type]
        _swap_for_link(project / "ws", tmp_path / "outside")
        return planned

    monkeypatch.setattr(viewed, "_spec", swapped_after_the_plan)
    result = viewed.execute(pkg, "t", {})  # type: ignore[arg-type]
    assert result.error is not None, result.to_json()
    assert result.error.code == ErrorCode.PERMISSIONS_NOT_GRANTED, result.to_json()


@pytest.mark.parametrize("swapped", ["package", "grant"])
def test_a_swap_race_around_the_start_gives_one_stable_refusal(
    project: Path, tmp_path: Path, swapped: str
) -> None:
    """A thread swaps the package directory (or a granted directory) for a link in a loop
    while the tool is run again and again (guards on: what a user runs): each call either
    runs the checked code on the planned directory or is refused with the one code of what
    changed; never TOOL_CRASHED (nor an exception), never the other package's code."""
    require_os_layer()
    (project / "ws").mkdir()
    (tmp_path / "outside").mkdir()
    perms = {"fs": {"read": ["ws"]}}
    checked = write_package(tmp_path / "a", CHECKED, permissions=perms)
    other = write_package(tmp_path / "b", SWAPPED, permissions=perms)
    runtime = SpliceRuntime(project_root=project, env={}, isolation="require-os")
    pkg = _verified(runtime, checked)
    path, target = (
        (checked, other) if swapped == "package" else (project / "ws", tmp_path / "outside")
    )
    refusal = {
        "package": ErrorCode.INSTALLED_PACKAGE_MODIFIED,
        "grant": ErrorCode.PERMISSIONS_NOT_GRANTED,
    }[swapped]
    stop = threading.Event()

    def swap() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                _swap_for_link(path, target)()

    thread = threading.Thread(target=swap, daemon=True)
    seen: dict[str, int] = {}
    thread.start()
    try:
        # Two calls at a time (each its own process and job directory): the same 120 calls
        # against the swapping thread, in less wall time where there are two cores.
        with ThreadPoolExecutor(2) as calls:
            results = calls.map(lambda _: runtime.execute(pkg, "t", {}), range(120))  # type: ignore[arg-type]
            for result in results:
                key = str(result.error.code) if result.error else f"output {result.output}"
                seen[key] = seen.get(key, 0) + 1
    finally:
        stop.set()
        thread.join()
        runtime.close()
    assert set(seen) <= {"output checked", str(refusal)}, seen
