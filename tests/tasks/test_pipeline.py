"""``splice_tasks()`` in a real ``dodo.py``, run by the real ``doit`` in a temporary directory:
a plain ``doit`` settles, ``splice:verify`` fails on a tampered file, a monorepo root gets the
workspace tasks, and a directory that is no project fails up front."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from splice_build.project.layout import ProjectLayout
from splice_build.sdk import Splice
from testing.registry_fixtures import new_project
from testing.stat_records import edit_keeping_mtime, forge_clean_record

GREETER = "@acme/greeter"
OTHER = "@acme/other"


def _dodo(directory: Path, call: str) -> None:
    (directory / "dodo.py").write_text(
        "from splice_build.tasks import splice_tasks\n\n\n"
        f"def task_splice():\n    yield from splice_tasks({call})\n",
        encoding="utf-8",
    )


def _doit(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "doit", *args],
        cwd=directory,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _marks(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """task -> ``ran`` (doit's ``.``) or ``up to date`` (doit's ``--``)."""
    marks = {}
    for line in done.stdout.splitlines():
        mark, _, task = line.partition(" ")
        if mark in (".", "--") and task.strip().startswith("splice:"):
            marks[task.strip()] = "ran" if mark == "." else "up to date"
    return marks


SETTLED = {
    "splice:install": "up to date",
    "splice:verify": "up to date",
    "splice:sync": "up to date",
}


def test_a_plain_doit_installs_then_settles(tmp_path: Path, registry: dict) -> None:
    project = new_project(tmp_path / "app", {GREETER: "^1.0.0"})
    _dodo(project, "")
    first = _doit(project)
    assert first.returncode == 0, first.stdout + first.stderr
    assert _marks(first)["splice:install"] == "ran"
    assert ProjectLayout(project).package_dir(GREETER).is_dir()
    second = _doit(project)
    assert second.returncode == 0, second.stdout + second.stderr
    assert _marks(second) == SETTLED


def test_verify_fails_on_a_tampered_file_and_install_repairs_it(
    tmp_path: Path, registry: dict
) -> None:
    project = new_project(tmp_path / "app")
    Splice(project).add([f"{GREETER}@^1.0.0"])
    _dodo(project, "")
    assert _marks(_doit(project)) == SETTLED
    tampered = next(p for p in ProjectLayout(project).package_dir(GREETER).rglob("*.js"))
    tampered.write_text("export default () => 'evil';\n", encoding="utf-8")
    verify = _doit(project, "splice:verify")
    assert verify.returncode == 1
    assert _marks(verify) == {"splice:verify": "ran"}
    assert f".: would restore {GREETER}@1.1.0" in verify.stdout + verify.stderr
    repair = _doit(project)
    assert repair.returncode == 0, repair.stdout + repair.stderr
    assert _marks(repair)["splice:install"] == "ran"
    assert "evil" not in tampered.read_text(encoding="utf-8")
    assert _marks(_doit(project)) == SETTLED


def test_verify_reads_bytes_even_when_the_stat_cache_says_clean(
    tmp_path: Path, registry: dict
) -> None:
    project = new_project(tmp_path / "app")
    Splice(project).add([f"{GREETER}@^1.0.0"])
    Splice(project).install()  # a writing no-op run records what add installed
    _dodo(project, "")
    assert _marks(_doit(project)) == SETTLED
    relative = "tools/hello.js"
    tampered = ProjectLayout(project).package_dir(GREETER) / relative
    text = tampered.read_text(encoding="utf-8")
    edit_keeping_mtime(tampered, text[::-1])
    forge_clean_record(project, GREETER, relative)
    assert _marks(_doit(project, "splice:sync")) == {"splice:sync": "up to date"}  # trusted
    verify = _doit(project, "splice:verify")
    assert verify.returncode == 1, verify.stdout + verify.stderr
    assert f".: would restore {GREETER}@1.1.0" in verify.stdout + verify.stderr


def test_a_monorepo_root_gets_the_workspace_tasks(tmp_path: Path, registry: dict) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.splice.workspace]\nmembers = ["apps/*"]\n', encoding="utf-8"
    )
    new_project(tmp_path / "apps" / "a", {GREETER: "^1.0.0"})
    new_project(tmp_path / "apps" / "b", {OTHER: "^1.0.0"})
    _dodo(tmp_path, 'None, root="."')
    listed = _doit(tmp_path, "list")
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()] == [
        "splice:sync",
        "splice:verify",
    ]  # doit lists them sorted; it runs them in the order they were made
    first = _doit(tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    assert list(_marks(first).items()) == [("splice:sync", "ran"), ("splice:verify", "up to date")]
    for member, package in (("a", GREETER), ("b", OTHER)):
        assert ProjectLayout(tmp_path / "apps" / member).package_dir(package).is_dir()
    settled = _doit(tmp_path)
    assert _marks(settled) == {"splice:verify": "up to date", "splice:sync": "up to date"}


def test_a_directory_that_is_no_project_fails_up_front(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    _dodo(plain, "")
    (plain / "other.py").write_text("", encoding="utf-8")
    done = _doit(plain, "list")
    assert done.returncode == 3
    assert done.stderr.startswith("ERROR: splice_tasks: No splice.json found in")
    assert "(NOT_A_PROJECT)" in done.stderr and "Traceback" not in done.stderr
    assert not (plain / "splice.json").exists() and not (plain / ".splice").exists()


def test_a_workspace_root_without_projects_fails_up_front(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.splice.workspace]\nmembers = ["apps/*"]\n', encoding="utf-8"
    )
    _dodo(tmp_path, 'None, root="."')
    done = _doit(tmp_path, "list")
    assert done.returncode == 3
    assert "No project (splice.json) in the workspace" in done.stderr
    assert "(NOT_A_PROJECT)" in done.stderr and "Traceback" not in done.stderr


def test_a_failure_shows_no_control_character_of_the_checkout(tmp_path: Path) -> None:
    """doit prints a task's failure as it is: a member's name and a ``splice.json`` key come
    from the checkout, and their escape sequences (a window title, a colour) reach doit
    written out, as the CLI shows them."""
    member = tmp_path / "evil\x1b]0;title\x07"
    member.mkdir()
    (member / "splice.json").write_text(
        '{"specVersion": 1, "packages": {"@a/\\u001b[31mred": "1"}}', encoding="utf-8"
    )
    _dodo(tmp_path, 'None, root="."')
    done = _doit(tmp_path, "splice:verify")
    assert done.returncode == 1, done.stdout + done.stderr
    output = done.stdout + done.stderr
    assert "(INVALID_PROJECT)" in output
    assert "\x1b" not in output and "\x07" not in output
    assert "evil\\x1b]0;title\\x07: failed" in output


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ('"sub\\0dir"', "project contains a NUL character"),
        ('b"."', "project must be a text path, not bytes"),
        ('".", root=5', "root must be a path (str or os.PathLike), not int"),
        (
            '".", root="ws\\ud800"',
            "root holds a character no file name can carry (a lone surrogate)",
        ),
        ('".", registry=b"local"', "registry must be a URL or an alias, not bytes"),
        ('".", accept_permissions="no"', "accept_permissions must be True or False, not str"),
    ],
)
def test_an_argument_of_the_wrong_kind_fails_up_front(
    tmp_path: Path, arguments: str, message: str
) -> None:
    """``splice_tasks`` takes its arguments as the CLI takes its flags: a path with a NUL
    (which every lookup fails, so the walk up silently found the project above it), bytes,
    a number, a registry or a consent that is no text or no bool fail every doit command at
    once with the stable code, not a TypeError traceback or a task of another project."""
    new_project(tmp_path)
    _dodo(tmp_path, arguments)
    done = _doit(tmp_path, "list")
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith(f"ERROR: splice_tasks: {message} (USAGE)")
    assert "Traceback" not in done.stderr


def test_a_project_left_out_for_a_write_grant_is_named_when_the_tasks_are_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkout (``packages/evil``) ships a grant record naming the user's
    ``packages/good``: ``splice sync`` warns that it is not synced, but on the old code
    ``splice:verify`` and ``splice:sync`` left it out without a word (both up to date)."""
    import json

    from splice_build.tasks import splice_tasks
    from testing.projects import make_project

    monkeypatch.setenv("SPLICE_HOME", str(tmp_path / "home"))
    root = tmp_path / "ws"
    good = make_project(root / "packages" / "good")
    evil = make_project(root / "packages" / "evil")
    entry = {"root": str(evil), "grant": "../good", "path": str(good), "dev": 1, "ino": 1}
    (evil / ".splice").mkdir()
    (evil / ".splice" / "write-grants.json").write_text(json.dumps({"grants": [entry]}))
    tasks = [t["basename"] for t in splice_tasks(None, root=root)]
    assert tasks == ["splice:sync", "splice:verify"]
    assert capsys.readouterr().err == (
        "warning: packages/good is not synced: it lies in the write grant '../good' of "
        "packages/evil, where a tool may have written it\n"
    )
