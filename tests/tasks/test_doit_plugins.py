"""No doit plugin installed next to Splice takes part in its graph (docs/lifecycle.md): a
distribution on the path that registers a ``run`` command, a ``sqlite3`` backend and a
reporter through doit's entry points is never imported by ``splice install``/``sync``."""

from __future__ import annotations

import os
from pathlib import Path

from testing.cli import run_splice

_PLUGIN = """
import os
from pathlib import Path

def _mark(what):
    with open(os.environ["PLUGIN_MARKER"], "a") as f:
        f.write(what + "\\n")

_mark("imported")
from doit.cmd_run import Run as _Run
from doit.dependency import SqliteDB as _SqliteDB
from doit.reporter import ConsoleReporter as _ConsoleReporter

class Run(_Run):
    def execute(self, params, args):
        _mark("command")
        return super().execute(params, args)

class Reporter(_ConsoleReporter):
    desc = "a plugin reporter"

    def __init__(self, *args, **kwargs):
        _mark("reporter")
        super().__init__(*args, **kwargs)

class Backend(_SqliteDB):
    def __init__(self, *args, **kwargs):
        _mark("backend")
        super().__init__(*args, **kwargs)
"""

_ENTRY_POINTS = """[doit.COMMAND]
run = splice_test_plugin:Run

[doit.BACKEND]
sqlite3 = splice_test_plugin:Backend

[doit.REPORTER]
console = splice_test_plugin:Reporter
"""


def _plugin_path(base: Path) -> Path:
    site = base / "site"
    info = site / "splice_test_plugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: splice-test-plugin\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(_ENTRY_POINTS)
    (site / "splice_test_plugin.py").write_text(_PLUGIN)
    return site


def test_doit_plugins_are_never_loaded(tmp_path: Path) -> None:
    site = _plugin_path(tmp_path)
    marker = tmp_path / "marker"
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    env["PLUGIN_MARKER"] = str(marker)
    project = tmp_path / "app"
    project.mkdir()
    assert run_splice("init", cwd=project).code == 0
    (project / "pyproject.toml").write_text('[tool.splice.workspace]\nmembers = ["."]\n')
    for args in (("install",), ("sync",), ("sync", "--check")):
        done = run_splice(*args, cwd=project, env=env)
        assert done.code == 0, (args, done.stderr)
        assert not marker.exists(), (args, marker.read_text())
