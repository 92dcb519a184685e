"""doit's database is a file in ``.splice/``, which a checkout can ship: a saved file state of
any other shape than the checker's own is read as "changed" (tasks/checker.py), and a task
record that is not a JSON object as no record (tasks/loader.py), never a crash. The real
``splice`` runs against a real doit database whose records were rewritten."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from splice_build.project.layout import ProjectLayout
from testing.cli import run_splice
from testing.registry_fixtures import embedded_store, new_project, publish
from testing.workspaces import sync_in_place


@pytest.mark.parametrize("state", ["x", ["1", 2, "x"], [1, 2], 7, None, {"a": 1}])
def test_a_forged_file_state_in_the_graph_database_is_not_a_crash(
    tmp_path: Path, state: object
) -> None:
    project = new_project(tmp_path / "p")
    layout = ProjectLayout(project)
    first = run_splice("install", cwd=project)
    assert first.code == 0, first.stderr
    key = str(layout.project_file)
    with sqlite3.connect(layout.graph_db) as db:
        (data,) = db.execute("select task_data from doit where task_id = 'lock'").fetchone()
        saved = json.loads(data)
        assert key in saved, saved  # the checker's state of splice.json, to be forged
        saved[key] = state
        db.execute("update doit set task_data = ? where task_id = 'lock'", (json.dumps(saved),))
    layout.stat_cache.unlink()  # no fast path: the graph runs
    os.utime(layout.project_file, ns=(1, 1))  # another mtime: the checker looks at the state
    for _ in range(2):
        done = run_splice("--json", "install", cwd=project)
        assert done.code == 0, done.stdout + done.stderr
        assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "record",
    ["[]", '"x"', "7", "not json", "[" * 100_000, '{"deps:": [["x"]]}'],
)
def test_a_forged_task_record_in_the_graph_database_is_not_a_crash(
    tmp_path: Path, record: str
) -> None:
    project = new_project(tmp_path / "p")
    layout = ProjectLayout(project)
    first = run_splice("install", cwd=project)
    assert first.code == 0, first.stderr
    with sqlite3.connect(layout.graph_db) as db:
        db.execute("update doit set task_data = ?", (record,))
    layout.stat_cache.unlink()  # no fast path: the graph runs
    for _ in range(2):
        done = run_splice("--json", "install", cwd=project)
        assert done.code == 0, done.stdout + done.stderr
        assert "Traceback" not in done.stderr


def test_a_shipped_record_marking_the_tasks_ignored_skips_none(tmp_path: Path) -> None:
    """doit skips a task whose record holds ``"ignore:"`` (what ``doit ignore`` writes): a
    checkout's database so marked made ``splice install`` say "Nothing to install:
    splice.json has no packages" and leave the installed tool it had rewritten in place. Only
    the fields these tasks write are read (tasks/loader.py ``_written_here``)."""
    home = Path(os.environ["SPLICE_HOME"])
    publish(embedded_store(home), tmp_path / "work")
    project = new_project(tmp_path / "p", {"@acme/greeter": "^1.0.0"})
    layout = ProjectLayout(project)
    registry = {"SPLICE_REGISTRY": "embedded:"}
    assert run_splice("install", cwd=project, env=registry).code == 0
    tool = layout.package_dir("@acme/greeter") / "tools" / "hello.js"
    original = tool.read_bytes()
    tool.chmod(0o644)
    tool.write_bytes(original + b"// rewritten\n")
    with sqlite3.connect(layout.graph_db) as db:
        db.execute("update doit set task_data = ?", ('{"ignore:": "1"}',))
    layout.stat_cache.unlink()  # no fast path: the graph runs
    done = run_splice("install", cwd=project, env=registry)
    assert done.code == 0, done.stdout + done.stderr
    assert "Nothing to install" not in done.stdout
    assert tool.read_bytes() == original


@pytest.mark.parametrize("command", [["install"], ["sync"]])
def test_a_directory_beside_the_graph_database_is_not_a_crash(
    tmp_path: Path, command: list[str]
) -> None:
    """SQLite keeps a write-ahead log and its index beside a database: a checkout shipping
    ``.splice/graph.sqlite3-wal/`` (``sync.sqlite3-wal/`` for a sync) as a directory made
    every open fail, and the install an ``INTERNAL_ERROR``. The database only caches file
    states: it is started afresh, with its companions."""
    project = new_project(tmp_path / "p")
    database = "graph.sqlite3" if command == ["install"] else "sync.sqlite3"
    (project / ".splice" / f"{database}-wal").mkdir(parents=True)
    for _ in range(2):
        done = run_splice("--json", *command, cwd=project)
        assert done.code == 0, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
    assert not (project / ".splice" / f"{database}-wal").is_dir()


@pytest.mark.parametrize("command", [["install"], ["sync"]])
def test_sql_a_shipped_database_holds_is_never_run(tmp_path: Path, command: list[str]) -> None:
    """SQLite runs what a database's schema says: a checkout's ``.splice/graph.sqlite3``
    (``sync.sqlite3``) with a trigger on doit's table holding a recursive query that never
    ends made ``splice install`` spin at full CPU for as long as it was let (610 s, SIGTERM
    at 30 s did not stop it; SIGKILL did). A database holding anything but doit's table is
    started afresh: here the trigger's own table shows whether it ran."""
    project = new_project(tmp_path / "p")
    database = project / ".splice" / ("graph.sqlite3" if command == ["install"] else "sync.sqlite3")
    database.parent.mkdir()
    with sqlite3.connect(database) as db:
        db.executescript(
            "create table doit (task_id text not null primary key, task_data json);"
            "create table ran (n);"
            "create trigger t after insert on doit begin insert into ran values (1); end;"
        )
    done = run_splice("--json", *command, cwd=project)
    assert done.code == 0, done.stdout + done.stderr
    with sqlite3.connect(database) as db:
        names = sorted(name for (name,) in db.execute("select name from sqlite_master"))
    assert names == ["doit", "sqlite_autoindex_doit_1"]


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="opens the database as another user (root: setpriv)",
)
@pytest.mark.parametrize("made_before", [False, True])
def test_another_user_cannot_open_the_graph_database(made_before: bool) -> None:
    """SQLite's read lock asks only for read access, and the databases were 0644: uid 65534
    held a read transaction open on a team's ``.splice/graph.sqlite3`` (real users) and the
    member's ``splice add`` ended INTERNAL_ERROR, "database is locked". They are made 0600
    (0660 in a team's checkout), and one made 0644 before is made anew: its inode may be
    held."""
    top = Path(tempfile.mkdtemp(prefix="splice-db-"))
    try:
        top.chmod(0o755)
        project = new_project(top / "p")
        layout = ProjectLayout(project)
        databases = [layout.graph_db, layout.state_dir / "sync.sqlite3"]
        _run_both_graphs(project)
        if made_before:
            for db in databases:
                db.chmod(0o644)
            _run_both_graphs(project)
        assert {db.name: stat.S_IMODE(db.stat().st_mode) for db in databases} == {
            db.name: 0o600 for db in databases
        }
        nobody = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]
        opened = [
            subprocess.run([*nobody, "head", "-c1", str(db)], check=False) for db in databases
        ]
        assert [done.returncode for done in opened] == [1, 1]
    finally:
        shutil.rmtree(top)


def _run_both_graphs(project: Path) -> None:
    """``splice install`` (``.splice/graph.sqlite3``) and ``splice sync``
    (``.splice/sync.sqlite3``) of ``project``, each running its graph."""
    stat_cache = ProjectLayout(project).stat_cache
    assert run_splice("install", cwd=project).code == 0
    stat_cache.unlink()  # no fast path: the graph runs
    assert sync_in_place(project).ok
