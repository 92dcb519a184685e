"""spec/git_links.py reads the submodules of git's own index (versions 2 to 4, either object
name size) and reports one it cannot read, which refuses the write grants in it."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
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


def _plain_repository(path: Path) -> Path:
    """A repository whose index lists ``vendor/notes.txt`` alone."""
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "vendor" / "lib").mkdir(parents=True)
    (path / "vendor" / "notes.txt").write_text("x\n")
    subprocess.run(["git", "add", "vendor/notes.txt"], cwd=path, check=True)
    return Path(os.path.realpath(path))


def _add_submodule(repository: Path) -> None:
    link = f"160000,{'1' * 40},vendor/lib"
    subprocess.run(
        ["git", "update-index", "--add", "--cacheinfo", link], cwd=repository, check=True
    )


def _remember_at_once(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every index read old enough to remember; the list of the reads made from now on."""
    from splice_build.spec import git_links

    monkeypatch.setattr(git_links, "RECENT_NS", -(10**18))
    monkeypatch.setattr(git_links, "_remembered", {})
    reads: list[object] = []
    read = git_links.read_regular_file_and_stat
    monkeypatch.setattr(
        git_links, "read_regular_file_and_stat", lambda *a, **k: reads.append(a) or read(*a, **k)
    )
    return reads


def test_an_index_read_once_is_read_again_only_once_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each check of a long-lived process (``splice mcp``, one ``Splice``) re-read a 50,000-file
    index; now it ``stat``s it, and a submodule added since (git renames a new index over the
    old) refuses the write grant holding it at the next check."""
    repository = _plain_repository(tmp_path / "repo")
    reads = _remember_at_once(monkeypatch)
    assert ProjectState(repository).fs_problem("vendor") is None
    assert ProjectState(repository).fs_problem("vendor") is None
    assert len(reads) == 1  # main: 2
    time.sleep(0.02)  # past the kernel's clock tick, which change times are kept at
    _add_submodule(repository)
    assert "a submodule of the git repository" in (
        ProjectState(repository).fs_problem("vendor") or ""
    )
    assert len(reads) == 2


def test_an_index_rewritten_in_place_with_its_times_put_back_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same inode and size, the modification time set back (``vendor/lib`` a file's
    entry made a submodule's): the change time moved, and the submodule is found."""
    repository = _plain_repository(tmp_path / "repo")
    index = repository / ".git" / "index"
    _add_submodule(repository)
    with_link = index.read_bytes()
    blob = f"100644,{'1' * 40},vendor/lib"
    subprocess.run(["git", "update-index", "--cacheinfo", blob], cwd=repository, check=True)
    _remember_at_once(monkeypatch)
    assert gitlinks(str(repository / ".git")) == ()
    before = index.stat()
    assert before.st_size == len(with_link)
    time.sleep(0.02)  # past the kernel's clock tick
    with open(index, "r+b") as handle:
        handle.write(with_link)
    os.utime(index, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert gitlinks(str(repository / ".git")) == ("vendor/lib",)
