"""spec/git_links.py reads the submodules of git's own index (versions 2 to 4, either object
name size) and reports one it cannot read, which refuses the write grants in it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from splice_build.spec.git_links import UnreadableIndex, gitlinks
from splice_build.spec.project_state import ProjectState

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _repository(path: Path, object_format: str, version: int) -> Path:
    """A repository whose index lists a file, an intent-to-add file (an extended entry) and
    the submodules ``vendor/lib`` and ``vendor/other``, written as index ``version``."""
    subprocess.run(["git", "init", "-q", f"--object-format={object_format}", str(path)], check=True)
    (path / "vendor").mkdir()
    (path / "vendor" / "notes.txt").write_text("x\n")
    (path / "new.txt").write_text("")

    def git(*argv: str) -> None:
        subprocess.run(["git", *argv], cwd=path, check=True)

    name = "1" * (40 if object_format == "sha1" else 64)
    git("add", "vendor/notes.txt")
    git("add", "-N", "new.txt")
    for link in ("vendor/lib", "vendor/other"):
        git("update-index", "--add", "--cacheinfo", f"160000,{name},{link}")
    git("update-index", "--index-version", str(version))
    return path


@pytest.mark.parametrize(("object_format", "version"), [("sha1", 2), ("sha1", 4), ("sha256", 3)])
def test_the_submodules_of_each_index_version(
    tmp_path: Path, object_format: str, version: int
) -> None:
    repository = _repository(tmp_path / "repo", object_format, version)
    assert gitlinks(str(repository / ".git")) == ("vendor/lib", "vendor/other")


def test_a_split_index_is_unreadable_and_refuses_write_grants_in_its_repository(
    tmp_path: Path,
) -> None:
    repository = _repository(tmp_path / "repo", "sha1", 2)
    subprocess.run(["git", "update-index", "--split-index"], cwd=repository, check=True)
    with pytest.raises(UnreadableIndex, match="split index"):
        gitlinks(str(repository / ".git"))
    state = ProjectState(repository.resolve())
    assert "whose index could not be read" in (state.fs_problem("vendor/notes.txt") or "")
    assert state.fs_problem("vendor/notes.txt", write=False) is None


def test_an_index_that_is_a_fifo_is_unreadable_not_waited_on(tmp_path: Path) -> None:
    """A repository above a grant may be one a tool made in another of its write grants;
    its index (or ``.git`` file) a FIFO would have held the check for a writer forever."""
    (tmp_path / ".git").mkdir()
    os.mkfifo(tmp_path / ".git" / "index")
    with pytest.raises(UnreadableIndex, match="not a regular file"):
        gitlinks(str(tmp_path / ".git"))
