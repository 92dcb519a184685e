"""A no-op answer must be the graph's answer even when what changed is outside the files the
recorded state compares (tasks/noop.py, docs/lifecycle.md#the-no-op-fast-path).

The graph's ``verify`` refuses a package whose ``fs`` grant reaches the project's own state
or ``SPLICE_HOME`` (install/installed.py, ``refuse_project_state``), judged on the real path
of each entry and on the home of this run. Neither is in ``splice.json``, ``splice.lock`` or
the installed files: a grant ``out`` that became a link to ``.splice``, or a ``SPLICE_HOME``
moved inside a granted directory, changed nothing the recorded no-op state compared. So
``splice install`` reported the package kept (exit 0) and ``splice sync --check`` said "ok",
where the graph refuses it (``INVALID_MANIFEST``, "would restore") and ``splice run`` will
not run it (``PERMISSIONS_NOT_GRANTED``).

The graph's check of a kept package's signer under ``requireSignatures`` reads it, for the
embedded registry (whose lock entries pin none), from the signatures stored with the cached
artifact in ``SPLICE_HOME``. Under another home (or with those signatures removed) the graph
refuses to keep it (``SIGNATURE_REQUIRED``), while the recorded state answered "kept": no
state is recorded for such a package now, so the graph always answers for it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpliceError
from splice_build.project.home import SpliceHome
from splice_build.project.workspace import find_workspace
from splice_build.sdk import Splice
from splice_build.tasks.noop import _still_derived
from splice_build.tasks.sync import SyncOptions, SyncResult, sync_workspace
from testing.hostile_registry import signed_store
from testing.registry_fixtures import embedded_store, new_project, publish

PACKAGE = "@acme/files"
GRANT = {"fs": {"read": ["data"], "write": ["out"]}}


def _recorded(project: Path, home: Path) -> Splice:
    """The SDK of ``project`` once a no-op install answers from the recorded state."""
    splice = Splice(project, home=home)
    for _ in range(3):
        splice.install()
        if splice.last_tasks is not None and splice.last_tasks.executed == []:
            return splice
    raise AssertionError("BUG: the no-op state was never recorded")


def _no_op_installs(project: Path, home: Path) -> list[list[str]]:
    """The tasks each of three no-op installs executed."""
    splice = Splice(project, home=home)
    executed = []
    for _ in range(3):
        splice.install()
        assert splice.last_tasks is not None
        executed.append(splice.last_tasks.executed)
    return executed


def _check(project: Path, home: Path) -> SyncResult:
    return sync_workspace(
        find_workspace(project, root=project),
        home=SpliceHome(home),
        env=dict(os.environ),
        options=SyncOptions(check=True),
    )


@pytest.mark.skipif(os.name == "nt", reason="no stat cache on Windows")
def test_a_grant_that_now_reaches_project_state_goes_to_the_graph(tmp_path: Path) -> None:
    home = Path(os.environ["SPLICE_HOME"])
    publish(embedded_store(home), tmp_path / "work", name="files", permissions=GRANT)
    project = new_project(tmp_path / "p", {PACKAGE: "^1.0.0"})
    (project / "data").mkdir()
    (project / "out").mkdir()
    Splice(project, home=home).install(accept_permissions=True)
    _recorded(project, home)

    # A SPLICE_HOME inside the granted "data": the graph's check names it.
    inside = project / "data" / "home"
    [outcome] = _check(project, inside).projects
    assert [(c.package_id, c.action) for c in outcome.changes] == [(PACKAGE, "restore")]
    assert "SPLICE_HOME" in outcome.changes[0].reason
    assert not _check(project, home).projects[0].changes  # the home it was recorded with

    # "out" made a link to .splice: a write grant over the project's state.
    (project / "out").rmdir()
    (project / "out").symlink_to(".splice")
    [outcome] = _check(project, home).projects
    assert [(c.package_id, c.action) for c in outcome.changes] == [(PACKAGE, "restore")]
    with pytest.raises(SpliceError) as refused:
        Splice(project, home=home).install()
    assert refused.value.code is ErrorCode.INVALID_MANIFEST


@pytest.mark.skipif(os.name == "nt", reason="no stat cache on Windows")
def test_a_signer_known_only_to_splice_home_is_never_answered_for(tmp_path: Path) -> None:
    home = Path(os.environ["SPLICE_HOME"])
    signed = signed_store(embedded_store(home), tmp_path / "work", namespace="sealed")
    project = tmp_path / "p"
    project.mkdir()
    (project / "splice.json").write_text(
        json.dumps(
            {
                "specVersion": 1,
                "packages": {signed.package_id: "1.0.0"},
                "requireSignatures": ["sealed"],
            }
        )
    )
    Splice(project, home=home).install()
    assert all(executed for executed in _no_op_installs(project, home))  # the graph, each time
    with pytest.raises(SpliceError) as refused:
        Splice(project, home=tmp_path / "other-home").install()
    assert refused.value.code is ErrorCode.SIGNATURE_REQUIRED


@pytest.mark.skipif(os.name == "nt", reason="no stat cache on Windows")
def test_a_removed_files_digest_record_goes_to_the_graph(tmp_path: Path) -> None:
    """The record of the files digest this machine derived from the artifact lives in
    ``SPLICE_HOME`` (install/derived.py), which no state compares: with it removed (a cache
    cleared), the recorded state answered "kept" while ``splice run`` refused the package
    (``NOT_INSTALLED``, hint ``splice install``), and ``splice install`` never derived it
    again. The graph runs, derives it from the cached artifact, and the tool runs."""
    home = Path(os.environ["SPLICE_HOME"])
    publish(embedded_store(home), tmp_path / "work")
    project = new_project(tmp_path / "p", {"@acme/greeter": "^1.0.0"})
    splice = _recorded(project, home)
    for record in SpliceHome(home).files_digest_dir.iterdir():
        record.unlink()
    with pytest.raises(SpliceError) as refused:
        splice.run("greeter.hello", {"name": "x"})
    assert refused.value.code is ErrorCode.NOT_INSTALLED
    splice.install()
    assert splice.last_tasks is not None and splice.last_tasks.executed != []
    assert splice.run("greeter.hello", {"name": "x"}).output == {"message": "Hello, x."}


def test_a_files_digest_record_is_looked_for_once_per_run(tmp_path: Path) -> None:
    """A workspace's members share packages (bench/bench_sync.py's 30 × 3 name 20 records):
    a no-op sync looks for each record once, not once per member naming it, and one not
    there fails the member (tasks/noop.py ``_still_derived``)."""
    (tmp_path / "a").write_text("")
    found: set[str] = set()
    assert _still_derived(str(tmp_path), ["a"], found) and found == {"a"}
    (tmp_path / "a").unlink()
    assert _still_derived(str(tmp_path), ["a"], found)  # found by this run already
    assert not _still_derived(str(tmp_path), ["a", "b"], found)
    assert not _still_derived(str(tmp_path), ["a"], set())


@pytest.mark.skipif(os.name == "nt", reason="no stat cache on Windows")
def test_the_projects_above_grants_are_looked_for_once_per_run(tmp_path: Path) -> None:
    """Members share the directories above their grants (a workspace's ``packages/``, its
    root and theirs): a no-op sync asks each once whether it holds splice.json, for all
    members (tasks/noop.py), and a grant reaching a member's state is still refused."""
    from splice_build.spec.project_state import ProjectState, RunMemo

    packages = tmp_path / "ws" / "packages"
    for name in ("a", "b", "c"):
        (packages / name / "data").mkdir(parents=True)
        (packages / name / "splice.json").write_text("{}")
    (packages / "b" / "up").symlink_to("../a/.splice")
    memo = RunMemo()
    assert ProjectState(packages / "c", memo=memo).fs_problem("data") is None
    assert memo._holds[packages] is False and packages / "c" not in memo._holds  # its own
    problem = ProjectState(packages / "b", memo=memo).fs_problem("up")
    assert problem is not None and f"of the project {packages / 'a'}" in problem
    assert memo._holds[packages / "a"] is True


