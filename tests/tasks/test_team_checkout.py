"""A team's checkout: two members of the group a setgid ``2775`` project belongs to, under
umask 002, each syncs, adds and removes there, and each runs what the other installed
(docs/security.md#who-may-write-the-code); a group its directory does not let write, by
its ACL, gains nothing (project/posix_acl.py)."""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpliceError
from splice_build.project.layout import ProjectLayout
from splice_build.sdk import Splice
from testing.acls import posix_acls_kept, set_access_acl, set_default_group_acl
from testing.registry_fixtures import new_project
from testing.team_member import MEMBER, as_member, member_home
from testing.workspaces import sync_in_place

GREETER, OTHER = "@acme/greeter", "@acme/other"

as_a_team = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="acts as a second member of the project's group (root: setresuid)",
)


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory both members reach (pytest's own directories are 0700), umask 002."""
    top = Path(tempfile.mkdtemp(prefix="splice-team-"))
    top.chmod(0o755)
    umask = os.umask(0o002)
    yield top
    os.umask(umask)
    shutil.rmtree(top)


def _team_project(shared: Path, mode: int = 0o2775) -> Path:
    """A project directory of the member's group, as ``install -d -g team -m 2775``."""
    root = shared / "p"
    root.mkdir()
    os.chown(root, -1, MEMBER)
    root.chmod(mode)
    return new_project(root, {GREETER: "1.0.0"})


def _state_files(root: Path) -> list[Path]:
    state = ProjectLayout(root).state_dir
    return [
        root / "splice.json",
        root / "splice.lock",
        *(p for p in state.iterdir() if p.is_file()),
    ]


@as_a_team
def test_a_member_syncs_adds_and_removes_in_a_teammates_checkout(
    registry: dict, home: Path, shared: Path
) -> None:
    """The state the first member's Splice made was 0644 (its lock file, the doit database,
    the stat cache, the locks), so the second member's every sync, add and remove ended
    NOT_WRITABLE. It is made with the group's write where the directory gives it; state made
    before that (0644 here) is locked read-only and the database replaced. What each member
    installs passes the check before the other's runs."""
    root = _team_project(shared)
    assert sync_in_place(root).ok
    state = _state_files(root)
    made = {p.name: stat.S_IMODE(p.stat().st_mode) for p in state}
    private = {"state.lock", "graph.sqlite3", "sync.sqlite3"}  # creation_modes.private_mode_in
    assert made == {p.name: 0o660 if p.name in private else 0o664 for p in state}
    for path in state:
        path.chmod(0o644)  # as made before
    theirs = member_home(home, shared)

    assert as_member(theirs, 0o002, lambda: sync_in_place(root, stat_cache=False)) == "ok"
    assert as_member(theirs, 0o002, lambda: Splice(root).add([OTHER])) == "ok"
    package = ProjectLayout(root).package_dir(OTHER)
    assert package.stat().st_uid == MEMBER
    # What a teammate installed runs here once this user's sync checked it against its artifact.
    assert sync_in_place(root).ok
    assert Splice(root).run("other.hello", {"name": "x"}).output == {"message": "Hello, x."}
    assert as_member(theirs, 0o002, lambda: Splice(root).remove([GREETER])) == "ok"
    assert as_member(theirs, 0o002, lambda: Splice(root).run("other.hello", {"name": "y"})) == "ok"


@as_a_team
def test_a_directory_a_teammate_left_behind_names_the_way_out(registry: dict, shared: Path) -> None:
    """A ``.splice`` made by a member who has left the group (here owned by uid 1, no
    member) is theirs to chmod, and ``splice install`` makes none of it again: the hint
    said to run one or the other, for ever. It says to move it away and sync."""
    root = _team_project(shared)
    assert sync_in_place(root).ok
    state = ProjectLayout(root).state_dir
    os.chown(state, 1, -1)
    with pytest.raises(SpliceError) as refused:
        Splice(root).run("greeter.hello", {"name": "x"})
    assert refused.value.code is ErrorCode.INSTALLED_PACKAGE_MODIFIED
    assert f"`mv {state} {state}.old`" in (refused.value.hint or "")
    state.rename(f"{state}.old")
    assert sync_in_place(root).ok
    assert Splice(root).run("greeter.hello", {"name": "x"}).output == {"message": "Hello, x."}


@as_a_team
@pytest.mark.skipif(
    not posix_acls_kept(), reason="the temporary directory's file system keeps no POSIX ACLs"
)
def test_a_group_an_acl_keeps_from_writing_the_project_gains_nothing(
    registry: dict, shared: Path
) -> None:
    """``2755`` with ``setfacl -m u:1:rwx`` shows group write (the mask) while the group may
    not write it: Splice made ``.splice`` and the tools 2775/0664 there, the check let them
    run, and a member of the group (who may not write the project) could rewrite a tool.
    Now nothing is made writable for the group, and such a tree is refused."""
    root = _team_project(shared, 0o2755)
    set_access_acl(root, 1, 7)
    assert sync_in_place(root).ok
    made = [p for p in root.rglob("*") if p.name != "splice.json"]  # the test's
    assert [p for p in made if p.stat().st_mode & stat.S_IWGRP] == []
    for path in made:
        path.chmod(stat.S_IMODE(path.stat().st_mode) | stat.S_IWGRP)  # as made before
    assert f"{ProjectLayout(root).state_dir}: group {MEMBER} may write it and not the project" in (
        _refused_details(root)
    )


@as_a_team
@pytest.mark.skipif(
    not posix_acls_kept(), reason="the temporary directory's file system keeps no POSIX ACLs"
)
def test_a_user_the_projects_acl_does_not_name_is_no_member(registry: dict, shared: Path) -> None:
    """Any access ACL on the project's directory counted as letting every user write it, so
    files of a user it does not name (uid 1; a member who had left a ``g:team:rwx`` checkout,
    shown with real users) were trusted, and they could rewrite their tool after the check.
    The ACL's entries decide now."""
    root = _team_project(shared)
    set_access_acl(root, MEMBER, 7)
    assert sync_in_place(root).ok
    tool = ProjectLayout(root).package_dir(GREETER) / "tools" / "hello.js"
    os.chown(tool, 1, -1)
    assert _refused_details(root) == [
        f"{tool}: it is owned by user 1, who may not write the project"
    ]


@as_a_team
@pytest.mark.skipif(
    not posix_acls_kept(), reason="the temporary directory's file system keeps no POSIX ACLs"
)
def test_a_member_the_projects_acl_keeps_from_writing_it_makes_the_group_no_team(
    registry: dict, shared: Path
) -> None:
    """``setfacl -m u:them:r-x`` on a team's ``2775`` project: their own entry decides, so
    they may not write the project, but they may write all the team may write. The team's
    write on the tools passed the check (shown with real users: the one so named rewrote a
    tool in a checkout they could not add a file to). Such a group is no team: Splice makes
    nothing writable for it, and a tree that is is refused."""
    root = _team_project(shared)
    set_access_acl(root, MEMBER, 5, group=7)
    assert sync_in_place(root).ok
    assert Splice(root).run("greeter.hello", {"name": "x"}).output == {"message": "Hello, x."}
    made = [p for p in root.rglob("*") if p.name != "splice.json"]  # the test's
    assert [p for p in made if p.stat().st_mode & stat.S_IWGRP] == []
    tool = ProjectLayout(root).package_dir(GREETER) / "tools" / "hello.js"
    tool.chmod(0o664)  # as made before
    assert _refused_details(root) == [f"{tool}: group {MEMBER} may write it and not the project"]


@as_a_team
def test_files_of_a_user_the_user_database_does_not_know_are_not_a_members(
    registry: dict, shared: Path
) -> None:
    """A member deleted (``userdel``) leaves their files and maybe a process holding their
    uid: with no entry their groups were unknown, counted as every group, and their tool
    (which that uid may rewrite after the check) passed it."""
    root = _team_project(shared)
    assert sync_in_place(root).ok
    tool = ProjectLayout(root).package_dir(GREETER) / "tools" / "hello.js"
    unknown = _unknown(pwd.getpwuid)
    os.chown(tool, unknown, -1)
    assert _refused_details(root) == [
        f"{tool}: it is owned by user {unknown}, who may not write the project"
    ]


def _unknown(lookup: Callable[[int], object]) -> int:
    """An id from 40000 that ``lookup`` (``pwd.getpwuid``, ``grp.getgrgid``) does not know."""
    for ident in range(40000, 41000):
        try:
            lookup(ident)
        except KeyError:
            return ident
    raise AssertionError("BUG: every id from 40000 to 40999 is known")


def _refused_details(root: Path) -> list[str]:
    """The details of the refusal of a run of the project at ``root``'s tool."""
    with pytest.raises(SpliceError) as refused:
        Splice(root).run("greeter.hello", {"name": "x"})
    assert refused.value.code is ErrorCode.INSTALLED_PACKAGE_MODIFIED
    return list(refused.value.details)


@as_a_team
@pytest.mark.skipif(
    not posix_acls_kept(), reason="the temporary directory's file system keeps no POSIX ACLs"
)
def test_a_teams_default_acl_is_a_teams_checkout(registry: dict, home: Path, shared: Path) -> None:
    """``setfacl -d -m g:team:rwx`` on the team's ``2775`` project: every entry Splice made
    there carries that ACL, and any ACL on an entry was refused unless the project's
    directory had an access ACL too, so the first run after ``add`` was refused and the
    sync that closed ``.splice`` took the team's write (the other member's ``add`` then
    NOT_WRITABLE). An ACL's writers are judged as the project's writers are."""
    root = _team_project(shared)
    set_default_group_acl(root, MEMBER, 7)
    assert sync_in_place(root).ok
    assert Splice(root).run("greeter.hello", {"name": "x"}).output == {"message": "Hello, x."}
    theirs = member_home(home, shared)
    assert as_member(theirs, 0o002, lambda: Splice(root).add([OTHER])) == "ok"
    assert sync_in_place(root).ok
    assert Splice(root).run("other.hello", {"name": "x"}).output == {"message": "Hello, x."}


@as_a_team
def test_a_group_the_group_database_does_not_know_makes_no_member(
    registry: dict, shared: Path
) -> None:
    """A team's checkout whose group has no entry (``groupdel team``, or a gid a container
    added): who holds it is unknown, and that counted as every user holding it, so the
    files of any user the user database knows (uid 65534, who once held the group) were
    trusted, and they could rewrite their tool after the check."""
    root = _team_project(shared)
    os.chown(root, -1, _unknown(grp.getgrgid))
    assert sync_in_place(root).ok
    tool = ProjectLayout(root).package_dir(GREETER) / "tools" / "hello.js"
    os.chown(tool, MEMBER, -1)
    assert _refused_details(root) == [
        f"{tool}: it is owned by user {MEMBER}, who may not write the project"
    ]
