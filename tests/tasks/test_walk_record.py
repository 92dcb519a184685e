"""A no-op sync keeps the walks below grants it trusted (project/walk_record.py) for the next
one, which trusts each only while every directory it listed has the device, inode and change
time recorded (spec/project_below.py): a project a tool makes inside a grant after the record
is found by the next sync, which refuses the package as the graph does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from splice_build.project.home import SpliceHome
from splice_build.project.walk_record import RECORD_FILE, read_record
from splice_build.project.workspace import find_workspace
from splice_build.sdk import Splice
from splice_build.spec import project_below
from splice_build.tasks.sync import SyncOptions, sync_workspace
from testing.registry_fixtures import embedded_store, new_project, publish

PACKAGE = "@acme/files"


def _installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path, Callable[[], bool]]:
    """A project whose package is granted ``fs.read ["data"]`` and ``fs.write ["out"]``
    (``data/sub`` made, ``out`` not yet), its SPLICE_HOME, and an in-process sync of it as a
    new process makes."""
    monkeypatch.setattr(project_below, "RECENT_NS", -(10**18))  # every listing old enough
    home = Path(os.environ["SPLICE_HOME"])
    grant = {"fs": {"read": ["data"], "write": ["out"]}}
    publish(embedded_store(home), tmp_path / "work", name="files", permissions=grant)
    project = Path(os.path.realpath(new_project(tmp_path / "p", {PACKAGE: "^1.0.0"})))
    (project / "data" / "sub").mkdir(parents=True)
    Splice(project, home=home).install(accept_permissions=True)
    workspace = find_workspace(project, root=project)

    def sync() -> bool:
        monkeypatch.setattr(project_below, "_remembered", {})  # as a new process
        options = SyncOptions()
        return sync_workspace(workspace, home=SpliceHome(home), env={}, options=options).ok

    return project, home, sync


def _refused_sync(project: Path, home: Path) -> str:
    """The detail of the real CLI's ``splice sync`` refusing ``project`` (INVALID_MANIFEST)."""
    ran = subprocess.run(
        [sys.executable, "-m", "splice_build", "sync", "--json", "--root", str(project)],
        env={**os.environ, "SPLICE_HOME": str(home)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 1, ran.stderr
    [outcome] = json.loads(ran.stdout)["projects"]
    assert outcome["error"]["code"] == "INVALID_MANIFEST"
    return outcome["error"]["details"][0]


@pytest.mark.skipif(os.name == "nt", reason="no stat cache on Windows")
def test_a_project_made_in_a_grant_after_a_recorded_walk_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, home, sync = _installed(tmp_path, monkeypatch)
    (project / "out").mkdir()
    assert sync() and sync()  # the second is a no-op, which keeps its walks
    assert set(read_record(project)[0]) == {
        (str(project / "data"), False),
        (str(project / "out"), True),
    }
    assert (project / ".splice" / RECORD_FILE).stat().st_mode & 0o777 == 0o600
    listed: list[str] = []
    scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path: listed.append(path) or scandir(path))
    assert sync()
    assert [
        p for p in listed if str(p).startswith((str(project / "data"), str(project / "out")))
    ] == []
    monkeypatch.setattr(os, "scandir", scandir)

    time.sleep(0.02)  # past the kernel's clock tick, which change times are kept at
    new_project(project / "data" / "sub" / ".cache")  # a tool's, in a directory listed before
    refused = _refused_sync(project, home)
    assert f"would include the project {project / 'data' / 'sub' / '.cache'}" in refused


@pytest.mark.skipif(os.name == "nt", reason="no stat cache on Windows")
def test_a_walk_that_looked_only_for_projects_never_answers_for_a_write_grant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read grant's walk looks for ``splice.json`` alone, a write grant's for ``.git``
    too (spec/project_below.py): after the no-op recorded the walk of the read grant
    ``data``, holding a submodule's working tree, the write grant ``out`` was made a link to
    it (nothing in ``data`` changed), and the next sync refuses it as the graph does."""
    project, home, sync = _installed(tmp_path, monkeypatch)
    (project / "data" / "sub" / ".git").write_text("gitdir: ../../.git/modules/sub\n")
    assert sync() and sync()
    assert set(read_record(project)[0]) == {(str(project / "data"), False)}
    (project / "out").symlink_to("data")
    refused = _refused_sync(project, home)
    assert f"would include the git repository of {project / 'data' / 'sub'}" in refused


def test_a_record_of_another_shape_is_not_read(tmp_path: Path) -> None:
    state = tmp_path / ".splice"
    state.mkdir()
    entry = [str(tmp_path), 1, 2, 3]
    for body in (
        {"version": 4, "indexes": [], "walks": [[str(tmp_path), False, [entry[:3]]]]},
        {"version": 4, "indexes": [], "walks": [[str(tmp_path), False, [[*entry[:3], "3"]]]]},
        {"version": 4, "indexes": [], "walks": [[str(tmp_path), False, []]]},
        {
            "version": 4,
            "indexes": [],
            "walks": [[str(tmp_path), 0, [entry]]],
        },  # looked for .git, or not?
        {"version": 4, "indexes": [], "walks": [[str(tmp_path), [entry]]]},
        {"version": 2, "walks": [[str(tmp_path), True, [entry]]]},  # saw no bare repository
        {"version": 3, "walks": [[str(tmp_path), True, [entry]]]},  # kept no index read
        {"version": 4, "walks": [], "indexes": [["i", [1, 2, 3, 4], []]]},
        {"version": 4, "walks": [], "indexes": [["i", [1, 2, 3, 4, 5], [1]]]},
        {"version": 1, "walks": {str(tmp_path): [entry]}},  # the walks of version 1 never said
        {
            "version": 4,
            "indexes": [],
            "walks": [["t", True, [entry]]],
        },  # a walk lists its own top first
        [],
    ):
        (state / RECORD_FILE).write_text(json.dumps(body))
        assert read_record(tmp_path)[0] == {}
    top = str(tmp_path)
    (state / RECORD_FILE).write_text(
        json.dumps({"version": 4, "indexes": [], "walks": [[top, True, [entry]]]})
    )
    (state / RECORD_FILE).chmod(0o600)
    assert read_record(tmp_path)[0] == {(top, True): (tuple(entry),)}
    (state / RECORD_FILE).chmod(0o620)  # a record another user may write is not trusted
    assert read_record(tmp_path)[0] == {}


@pytest.mark.skipif(os.name == "nt" or os.geteuid() != 0, reason="makes a file of another user")
def test_a_record_another_user_made_is_not_read(tmp_path: Path) -> None:
    """Another user can ``stat`` this user's directories, so a walk of theirs that leaves out
    the directory holding a project would pass every check of what it lists."""
    (tmp_path / ".splice").mkdir()
    record = tmp_path / ".splice" / RECORD_FILE
    record.write_text(
        json.dumps(
            {
                "version": 4,
                "indexes": [],
                "walks": [[str(tmp_path), False, [[str(tmp_path), 1, 2, 3]]]],
            }
        )
    )
    record.chmod(0o600)
    os.chown(record, 65534, 65534)
    assert read_record(tmp_path)[0] == {}


@pytest.mark.skipif(os.name == "nt", reason="no stat cache on Windows")
def test_a_submodule_added_to_the_index_after_a_recorded_read_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The no-op keeps the read of the git index with its walks: the next one ``stat``s the
    index and reads it no more (main: a 50,000-file index holding a submodule read in every
    process, ~60 ms), and a submodule added to the index since, inside the write grant
    ``out``, is refused by the next sync as the graph refuses it."""
    from splice_build.spec import git_links

    project, home, sync = _installed(tmp_path, monkeypatch)
    (project / "out" / "lib").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "add", "splice.json"], cwd=project, check=True)
    monkeypatch.setattr(git_links, "RECENT_NS", -(10**18))
    reads: list[object] = []
    read = git_links.read_regular_file_and_stat
    monkeypatch.setattr(
        git_links, "read_regular_file_and_stat", lambda *a, **k: reads.append(a) or read(*a, **k)
    )

    def fresh_sync() -> bool:
        monkeypatch.setattr(git_links, "_remembered", {})  # as a new process
        return sync()

    assert fresh_sync() and fresh_sync()
    index = str(project / ".git" / "index")
    assert list(read_record(project)[1]) == [index]
    reads.clear()
    assert fresh_sync()
    assert reads == []  # main: the index read again
    time.sleep(0.02)  # past the kernel's clock tick, which change times are kept at
    link = f"160000,{'1' * 40},out/lib"
    subprocess.run(["git", "update-index", "--add", "--cacheinfo", link], cwd=project, check=True)
    refused = _refused_sync(project, home)
    assert f"would include {project / 'out' / 'lib'}, a submodule of the git repository" in refused


