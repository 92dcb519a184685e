"""Finding a workspace's projects, and editing [tool.splice.workspace] without losing a byte."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpliceError
from splice_build.project.workspace import add_member, find_workspace, remove_member
from testing.cli import run_splice
from testing.registry_fixtures import new_project

ODD_PYPROJECT = """\
# A hand-written file: comments, odd spacing and quoting must survive.
[project]
name   =  "demo"      # two spaces before '='
version = '1.0'

[tool.splice.workspace]
# the libraries and the services
members = [
    "packages/*",   # every library
    'services/**',
]
exclude=["services/legacy"]  # retired

[tool.other]
answer = 42
"""


def _labels(root: Path, start: Path | None = None) -> list[str]:
    workspace = find_workspace(start or root)
    return [workspace.label(m) for m in workspace.members]


def test_pyproject_members_and_exclude(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(ODD_PYPROJECT)
    for rel in ("packages/a", "packages/b/nested", "services/x/y", "services/legacy", "other/c"):
        new_project(tmp_path / rel)
    (tmp_path / "packages" / "no-project").mkdir()
    assert _labels(tmp_path, tmp_path / "packages" / "a") == [
        "packages/a",
        "packages/b/nested",  # a matched directory includes its subdirectories
        "services/x/y",
    ]
    assert find_workspace(tmp_path).source == "pyproject"


def test_without_pyproject_git_decides(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("build/\n")
    for rel in (".", "apps/web", "build/copy", "node_modules/x"):
        new_project(tmp_path / rel)
    (tmp_path / "node_modules" / ".gitignore").write_text("*\n")
    workspace = find_workspace(tmp_path / "apps" / "web")
    assert workspace.source == "git"
    assert workspace.root == tmp_path
    assert [workspace.label(m) for m in workspace.members] == [".", "apps/web"]


def test_without_git_every_visible_project(tmp_path: Path) -> None:
    for rel in ("a", "b/c", ".hidden/d", "node_modules/e"):
        new_project(tmp_path / rel)
    workspace = find_workspace(tmp_path, root=tmp_path)
    assert workspace.source == "walk"
    assert [workspace.label(m) for m in workspace.members] == ["a", "b/c"]


def test_an_empty_workspace_is_not_a_project(tmp_path: Path) -> None:
    with pytest.raises(SpliceError) as info:
        find_workspace(tmp_path, root=tmp_path)
    assert info.value.code is ErrorCode.NOT_A_PROJECT


def test_workspace_list_of_an_empty_workspace_is_an_empty_list(tmp_path: Path) -> None:
    # It was NOT_A_PROJECT (exit 1), as sync is: a listing has nothing to fail on.
    listed = run_splice("--json", "workspace", "list", cwd=tmp_path)
    assert listed.code == 0, listed.stderr
    assert listed.json() == {"root": str(tmp_path), "source": "walk", "members": []}
    said = run_splice("workspace", "list", cwd=tmp_path)
    assert (said.code, said.stdout) == (
        0,
        f"No project (splice.json) in the workspace at {tmp_path}: `splice init` makes one, "
        "`splice workspace add <dir>` names one.\n",
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            '[tool.splice.workspace]\nmemebers = ["a"]\n',
            "[tool.splice.workspace] has no key 'memebers' (did you mean 'members'?): it holds "
            "only members, exclude",
        ),
        (
            '[tool.splice.workspce]\nmembers = ["a"]\n',
            "[tool.splice] has no key 'workspce' (did you mean 'workspace'?): it holds only "
            "workspace",
        ),
    ],
)
def test_a_misspelt_workspace_key_is_named(tmp_path: Path, text: str, problem: str) -> None:
    """``memebers`` was read as no members (sync: NOT_A_PROJECT "No project in the
    workspace") and ``[tool.splice.workspce]`` as no table (every project a member)."""
    (tmp_path / "pyproject.toml").write_text(text)
    new_project(tmp_path / "a")
    with pytest.raises(SpliceError) as info:
        find_workspace(tmp_path)
    assert info.value.code is ErrorCode.INVALID_CONFIG
    assert info.value.message == f"{tmp_path / 'pyproject.toml'} is invalid: {problem}"


def test_add_then_remove_keeps_every_other_byte(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(ODD_PYPROJECT)
    (tmp_path / "apps" / "web").mkdir(parents=True)
    assert add_member(tmp_path, tmp_path / "apps" / "web") is True
    added = path.read_text()
    assert added.replace('    "apps/web",\n', "") == ODD_PYPROJECT
    assert add_member(tmp_path, tmp_path / "apps" / "web") is False
    assert remove_member(tmp_path, tmp_path / "apps" / "web") == "removed"
    assert path.read_bytes() == ODD_PYPROJECT.encode()


def test_removing_a_glob_matched_member_excludes_it(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(ODD_PYPROJECT)
    assert remove_member(tmp_path, tmp_path / "packages" / "a") == "excluded"
    assert path.read_text() == ODD_PYPROJECT.replace(
        'exclude=["services/legacy"]', 'exclude=["services/legacy", "packages/a"]'
    )
    assert remove_member(tmp_path, tmp_path / "packages" / "a") == "absent"
    (tmp_path / "packages" / "a").mkdir(parents=True)
    assert add_member(tmp_path, tmp_path / "packages" / "a") is True  # un-excluded, listed
    assert 'exclude=["services/legacy"]' in path.read_text()
    # its entry goes, and packages/* still matching it, it is excluded again (docs/monorepo.md:
    # removed from members was reported while it stayed a member)
    assert remove_member(tmp_path, tmp_path / "packages" / "a") == "excluded"
    assert path.read_text() == ODD_PYPROJECT.replace(
        'exclude=["services/legacy"]', 'exclude=["services/legacy", "packages/a"]'
    )


def test_a_directory_removed_or_added_is_that_directory_and_no_other(tmp_path: Path) -> None:
    """A name is written as a literal pattern: ``[a]``, ``*``, ``?``, a leading ``!`` or ``#``,
    a backslash or a space were read as pattern syntax, and a top-level name (no slash) was
    matched at any depth, so ``remove`` excluded other members and kept the one named."""
    names = ["[a]", "*", "?", "!x", "#x", "a b", "x ", "a\\b", "{a,b}"]
    projects = [
        "a",
        "b",
        "packages/a",
        "packages/b",
        "packages/x",
        *[f"packages/{n}" for n in names],
    ]
    for project in projects:
        (tmp_path / project).mkdir(parents=True)
        (tmp_path / project / "splice.json").write_text("{}")
    path = tmp_path / "pyproject.toml"

    def members() -> set[str]:
        found = find_workspace(tmp_path, root=tmp_path).members
        return {m.relative_to(tmp_path).as_posix() for m in found}

    for name in ["a", *[f"packages/{n}" for n in names]]:
        path.write_text('[tool.splice.workspace]\nmembers = ["**"]\n')
        assert remove_member(tmp_path, tmp_path / name) == "excluded", name
        assert members() == set(projects) - {name}, name
        path.write_text("[tool.splice.workspace]\nmembers = []\n")
        assert add_member(tmp_path, tmp_path / name) is True
        assert members() == {name}, name
        assert remove_member(tmp_path, tmp_path / name) == "removed", name
        assert "members = []" in path.read_text(), name
    # an entry as earlier versions wrote it (unescaped, unanchored) goes as it went then
    path.write_text('[tool.splice.workspace]\nmembers = ["a", "/b"]\n')
    assert remove_member(tmp_path, tmp_path / "a") == "removed"
    assert members() == {"b"}
    path.write_text('[tool.splice.workspace]\nmembers = ["/b"]\nexclude = ["a"]\n')
    assert add_member(tmp_path, tmp_path / "a") is True
    assert members() == {"a", "b"}
    # escaped, a name may outgrow the 256 characters a pattern may have: refused, unwritten
    # and a name ending in white space other than a space has none (git strips it): refused
    path.write_text('[tool.splice.workspace]\nmembers = ["**"]\n')
    before = path.read_bytes()
    for name in ("a b" * 80, "x\t", "x\u3000", "x\x1f"):
        (tmp_path / "packages" / name).mkdir()
        for edit in (add_member, remove_member):
            with pytest.raises(SpliceError) as refused:
                edit(tmp_path, tmp_path / "packages" / name)
            assert refused.value.code is ErrorCode.USAGE, repr(name)
    assert path.read_bytes() == before
    assert members() == set(projects)


def test_workspace_command_creates_the_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    (tmp_path / "libs" / "one").mkdir(parents=True)  # no project yet: not found, so added
    done = run_splice("workspace", "--root", str(tmp_path), "add", "libs/one", cwd=tmp_path)
    # named alone it is no member yet: sync said "No project", hinting this very command
    assert done.stderr == (
        "warning: libs/one holds no splice.json: it is synced once `splice init libs/one` "
        "makes it a project\n"
    )
    new_project(tmp_path / "libs" / "one")
    assert done.code == 0, done.stderr
    text = (tmp_path / "pyproject.toml").read_text()
    assert text.startswith('[project]\nname = "x"\n')
    assert "[tool.splice.workspace]" in text and '"libs/one"' in text
    listed = run_splice("--json", "workspace", "list", cwd=tmp_path / "libs")
    assert listed.json()["members"] == ["libs/one"]
    new_project(tmp_path / "libs" / "two")
    two = run_splice("workspace", "--root", str(tmp_path), "add", "libs/two", cwd=tmp_path)
    assert (two.code, two.stderr) == (0, "")
    outside = run_splice("workspace", "--root", str(tmp_path), "add", "/", cwd=tmp_path)
    assert outside.code == 2


@pytest.mark.parametrize("make", ["nothing", "a file"])
def test_adding_a_directory_that_does_not_exist_is_refused(tmp_path: Path, make: str) -> None:
    (tmp_path / "pyproject.toml").write_text(ODD_PYPROJECT)
    if make == "a file":
        (tmp_path / "libz").write_text("")
    done = run_splice("--json", "workspace", "--root", str(tmp_path), "add", "libz", cwd=tmp_path)
    assert done.code == 2
    error = done.json()["error"]
    assert error["code"] == "USAGE"
    problem = "is not a directory" if make == "a file" else "does not exist"
    assert error["message"] == f"{tmp_path / 'libz'} {problem}"
    assert error["hint"] == "Create the project first (`splice init libz`), then add it."
    assert (tmp_path / "pyproject.toml").read_text() == ODD_PYPROJECT  # nothing written
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    refused = run_splice("workspace", "--root", str(fresh), "add", "nope", cwd=fresh)
    assert refused.code == 2 and "does not exist" in refused.stderr
    assert list(fresh.iterdir()) == []  # no pyproject.toml created either


def _remembered(root: Path) -> list[str]:
    workspace = find_workspace(root, remember=True)
    return [workspace.label(m) for m in workspace.members]


def test_the_member_memo_follows_the_bytes_and_the_tree(tmp_path: Path) -> None:
    """The memo (``.splice/workspace.json``) answers only for the same pyproject bytes and the
    same candidate directories: a new project, a new pattern or a removed one is seen."""
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[tool.splice.workspace]\nmembers = ["packages/*"]\nexclude = ["packages/b"]\n'
    )
    for name in ("a", "b"):
        new_project(tmp_path / "packages" / name)
    memo = tmp_path / ".splice" / "workspace.json"
    assert find_workspace(tmp_path).members and not memo.exists()  # only when asked to remember
    assert _remembered(tmp_path) == ["packages/a"]
    written = memo.read_bytes()
    assert _remembered(tmp_path) == ["packages/a"] and memo.read_bytes() == written
    new_project(tmp_path / "packages" / "c")
    assert _remembered(tmp_path) == ["packages/a", "packages/c"]
    pyproject.write_text('[tool.splice.workspace]\nmembers = ["packages/*"]\n')
    assert _remembered(tmp_path) == ["packages/a", "packages/b", "packages/c"]
    (tmp_path / "packages" / "a" / "splice.json").unlink()
    assert _remembered(tmp_path) == ["packages/b", "packages/c"]
    memo.write_bytes(b"{not json")
    assert _remembered(tmp_path) == ["packages/b", "packages/c"]
    pyproject.write_text("[tool.splice.workspace]\nmembers = 1\n")
    with pytest.raises(SpliceError) as raised:
        find_workspace(tmp_path, remember=True)
    assert raised.value.code is ErrorCode.INVALID_CONFIG


def test_a_git_work_tree_whose_name_ends_with_a_space(tmp_path: Path) -> None:
    """Only git's line break is dropped from ``rev-parse --show-toplevel``."""
    root = tmp_path / "repo "
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    new_project(root / "a")
    workspace = find_workspace(root / "a")
    assert workspace.source == "git" and workspace.root == root
    assert [workspace.label(m) for m in workspace.members] == ["a"]


def test_the_first_table_written_keeps_every_member_found_without_one(tmp_path: Path) -> None:
    """Without ``[tool.splice.workspace]`` the members are found (git's listing or the walk);
    the table ``add`` or ``remove`` writes lists them all but the one removed. Before, ``add``
    wrote the one directory alone, silently dropping every other project from ``splice
    sync``, and ``remove`` of a member found no entry, said ``absent`` and left it synced."""
    home = tmp_path / "home"
    root = tmp_path / "repo"
    path = root / "pyproject.toml"
    for name in ("a", "b", "c"):
        new_project(root / "packages" / name)

    def members() -> set[str]:
        found = find_workspace(root, root=root, home=home).members
        return {m.relative_to(root).as_posix() for m in found}

    assert remove_member(root, root / "packages" / "b", home=home) == "removed"
    assert members() == {"packages/a", "packages/c"}
    path.unlink()
    # a member already: nothing written, so a project made later is still found
    assert add_member(root, root / "packages" / "a", home=home) is False
    assert not path.exists()
    assert remove_member(root, root / "packages", home=home) == "absent"  # no project
    assert not path.exists()
    (root / "tools").mkdir()
    assert add_member(root, root / "tools", home=home) is True
    assert members() == {"packages/a", "packages/b", "packages/c"}
    assert "tools" in path.read_text()
    # more members than a table may list: refused, nothing written
    path.unlink()
    for index in range(254):
        new_project(root / "more" / str(index))
    with pytest.raises(SpliceError) as refused:
        add_member(root, root / "tools", home=home)
    assert refused.value.code is ErrorCode.USAGE
    assert not path.exists()


def test_removing_a_directory_that_is_no_member_says_so_in_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The text said ``docs: absent (…)``, read as if the directory were missing; ``--json``
    keeps the outcome ``absent``. With no workspace table, neither that nor ``add``'s
    "already a member" names a ``pyproject.toml`` (there was none to look at): the walk
    decided."""
    from splice_build.cli.main import main

    new_project(tmp_path / "a")
    (tmp_path / "docs").mkdir()
    monkeypatch.setenv("SPLICE_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    walked = f"({tmp_path}: no [tool.splice.workspace] table in pyproject.toml, every project found is a member)"
    assert main(["workspace", "remove", "docs"]) == 0
    assert capsys.readouterr().out == f"docs: not a member, nothing changed {walked}\n"
    assert main(["workspace", "add", "a"]) == 0
    assert capsys.readouterr().out == f"a: already a member {walked}\n"
    assert main(["--json", "workspace", "remove", "docs"]) == 0
    assert json.loads(capsys.readouterr().out)["outcome"] == "absent"
    assert not (tmp_path / "pyproject.toml").exists()


@pytest.mark.parametrize(
    ("text", "written"),
    [
        (
            "tool = {ruff = {x = 1}}  # kept\n",
            'tool = {ruff = {x = 1},splice = {workspace = {members = ["/b"]}}}  # kept\n',
        ),
        (
            # [tool.splice] holds nothing but workspace (test_a_misspelt_workspace_key_is_named).
            "# kept\ntool.splice = {}\n",
            '# kept\ntool.splice = {workspace = {members = ["/b"]}}\n',
        ),
    ],
    ids=["tool", "tool.splice"],
)
def test_the_table_is_written_inside_an_inline_table(
    tmp_path: Path, text: str, written: str
) -> None:
    """An inline ``tool`` or ``tool.splice`` gets ``workspace`` as an inline table, the only
    kind TOML lets it hold; ``add`` and ``remove`` were ``INTERNAL_ERROR`` (tomlkit's
    ``ValueError: Inline tables cannot contain a table``), real CLI."""
    for name in ("a", "b"):
        new_project(tmp_path / name)
    path = tmp_path / "pyproject.toml"
    path.write_text(text)
    assert remove_member(tmp_path, tmp_path / "a", home=tmp_path / "home") == "removed"
    assert path.read_text() == written
    assert [m.name for m in find_workspace(tmp_path, root=tmp_path).members] == ["b"]


def test_a_first_table_that_would_drop_a_member_git_finds_is_refused(tmp_path: Path) -> None:
    """git's listing finds ``.tools/x``; a table's patterns are matched against the walk's
    directories, which enter no hidden directory or ``node_modules``: the table ``add``
    wrote listed ``.tools/x`` and it was silently no member any more (real CLI)."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for rel in ("packages/a", ".tools/x"):
        new_project(tmp_path / rel)
    (tmp_path / "packages" / "new").mkdir()
    assert find_workspace(tmp_path, root=tmp_path).source == "git"
    for change, name in ((add_member, "new"), (remove_member, "a")):
        with pytest.raises(SpliceError) as refused:
            change(tmp_path, tmp_path / "packages" / name, home=tmp_path / "h")
        assert refused.value.code is ErrorCode.USAGE
        assert refused.value.message.startswith(".tools/x is a member (found by git's listing)")
    assert add_member(tmp_path, tmp_path / "packages" / "a", home=tmp_path / "h") is False
    assert not (tmp_path / "pyproject.toml").exists()


def test_adding_a_directory_the_walk_never_enters_is_refused(tmp_path: Path) -> None:
    """Members are found by a walk that enters no hidden directory or ``node_modules``:
    ``workspace add .tools/x`` printed ``added``, wrote the pattern, and ``.tools/x`` was
    never a member (real CLI)."""
    for rel in ("packages/a", ".tools/x", "node_modules/y", "packages/a/.cache/z"):
        new_project(tmp_path / rel)
    for rel in (".tools/x", "node_modules/y", "packages/a/.cache/z"):
        with pytest.raises(SpliceError) as refused:
            add_member(tmp_path, tmp_path / rel, home=tmp_path / "h")
        assert refused.value.code is ErrorCode.USAGE
        assert "which the walk that finds members never enters" in refused.value.message
    assert not (tmp_path / "pyproject.toml").exists()


def test_sync_in_a_project_that_is_no_member_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Run in packages/b after `splice workspace remove packages/b`, sync synced the others
    # and said nothing of the project the user stood in.
    from splice_build.cli.main import main

    for name in ("a", "b"):
        new_project(tmp_path / "packages" / name)
    (tmp_path / "pyproject.toml").write_text('[tool.splice.workspace]\nmembers = ["packages/a"]\n')
    (tmp_path / "packages" / "b" / "src").mkdir()
    monkeypatch.chdir(tmp_path / "packages" / "b" / "src")
    capsys.readouterr()
    assert main(["--json", "sync", "--check"]) == 0
    out, err = capsys.readouterr()
    assert [p["path"] for p in json.loads(out)["projects"]] == ["packages/a"]
    assert (
        f"warning: packages/b (the project here) is not a member of the workspace at {tmp_path}, "
        "so it is not synced: `splice workspace add ..` makes it one"
    ) in err.splitlines()
    monkeypatch.chdir(tmp_path / "packages" / "a")
    assert main(["sync", "--check"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_sync_json_carries_the_workspace_warnings(tmp_path: Path) -> None:
    """A program reading ``sync --json`` learned nothing of the project it was run in being
    left out: ``"ok": true``, the warning on stderr alone (real CLI)."""
    for name in ("a", "b"):
        new_project(tmp_path / "packages" / name)
    (tmp_path / "pyproject.toml").write_text('[tool.splice.workspace]\nmembers = ["packages/a"]\n')
    line = (
        f"packages/b (the project here) is not a member of the workspace at {tmp_path}, "
        "so it is not synced: `splice workspace add .` makes it one"
    )
    done = run_splice("--json", "sync", cwd=tmp_path / "packages" / "b")
    assert done.code == 0, done.stderr
    assert done.json()["warnings"] == [line]
    assert f"warning: {line}" in done.stderr.splitlines()
    assert run_splice("--json", "sync", cwd=tmp_path).json()["warnings"] == []


@pytest.mark.parametrize("exclude", ["apps/", "apps/*", "*/web", "apps/**"])
def test_adding_a_directory_another_exclude_pattern_keeps_out_is_refused(
    tmp_path: Path, exclude: str
) -> None:
    """``workspace add apps/web`` under ``exclude = ["apps/"]`` printed ``added``, wrote the
    member, and ``apps/web`` stayed excluded, never synced (real CLI; the ``workspace_edit``
    fuzz target): only its own entry is taken out of ``exclude``, so any other pattern that
    keeps it out is a refusal, nothing written."""
    for rel in ("packages/a", "apps/web"):
        new_project(tmp_path / rel)
    text = f'[tool.splice.workspace]\nmembers = ["packages/*"]\nexclude = ["{exclude}"]\n'
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(SpliceError) as refused:
        add_member(tmp_path, tmp_path / "apps" / "web", home=tmp_path / "h")
    assert refused.value.code is ErrorCode.USAGE
    assert refused.value.message.startswith(f"apps/web stays excluded by {exclude!r}")
    assert (tmp_path / "pyproject.toml").read_text() == text
