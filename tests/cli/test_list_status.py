"""`splice list` exits 1 when a package is missing or invalid, and says `splice install`
fixes it (docs/cli.md#projects): a real project on the embedded registry, tampered with."""

from __future__ import annotations

import shutil
from pathlib import Path

from splice_build.project.layout import ProjectLayout
from splice_build.sdk import Splice
from testing.cli import run_splice

EXAMPLE = "@splice/example"


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    for words in (["init"], ["add", EXAMPLE]):
        done = run_splice(*words, cwd=project, timeout=300)
        assert done.code == 0, done.stderr
    return project


def _statuses(project: Path) -> tuple[int, list[str]]:
    done = run_splice("list", "--json", cwd=project)
    return done.code, [row["status"] for row in done.json()]


def test_list_exits_1_with_the_install_hint_until_install_repairs(tmp_path: Path) -> None:
    project = _project(tmp_path)
    assert _statuses(project) == (0, ["ok"])
    package = ProjectLayout(project).package_dir(EXAMPLE)

    (package / "SKILL.md").write_text("# modified\n")
    assert _statuses(project) == (1, ["invalid"])
    human = run_splice("list", cwd=project)
    assert human.code == 1
    version = run_splice("list", "--json", cwd=project).json()[0]["version"]
    assert human.stdout == f"{EXAMPLE}  {version}  (invalid: modified)\n"  # not "… or not granted"
    assert "splice install" in human.stderr and "splice add" not in human.stdout + human.stderr

    shutil.rmtree(package)
    assert _statuses(project) == (1, ["missing"])
    human = run_splice("list", cwd=project)
    assert human.code == 1 and "missing" in human.stdout and "splice install" in human.stderr
    # nothing here to restore (a fresh clone's case): it said "to restore the verified copy"
    missing = run_splice("list", "--json", cwd=project).json()[0]
    assert missing["hint"] == "Run `splice install` to install what splice.lock pins."

    assert run_splice("install", cwd=project, timeout=300).code == 0
    assert _statuses(project) == (0, ["ok"])


def test_a_package_only_in_splice_json_is_missing(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "splice.lock").unlink()
    shutil.rmtree(ProjectLayout(project).package_dir(EXAMPLE))
    assert _statuses(project) == (1, ["missing"])


def test_the_text_gives_the_hint_of_a_refusal_splice_install_does_not_mend(
    tmp_path: Path,
) -> None:
    """A project in a directory every user may write is refused at every call, and only its
    user can close that directory (docs/security.md#who-may-write-the-code). The text said
    "run `splice install` ... restore invalid ones", which changes nothing there; ``--json``
    had the right hint all along."""
    with Splice.init(tmp_path / "project") as splice:  # in-process: a CLI add costs 2 s
        splice.add([EXAMPLE])
    tmp_path.chmod(0o777)
    project = tmp_path / "project"
    human = run_splice("list", cwd=project)
    assert human.code == 1
    assert f"chmod +t {tmp_path}" in human.stderr
    assert "splice install" not in human.stderr