@pytest.mark.node
@pytest.mark.skipif(os.name == "nt", reason="no stat cache on Windows")
def test_a_run_trusts_the_record_and_refuses_a_repository_made_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new process's ``splice run`` checks its grants against the no-op's record (main:
    every directory below every grant listed again, at each run); a ``.git`` a tool made in
    the write grant ``out`` after the record is found, and nothing runs."""
    from splice_build.errors import ErrorCode, SpliceError

    project, home, sync = _installed(tmp_path, monkeypatch)
    (project / "out" / "sub").mkdir(parents=True)
    assert sync() and sync()
    listed: list[str] = []
    scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path: listed.append(path) or scandir(path))
    monkeypatch.setattr(project_below, "_remembered", {})  # as a new process
    with Splice(project, home=home) as splice:
        assert splice.run("files.hello", {"name": "x"}).ok
    grants = (str(project / "data"), str(project / "out"))
    assert [p for p in listed if str(p).startswith(grants)] == []  # main: both listed
    time.sleep(0.02)  # past the kernel's clock tick, which change times are kept at
    (project / "out" / "sub" / ".git").mkdir()
    monkeypatch.setattr(project_below, "_remembered", {})
    with Splice(project, home=home) as splice, pytest.raises(SpliceError) as refused:
        splice.run("files.hello", {"name": "x"})
    assert refused.value.code is ErrorCode.PERMISSIONS_NOT_GRANTED
    assert f"would include the git repository of {project / 'out' / 'sub'}" in " ".join(
        refused.value.details
    )
