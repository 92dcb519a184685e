"""doit's database is a file in ``.splice/``, which a checkout can ship: a saved file state of
any other shape than the checker's own is read as "changed" (tasks/checker.py), and a task
record that is not a JSON object as no record (tasks/loader.py), never a crash. The real
``splice`` runs against a real doit database whose records were rewritten."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from splice_build.project.layout import ProjectLayout
from testing.cli import run_splice
from testing.registry_fixtures import new_project


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


@pytest.mark.parametrize("record", ["[]", '"x"', "7", "not json", "[" * 100_000])
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