@pytest.mark.skipif(os.name == "nt", reason="no stat cache on Windows")
def test_an_accepted_link_out_of_the_project_is_answered_for_while_the_record_holds_it(
    tmp_path: Path,
) -> None:
    """A grant that a link takes out of the project sent every no-op install and sync
    through the graph, accepted or not. The fast path now asks the consent record, as the
    graph does: accepted leading where it leads now, the state answers; retargeted, or with
    the record gone, the graph runs and asks."""
    from splice_build.install.consent_record import record_path

    home = Path(os.environ["SPLICE_HOME"])
    publish(embedded_store(home), tmp_path / "work", name="files", permissions=GRANT)
    project = new_project(tmp_path / "p", {PACKAGE: "^1.0.0"})
    (tmp_path / "notes").mkdir()
    (tmp_path / "keys").mkdir()
    (project / "data").symlink_to(tmp_path / "notes")
    (project / "out").mkdir()
    Splice(project, home=home).install(accept_permissions=True)
    _recorded(project, home)
    assert not _check(project, home).projects[0].changes
    (project / "data").unlink()
    (project / "data").symlink_to(tmp_path / "keys")
    [outcome] = _check(project, home).projects
    assert [(c.package_id, c.action) for c in outcome.changes] == [(PACKAGE, "keep")]
    (project / "data").unlink()
    (project / "data").symlink_to(tmp_path / "notes")
    record_path(home, project).unlink()
    with pytest.raises(SpliceError) as asked:
        Splice(project, home=home).install()
    assert asked.value.code is ErrorCode.PERMISSIONS_NOT_ACCEPTED
