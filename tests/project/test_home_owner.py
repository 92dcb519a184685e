"""A SPLICE_HOME another user may have chosen the contents of is refused, not read
(project/home_owner.py; docs/security.md#files-under-splice_home)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, ProjectError
from splice_build.project.grant_record import RECORD_NAME
from splice_build.project.home import SpliceHome
from splice_build.project.keys import generate_key, load_key
from splice_build.project.workspace import find_workspace
from splice_build.runtime import SpliceRuntime
from splice_build.sdk import Splice
from splice_build.spec.tree_digest import tree_digest
from testing.cli import run_splice
from testing.hostile_packages import tool_returning, write_package
from testing.other_user import NOBODY, as_another_user, as_nobody
from testing.projects import lock_entry_json, make_project

pytestmark = as_another_user

THEIR_CONFIG = json.dumps({"registry": "http://127.0.0.1:9", "isolation": "in-process"})


@pytest.fixture
def shared() -> Iterator[Path]:
    """A sticky directory every user may write, as ``/tmp`` (pytest's own are 0700)."""
    directory = Path(tempfile.mkdtemp(prefix="splice-home-"))
    directory.chmod(0o1777)
    yield directory
    shutil.rmtree(directory)


def test_a_home_another_user_made_first_is_refused_before_anything_is_read(shared: Path) -> None:
    """The attack: uid 65534 makes /tmp/splice-home first, its config.json naming their
    listener on 127.0.0.1. On the old code every command read it: ``splice whoami`` sent
    the user's SPLICE_TOKEN there, and tools ran in-process. ``splice config`` shows it."""
    home = shared / "splice-home"
    as_nobody('mkdir "$1" && printf %s "$2" > "$1/config.json"', str(home), THEIR_CONFIG)
    done = run_splice("--json", "config", env={"SPLICE_HOME": str(home)}, cwd=shared)
    assert "127.0.0.1:9" not in done.stdout
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "INVALID_CONFIG"
    assert error["message"] == (f"SPLICE_HOME {home} cannot be used: it is owned by user {NOBODY}")
    with pytest.raises(ProjectError) as refused:
        SpliceHome(home).ensure()  # root's chmod would have closed it, theirs still
    assert refused.value.code is ErrorCode.INVALID_CONFIG
    assert home.stat().st_mode & 0o777 == 0o755
    as_nobody('printf %s "$2" > "$1/credentials.json"', str(home), '{"registries": {}}')
    with pytest.raises(ProjectError):
        SpliceHome(home).remove_credential("http://127.0.0.1:9")  # made its lock there first
    assert sorted(p.name for p in home.iterdir()) == ["config.json", "credentials.json"]


def _link_of_theirs(shared: Path) -> Path:
    (shared / "mine").mkdir(mode=0o700)
    as_nobody('ln -s "$1" "$2"', str(shared / "mine"), str(shared / "link"))
    return shared / "link"


def _in_a_directory_anyone_may_write(shared: Path) -> Path:
    (shared / "open").mkdir()
    (shared / "open").chmod(0o777)  # not sticky: they may rename the home away
    (shared / "open" / "home").mkdir(mode=0o700)
    return shared / "open" / "home"


def _my_link_into_a_directory_anyone_may_write(shared: Path) -> Path:
    (shared / "link").symlink_to(_in_a_directory_anyone_may_write(shared))
    return shared / "link"  # the way by the path given is sound; its target's is not


def _open_to_a_group(shared: Path) -> Path:
    (shared / "home").mkdir()
    os.chown(shared / "home", -1, 4242)  # a group with no entry: anyone's
    (shared / "home").chmod(0o770)
    return shared / "home"


def _their_file_in_a_home_of_mine(shared: Path) -> Path:
    (shared / "home").mkdir(mode=0o700)
    (shared / "home" / "config.json").write_text(THEIR_CONFIG)
    os.chown(shared / "home" / "config.json", NOBODY, NOBODY)  # put before the home was closed
    return shared / "home"


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (_link_of_theirs, "another user may replace {home} (in {shared}, which they may write)"),
        (
            _in_a_directory_anyone_may_write,
            "another user may replace {home} (in {shared}/open, which they may write)",
        ),
        (
            _my_link_into_a_directory_anyone_may_write,
            "another user may replace {shared}/open/home (in {shared}/open, which they may write)",
        ),
        (_open_to_a_group, "other users may write it"),
        (_their_file_in_a_home_of_mine, None),
    ],
)
def test_a_home_another_user_may_have_written_is_not_read(
    shared: Path, make: Callable[[Path], Path], problem: str | None
) -> None:
    home = make(shared)
    with pytest.raises(ProjectError) as refused:
        SpliceHome(home).read_config()
    assert refused.value.code is ErrorCode.INVALID_CONFIG
    if problem is None:
        assert (
            refused.value.message
            == "config.json is invalid: cannot be read (owned by another user)"
        )
    else:
        expected = problem.format(home=home, shared=shared)
        assert refused.value.message == f"SPLICE_HOME {home} cannot be used: {expected}"


def test_a_home_of_mine_in_a_sticky_directory_is_used(shared: Path) -> None:
    home = SpliceHome(shared / "home")
    home.write_config({"registry": "local"})
    assert home.read_config() == {"registry": "local"}


