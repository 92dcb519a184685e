"""A checkout ships ``.splice/packages`` too, so it chooses how deep an installed package's
tree is. An install that replaces a modified copy deletes the old one after its commit point
(install/transaction.py); ``shutil.rmtree`` recursed once per level, so a tree nested 1,500
deep made that install fail with ``INTERNAL_ERROR`` (RecursionError), and every later
command's recovery the same way: the project could not be repaired by Splice at all. The
removal must also work under a user's usual open-file limit (1,024): a walk that kept a
descriptor per level failed there with ``EMFILE`` (``INTERNAL_ERROR``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from splice_build.project.layout import ProjectLayout
from splice_build.sdk import Splice
from testing.cli import run_splice
from testing.deep_tree import nested, unnested
from testing.registry_fixtures import new_project

GREETER = "@acme/greeter"
DEPTH = 1500  # deeper than Python's recursion limit, and than OPEN_FILES
OPEN_FILES = 1024  # the soft RLIMIT_NOFILE most Linux users have


def _plant(package: Path) -> None:
    """``package/a/…/a/evil.js``, ``DEPTH`` levels down, the deepest directories read-only
    (``chmod -R a-w`` of vendored code must not stop the removal either)."""
    nested(package, DEPTH)
    parent = os.open(package, os.O_RDONLY)
    try:
        for _ in range(DEPTH):
            child = os.open("a", os.O_RDONLY, dir_fd=parent)
            os.close(parent)
            parent = child
        fd = os.open("evil.js", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=parent)
        os.write(fd, b"export default 1;\n")
        os.close(fd)
        os.fchmod(parent, 0o500)
    finally:
        os.close(parent)


@pytest.mark.skipif(os.name == "nt", reason="POSIX permissions and descriptors")
@pytest.mark.parametrize("command", [["install"], ["sync"]])
def test_a_package_tree_nested_past_the_recursion_limit_is_restored(
    tmp_path: Path, registry: dict, command: list[str]
) -> None:
    project = new_project(tmp_path / "p")
    Splice(project).add([f"{GREETER}@^1.0.0"])
    layout = ProjectLayout(project)
    package = layout.package_dir(GREETER)
    good = sorted(p.relative_to(package).as_posix() for p in package.rglob("*"))
    _plant(package)
    try:
        done = run_splice("--json", *command, cwd=project, open_files=OPEN_FILES)
        assert done.code == 0, (done.stdout, done.stderr)
        body = json.loads(done.stdout)
        restored = body["projects"][0]["restored"] if "projects" in body else body
        assert [r["name"] for r in restored] == [GREETER], body
        assert sorted(p.relative_to(package).as_posix() for p in package.rglob("*")) == good
        assert not os.path.lexists(layout.tmp_dir)  # the old copy and the journal are gone
        assert run_splice("--json", "verify", GREETER, cwd=project).code == 0
    finally:
        trees = [package, *layout.tmp_dir.glob("*")] if layout.tmp_dir.is_dir() else [package]
        for tree in trees:
            _uproot(tree)


def _uproot(tree: Path) -> None:
    """Undo :func:`_plant` in ``tree`` (the package, or what an old install left of it)."""
    if not (tree / "a").is_dir():
        return
    parent = os.open(tree, os.O_RDONLY)
    try:
        while True:
            os.fchmod(parent, 0o700)
            try:
                child = os.open("a", os.O_RDONLY, dir_fd=parent)
            except FileNotFoundError:
                break
            os.close(parent)
            parent = child
        os.unlink("evil.js", dir_fd=parent)
    finally:
        os.close(parent)
    unnested(tree)