def test_a_home_made_again_by_another_user_is_refused_in_the_same_process(shared: Path) -> None:
    """A long-lived process (the SDK, ``splice mcp``) looks at its home more than once. Once
    found sound, the path alone was trusted for the process's life: after the home in a
    sticky directory was removed (by its user, or a cleaner of /tmp), uid 65534 made it
    again with their ``registry/``, and root's next ``ensure`` chmod'ed their directory 0700
    and took it (the embedded registry's store)."""
    home = SpliceHome(shared / "home")
    home.ensure()
    shutil.rmtree(home.path)
    as_nobody('mkdir -m 755 "$1" "$1/registry"', str(home.path))
    with pytest.raises(ProjectError) as refused:
        home.ensure()
    assert refused.value.message == (
        f"SPLICE_HOME {home.path} cannot be used: it is owned by user {NOBODY}"
    )
    assert home.path.stat().st_mode & 0o777 == 0o755


def test_a_key_another_user_put_in_a_home_of_mine_does_not_sign(shared: Path) -> None:
    """Put in keys/ while the home was open to them, their key would sign (and be registered)
    as the user's."""
    home = SpliceHome(shared / "home")
    made = generate_key(home, "theirs")
    os.chown(made.path, NOBODY, NOBODY)
    with pytest.raises(ProjectError) as refused:
        load_key(home, "theirs")
    assert refused.value.code is ErrorCode.INVALID_CONFIG


def test_a_run_records_no_grant_in_a_home_of_another_user(shared: Path) -> None:
    """A runtime given its isolation reads no config.json: its first use of the home was
    the grant record of a run outside any project, written into their directory (old code:
    the tool ran and write-grants.json was there, theirs to rewrite). Nothing runs now."""
    theirs = shared / "theirs"
    as_nobody('mkdir "$1"', str(theirs))
    permissions = {"fs": {"read": [], "write": ["out"]}}
    package = write_package(
        shared / "pkgs", "export default () => ({});\n", permissions=permissions
    )
    (shared / "dir").mkdir()
    with SpliceRuntime(
        project_root=shared / "dir", env={}, isolation="in-process", home=theirs
    ) as rt:
        result = rt.execute(rt.load(package), "t", {})
    assert result.error is not None and result.error.code == ErrorCode.INVALID_CONFIG
    assert list(theirs.iterdir()) == []


def test_a_grant_recorded_in_a_home_of_another_user_holds_only_what_they_may_write(
    shared: Path,
) -> None:
    """Its owner is trusted as a home's (state_owner.other_writer's place): their record
    naming a grant over your project made it NOT_A_PROJECT on the old code."""
    victim = make_project(shared / "victim")
    info = os.stat(victim)
    home = shared / "theirs"
    home.mkdir()
    entry = {"root": str(shared), "grant": "victim", "path": str(victim)}
    (home / RECORD_NAME).write_text(
        json.dumps({"grants": [{**entry, "dev": info.st_dev, "ino": info.st_ino}]})
    )
    for path in (home, home / RECORD_NAME):
        os.chown(path, NOBODY, NOBODY)
    assert find_workspace(victim, home=home).members == (victim,)


def test_a_files_digest_record_is_not_read_from_a_home_of_another_user(
    shared: Path, tmp_path: Path
) -> None:
    """The record that a lock's files digest was derived here (install/derived.py) is read
    from the home as its config is: uid 65534's home, holding the record of the tree a
    checkout ships (an author's rewrite, its digest in the lock), made ``list`` call the
    package ok (exit 0 on the old code) and ``run`` answer ``NOT_INSTALLED`` with the hint
    ``splice install`` rather than the home's refusal."""
    mine = tmp_path / "home"
    with Splice.init(tmp_path / "project", home=mine) as splice:
        splice.add(["@splice/example"])
    theirs = shared / "theirs"
    shutil.copytree(SpliceHome(mine).files_digest_dir, SpliceHome(theirs).files_digest_dir)
    for path in (theirs, *theirs.rglob("*")):
        os.chown(path, NOBODY, NOBODY)
    with Splice(tmp_path / "project", home=theirs) as splice:
        assert splice.tools() == []  # installed() leaves out what fails a check
        for call in (splice.list, lambda: splice.check("@splice/example")):
            with pytest.raises(ProjectError) as refused:
                call()
            assert refused.value.code is ErrorCode.INVALID_CONFIG


def _project_and_record(shared: Path) -> tuple[Path, str, str]:
    """A project whose installed package no artifact ever held (its lock's files digest
    recomputed to match), with the name and text of the record that would make it run."""
    project = shared / "p"
    package = write_package(project / ".splice/packages/@test", tool_returning("{}"))
    entry = lock_entry_json("@test/hostile", files=tree_digest(package))
    make_project(project, {"@test/hostile": "1.0.0"}, lock={"@test/hostile": entry})
    return project, entry["integrity"].removeprefix("sha256-"), entry["files"]


def test_a_files_digest_record_of_another_user_in_a_home_of_mine_is_none(shared: Path) -> None:
    """Put before the home was closed, as their config.json above: a record is believed
    as it reads, so theirs made root's `splice run` run a rewritten tool with its grant
    (real CLI: the secret returned)."""
    project, name, files = _project_and_record(shared)
    home = shared / "home"
    record = home / "cache/artifacts/files" / name
    record.parent.mkdir(parents=True)
    home.chmod(0o700)
    record.write_text(files)
    os.chown(record, NOBODY, NOBODY)
    [row] = Splice(project, home=home).list()
    assert (row["status"], row["code"]) == ("missing", "NOT_INSTALLED")
