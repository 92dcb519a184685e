"""A write grant in another user's lock or record holds only what that user can write
(project/state_owner.py, docs/monorepo.md#which-projects).

Workspace discovery and the run check read the state of every directory above the project,
``/tmp`` included. On a shared machine another local user created ``/tmp/splice.lock`` or
``/tmp/.splice/write-grants.json`` naming a write grant over the victim's project below:
``splice sync`` there was ``NOT_A_PROJECT`` and ``splice run`` ``PERMISSIONS_NOT_GRANTED``,
and a sibling project could be hidden from the sync. A real grant of another user still
holds what that user's tool wrote (files that user owns, or could write).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, ProjectError
from splice_build.project.grant_record import RECORD_NAME
from splice_build.project.tool_written import enclosing_write_grant
from splice_build.project.workspace import find_workspace
from testing.acls import posix_acls_kept, set_access_acl
from testing.projects import lock_entry_json, make_project

pytestmark = pytest.mark.skipif(
    getattr(os, "geteuid", lambda: -1)() != 0,
    reason="making files another user owns needs root (.ci/run runs as root)",
)
OTHER = 65534  # nobody: another local user


def _lock(*writes: str) -> dict[str, dict]:
    permissions = {"fs": {"read": [], "write": list(writes)}, "network": [], "env": []}
    return {"@acme/tool": lock_entry_json(permissions=permissions)}


def _record(path: Path, root: Path, *granted: tuple[str, Path]) -> None:
    entries = []
    for grant, directory in granted:
        info = os.stat(directory)
        entries.append({"root": str(root), "grant": grant, "path": str(directory),
                        "dev": info.st_dev, "ino": info.st_ino})  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"grants": entries}))


def _chown(*paths: Path) -> None:
    for path in paths:
        os.chown(path, OTHER, OTHER, follow_symlinks=False)


def test_another_users_state_holds_only_what_that_user_can_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the sync and the run check below refused the victim's project, and
    ``packages/a`` was left out of its sync."""
    from splice_build.cli.main import main

    shared = tmp_path / "tmp"  # as /tmp: world-writable, sticky
    shared.mkdir()
    os.chmod(shared, 0o1777)
    victim = make_project(shared / "victim")
    nested = make_project(victim / "packages" / "a")
    # The other user's claims: a lock (the file theirs), a record (the file root's, in a
    # directory of theirs) and SPLICE_HOME pointed at a directory of theirs.
    make_project(shared, lock=_lock("victim"))
    _record(shared / ".splice" / RECORD_NAME, shared, ("victim/packages/a", nested))
    home = tmp_path / "home"
    _record(home / RECORD_NAME, shared, ("victim", victim))
    _chown(shared / "splice.json", shared / "splice.lock", shared / ".splice", home / RECORD_NAME)
    # A real grant of that user: their project's tool wrote out/x, owned by them.
    other = make_project(shared / "theirs", lock=_lock("out"))
    planted = make_project(other / "out" / "x")
    _chown(other, other / "splice.json", other / "splice.lock", other / "out", planted,
           planted / "splice.json")  # fmt: skip

    workspace = find_workspace(victim, home=home)
    assert [workspace.label(m) for m in workspace.members] == [".", "packages/a"]
    assert workspace.dropped == ()
    shown = str(shared)
    assert workspace.dropped_lines() == [
        f"the write grant {g!r} of {shown} is ignored for {m}: it was recorded by another "
        f"user (uid {OTHER}), who cannot write that project"
        for m, g in [(".", "victim"), ("packages/a", "victim/packages/a"), ("packages/a", "victim")]
    ]
    assert enclosing_write_grant(victim, home) is None
    assert enclosing_write_grant(nested, home) is None

    monkeypatch.setenv("SPLICE_HOME", str(home))
    monkeypatch.chdir(victim)
    capsys.readouterr()
    assert main(["--json", "sync"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [p["path"] for p in document["projects"]] == [".", "packages/a"]
    assert document["dropped"] == []

    with pytest.raises(ProjectError) as refused:
        find_workspace(planted, home=home)
    assert refused.value.code is ErrorCode.NOT_A_PROJECT
    assert list(refused.value.details) == [
        f". is not synced: it lies in the write grant 'out' of {other}, "
        "where a tool may have written it"
    ]

    # A checkout of theirs that you (root, in a container) ran a tool in: the project is
    # theirs, so its lock is theirs to write, and what your tool wrote in out is held.
    checkout = make_project(tmp_path / "checkout", lock=_lock("out"))
    made = make_project(checkout / "out" / "x")
    _chown(checkout, checkout / "splice.json", checkout / "splice.lock")
    with pytest.raises(ProjectError) as held:
        find_workspace(made, home=home)
    assert held.value.code is ErrorCode.NOT_A_PROJECT
    assert enclosing_write_grant(made, home) == (checkout, "out")

    # A project the other user can write (others may write it) is held: fail closed.
    os.chmod(nested, 0o777)
    assert enclosing_write_grant(nested, home) == (shared, "victim/packages/a")
    os.chmod(nested, 0o755)
    os.chmod(nested / "splice.json", 0o646)
    assert enclosing_write_grant(nested, home) == (shared, "victim/packages/a")

    # Their link to a lock of root's (or yours) is theirs too.
    os.chmod(nested / "splice.json", 0o644)
    (shared / ".splice" / RECORD_NAME).unlink()
    (home / RECORD_NAME).unlink()
    yours = make_project(tmp_path / "yours", lock=_lock("victim"))
    (shared / "splice.lock").unlink()
    (shared / "splice.lock").symlink_to(yours / "splice.lock")
    _chown(shared / "splice.lock")
    assert enclosing_write_grant(victim, home) is None


@pytest.mark.skipif(
    not posix_acls_kept(), reason="the temporary directory's file system keeps no POSIX ACLs"
)
def test_a_project_another_user_may_write_through_an_acl_is_held_by_their_grant(
    tmp_path: Path,
) -> None:
    """A team directory whose default ACL lets each member write what another made: the
    other user ran sync in your project (their splice.lock, grant ``out``) and their tool
    rewrote ``out/x/splice.json``, yours, writable for them through the ACL. The group bits
    (the ACL's mask) name a group they are not in, so the grant was ignored for ``out/x``
    ("who cannot write that project") and the rewritten project synced."""
    project = make_project(tmp_path / "team" / "proj", lock=_lock("out"))
    _chown(project / "splice.lock")
    planted = make_project(project / "out" / "x")
    set_access_acl(planted / "splice.json", OTHER, 6)
    assert enclosing_write_grant(planted, tmp_path / "home") == (project, "out")
    with pytest.raises(ProjectError) as held:
        find_workspace(planted, home=tmp_path / "home")
    assert held.value.code is ErrorCode.NOT_A_PROJECT
    # The same mode without an ACL: their grant is ignored (the group is root's).
    os.removexattr(planted / "splice.json", "system.posix_acl_access")
    os.chmod(planted / "splice.json", 0o664)
    assert enclosing_write_grant(planted, tmp_path / "home") is None


def test_your_grant_in_a_record_another_user_rewrote_still_holds(tmp_path: Path) -> None:
    """A team's checkout (its directory a third user's): your tool, granted ``out``, wrote
    ``out/cache`` (yours, 0755) and you removed the package; then another user ran a tool
    there, and the runtime rewrote ``.splice/write-grants.json`` as theirs, your entry kept
    (simulated by the chown: the file another user's atomic rewrite leaves). Your grant was
    then theirs, ignored for a project only you can write, and your tool's project synced
    (find_workspace on the old code: ``out/cache`` a member). The runtime now records every
    grant of a run in another user's project in SPLICE_HOME too."""
    from tests.project.test_tool_written_members import _planted_then_removed, _writer_project

    home, project = _writer_project(tmp_path)
    os.chown(project, 4242, 4242)  # the team's (a third user's); you may write it as root
    _planted_then_removed(project, home)
    assert os.stat(project / "out" / "cache" / "splice.json").st_uid == 0
    _chown(project / ".splice" / RECORD_NAME)
    with pytest.raises(ProjectError) as held:
        find_workspace(project / "out" / "cache", home=home)
    assert held.value.code is ErrorCode.NOT_A_PROJECT
    assert enclosing_write_grant(project / "out" / "cache", home) == (project.resolve(), "out")


def test_your_grant_in_your_project_whose_state_a_group_may_write_still_holds(
    tmp_path: Path,
) -> None:
    """Your project (yours, a team's group may write its ``.splice``, as under umask 002 or
    a shared directory's default ACL): another user of that group who runs a tool there
    rewrites ``.splice/write-grants.json`` as theirs, your entry kept, just as in another
    user's directory. Your tool had planted ``out/cache`` (0755: they cannot write it), so
    your grant, read as theirs, was ignored and ``out/cache`` synced once you removed the
    package (find_workspace on the old code: a member). Whoever else may replace the record,
    SPLICE_HOME's holds your grants too."""
    from tests.project.test_tool_written_members import _planted_then_removed, _writer_project

    home, project = _writer_project(tmp_path)
    (project / ".splice").mkdir(exist_ok=True)
    os.chown(project / ".splice", 0, 4242)
    os.chmod(project / ".splice", 0o2775)  # the team's group may write it; the project is yours
    # While the tool runs the team may write the project's directory too: a tool is never
    # run where a group beyond the project's may write .splice (install/installed.py).
    before = os.stat(project)
    os.chown(project, 0, 4242)
    os.chmod(project, 0o2775)
    _planted_then_removed(project, home)
    os.chown(project, before.st_uid, before.st_gid)
    os.chmod(project, stat.S_IMODE(before.st_mode))
    assert os.stat(project).st_uid == 0
    assert os.stat(project / "out" / "cache" / "splice.json").st_uid == 0
    _chown(project / ".splice" / RECORD_NAME)  # their rewrite, your entry kept
    with pytest.raises(ProjectError) as held:
        find_workspace(project / "out" / "cache", home=home)
    assert held.value.code is ErrorCode.NOT_A_PROJECT


def test_whose_state_another_user_may_replace(tmp_path: Path) -> None:
    """The runtime's rule for recording in SPLICE_HOME too (runtime.py ``_shared``): a group
    of this user alone (root's here, as a user private group under umask 002) does not
    make a project shared, so the home's bounded record does not take every grant of every
    project; a team's group, others or an ACL naming another user do."""
    from splice_build.runtime.runtime import _shared

    state = tmp_path / ".splice"
    state.mkdir()
    cases = [(0, 0o755, None, False), (0, 0o775, None, False), (4242, 0o775, None, True)]
    cases += [(0, 0o757, None, True), (0, 0o775, OTHER, True)]
    for gid, mode, acl_user, shared in cases:
        os.chown(state, 0, gid)
        os.chmod(state, mode)
        if acl_user is not None:
            set_access_acl(state, acl_user, 7)
        assert _shared(tmp_path) is shared, (gid, oct(mode), acl_user)
    os.chown(state, OTHER, 0)
    os.chmod(state, 0o700)
    assert _shared(tmp_path) is True


def test_a_file_of_yours_another_user_may_write_and_put_above_your_project_is_not_yours(
    tmp_path: Path,
) -> None:
    """A team checkout's ``splice.lock`` (or ``.splice/write-grants.json``) of yours,
    writable for the team's group (a setgid directory under umask 002): a member of the
    group hard-linked it into ``/tmp`` (the kernel lets them link any file they may read and
    write) and wrote a grant over your ``/tmp/victim`` into it. The file was yours, so the
    grant held: ``splice sync`` there was ``NOT_A_PROJECT`` and every run refused (shown
    with the real CLI, the link and the write made as uid 65534 with the team's group). A
    rename out of the checkout leaves one link; the file's mode tells it then."""
    shared = tmp_path / "tmp"  # as /tmp: world-writable, sticky
    shared.mkdir()
    os.chmod(shared, 0o1777)
    victim = make_project(shared / "victim")
    team = make_project(tmp_path / "team", lock=_lock("out"))
    _record(team / ".splice" / RECORD_NAME, team, ("./victim", victim))
    for name in ("splice.lock", f".splice/{RECORD_NAME}"):
        os.chown(team / name, 0, 4242)  # yours, the team's group may write it
        os.chmod(team / name, 0o664)
    home = tmp_path / "home"
    make_project(shared)
    _chown(shared / "splice.json")
    (shared / ".splice").mkdir()
    os.link(team / ".splice" / RECORD_NAME, shared / ".splice" / RECORD_NAME)
    os.link(team / "splice.lock", shared / "splice.lock")
    (shared / "splice.lock").write_text(
        json.dumps({"lockfileVersion": 1, "packages": _lock("victim")})
    )

    workspace = find_workspace(victim, home=home)
    assert [workspace.label(m) for m in workspace.members] == ["."]
    tail = (
        "its file is yours or root's, but lies where another user may have put it and "
        "written it (a file others may write, or with another link, in a directory they "
        "may write), and no other user can write that project"
    )
    assert workspace.dropped_lines() == [
        f"the write grant {grant!r} of {shared} is ignored for .: {tail}"
        for grant in ("victim", "./victim")
    ]
    assert enclosing_write_grant(victim, home) is None

    # Renamed there instead: one link, but the team may write it. Not held.
    os.unlink(shared / "splice.lock")
    os.rename(team / "splice.lock", shared / "splice.lock")
    (shared / ".splice" / RECORD_NAME).unlink()
    assert enclosing_write_grant(victim, home) is None
    # Yours alone (one link, 0644): your lock, and its grant holds as before.
    os.chmod(shared / "splice.lock", 0o644)
    assert enclosing_write_grant(victim, home) == (shared, "victim")
    # Held too, as ANYONE's, for a project another user may write.
    os.chmod(shared / "splice.lock", 0o664)
    os.chmod(victim, 0o777)
    assert enclosing_write_grant(victim, home) == (shared, "victim")
    with pytest.raises(ProjectError) as held:
        find_workspace(victim, home=home)
    assert held.value.code is ErrorCode.NOT_A_PROJECT


def test_a_group_the_group_database_does_not_name_counts_as_every_users(tmp_path: Path) -> None:
    """A team's project (a third user's) whose lock another user wrote (grant ``out``); in
    ``out/x``, a project of yours, writable for a group the group database has no entry for
    (one a process holds only as a supplementary group: ``setpriv --groups``, a container's
    added group). Their tool, run with that group, rewrote ``out/x/splice.json`` (shown as
    uid 65534 with the group); the user database lists none of their groups as it, so the
    grant was ignored ("who cannot write that project") and the rewritten project synced."""
    import grp

    unnamed = next(
        gid for gid in range(4300, 5300) if gid not in {g.gr_gid for g in grp.getgrall()}
    )
    team = make_project(tmp_path / "team", lock=_lock("out"))
    os.chown(team, 4242, 4242)
    _chown(team / "splice.lock")
    planted = make_project(team / "out" / "x")
    os.chown(planted / "splice.json", 0, unnamed)
    os.chmod(planted / "splice.json", 0o664)
    home = tmp_path / "home"
    assert enclosing_write_grant(planted, home) == (team, "out")
    with pytest.raises(ProjectError) as held:
        find_workspace(planted, home=home)
    assert held.value.code is ErrorCode.NOT_A_PROJECT


def test_another_users_checkout_cannot_fill_the_grant_record_your_own_runs_need(
    tmp_path: Path,
) -> None:
    """SPLICE_HOME records every grant of a run in another user's checkout. That user
    pointed its granted ``out`` at a new directory (a link of theirs) before each of your
    runs there, each run recorded a live entry (20 real runs: 20 entries), and 512 filled
    the home's one record: a run in your own project whose grant leaves it through a link,
    recorded there too, was then ``NOT_WRITABLE``, as was every ``splice run --dir``. The
    entries of runs in such places are kept apart: filling them refuses only runs there."""
    from splice_build.project.grant_record import max_entries, remember
    from splice_build.sdk import Splice
    from testing.registry_fixtures import new_project
    from tests.project.test_tool_written_members import _writer_project

    home, project = _writer_project(tmp_path)
    checkout = new_project(tmp_path / "team")
    (checkout / "data").mkdir()
    (checkout / "data" / "secret.txt").write_text("s\n")
    _chown(checkout)
    splice = Splice(checkout, home=home, registry="embedded:", broker=False)
    try:
        splice.add(["@acme/writer"], accept_permissions=True)
        assert splice.run("writer.hello", {"name": "x"}).ok
        splice.remove(["@acme/writer"])
    finally:
        splice.close()
    [used] = home.glob("write-grants*.json")  # the one record that run wrote in SPLICE_HOME
    (checkout / ".splice" / RECORD_NAME).unlink()  # theirs to rewrite: the home's holds
    with pytest.raises(ProjectError) as held:
        find_workspace(checkout / "out" / "cache", home=home)
    assert held.value.code is ErrorCode.NOT_A_PROJECT
    # What 511 more runs, each with out a new link of theirs, leave in that record.
    made = [checkout / "store" / str(n) for n in range(max_entries() - 1)]
    for directory in made:
        directory.mkdir(parents=True)
    _record(used, checkout, ("out", checkout / "out"), *[("out", d) for d in made])

    away = tmp_path / "elsewhere"
    away.mkdir()
    (project / "out").symlink_to(away)  # your project's grant leaves it through a link
    splice = Splice(project, home=home, registry="embedded:", broker=False)
    try:
        splice.add(["@acme/writer"], accept_permissions=True)
        result = splice.run("writer.hello", {"name": "x"})
    finally:
        splice.close()
    assert result.ok, result.error
    with pytest.raises(ProjectError) as held:
        find_workspace(away / "cache", home=home)
    assert held.value.code is ErrorCode.NOT_A_PROJECT
    (checkout / "more").mkdir()
    with pytest.raises(OverflowError):  # a run there with a new grant: still refused
        remember(used, checkout, [("out", checkout / "more")])


def test_another_users_pyproject_above_your_project_is_not_your_workspace(
    tmp_path: Path,
) -> None:
    """Another user's ``/tmp/pyproject.toml`` with ``[tool.splice.workspace]`` made ``/tmp``
    the workspace of your ``/tmp/victim``: with ``members = ["evil"]`` your ``splice sync``
    there synced their project only (it asked the registry their ``splice.json`` names),
    never yours, and ``workspace add`` edited their file; a FIFO of theirs there was
    ``INVALID_CONFIG`` for every command (all shown with the real CLI, the files made as
    uid 65534). Now passed over with a warning unless they may write your directory (the
    directory above it being theirs is not enough)."""
    shared = tmp_path / "tmp"  # as /tmp: world-writable, sticky
    shared.mkdir()
    os.chmod(shared, 0o1777)
    victim = make_project(shared / "victim")
    evil = make_project(shared / "evil")
    pyproject = shared / "pyproject.toml"
    pyproject.write_text('[tool.splice.workspace]\nmembers = ["evil"]\n')
    _chown(evil, evil / "splice.json", pyproject)
    home = tmp_path / "home"
    passed = (
        f"{pyproject} is not taken as the workspace root: it is another user's (uid {OTHER}), "
        "who cannot write this directory"
    )

    workspace = find_workspace(victim, home=home)
    assert (workspace.root, workspace.members) == (victim, (victim,))
    assert workspace.dropped_lines() == [passed]
    from splice_build.project.workspace import configured_root  # workspace add's root

    assert configured_root(victim) is None
    pyproject.unlink()
    os.mkfifo(pyproject)
    _chown(pyproject)
    assert find_workspace(victim, home=home).dropped_lines() == [passed]
    with pytest.raises(ProjectError) as invalid:  # the directory you are in: yours to take
        find_workspace(shared, home=home)
    assert invalid.value.code is ErrorCode.INVALID_CONFIG

    # They may write your directory (or the directory is theirs): their table holds.
    pyproject.unlink()
    pyproject.write_text('[tool.splice.workspace]\nmembers = ["evil"]\n')
    _chown(pyproject)
    os.chmod(victim, 0o777)
    assert find_workspace(victim, home=home).members == (evil,)
    os.chmod(victim, 0o755)
    _chown(shared)  # owning the directory above yours is not enough
    assert configured_root(victim) is None
    _chown(victim)
    assert configured_root(victim) == shared


def test_another_users_project_above_your_directory_is_not_yours_to_run(tmp_path: Path) -> None:
    """Another user's ``/tmp/splice.json``, with their lock and installed package: your
    ``splice run evil.hello`` in ``/tmp/mywork`` (yours, no project) walked up to their
    project and ran their tool as you, with the environment variable and your directory
    their lock granted (real CLI: it returned ``SECRET`` and listed ``mywork``). Passed over
    now, unless they may write your directory; in their directory it is theirs to run."""
    from splice_build.project.project_file import find_project_root

    shared = tmp_path / "tmp"  # as /tmp: world-writable, sticky
    shared.mkdir()
    os.chmod(shared, 0o1777)
    make_project(shared)
    _chown(shared / "splice.json")
    mywork = shared / "mywork"
    (mywork / "deeper").mkdir(parents=True)
    with pytest.raises(ProjectError) as refused:
        find_project_root(mywork / "deeper")
    assert refused.value.code is ErrorCode.NOT_A_PROJECT
    assert list(refused.value.details) == [
        f"{shared / 'splice.json'} is passed over: it, its lock or its .splice is another "
        f"user's (uid {OTHER}), who cannot write this directory"
    ]
    assert find_project_root(shared) == shared
    _chown(shared)  # their directory above yours: still not your project
    with pytest.raises(ProjectError):
        find_project_root(mywork)
    os.chmod(mywork, 0o777)  # they may write your directory: theirs to claim
    assert find_project_root(mywork) == shared


def test_a_claim_above_is_passed_over_whatever_lies_between_or_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three ways past the walk up's rule, each shown with the real CLI as root, the files
    of uid 65534. A world-writable ``pub`` of theirs between their project and your
    ``mywork``: a directory between that they may write made their project yours to run
    (``splice run example.hello`` ran their installed tool), though a project of theirs in
    ``pub`` itself was passed over. Your ``splice.json`` in ``/tmp`` (``splice init`` once
    there), their ``splice.lock`` and ``.splice`` beside it: only the ``splice.json`` was
    looked at, and your run in ``/tmp/mywork`` ran their tool. Their ``/tmp/.git`` with git
    told to trust any repository (``safe.directory = *``): ``/tmp`` was the workspace of your
    ``/tmp/victim``, and your ``splice sync`` synced their project beside it; a FIFO of theirs
    as ``/tmp/.git/HEAD`` held every sync below ``/tmp`` for git's 60-second limit."""
    import shutil
    import subprocess

    from splice_build.project.project_file import find_project_root

    theirs = tmp_path / "theirs"
    make_project(theirs)
    pub = theirs / "pub"
    (pub / "mywork").mkdir(parents=True)
    os.chmod(pub, 0o1777)
    _chown(theirs, theirs / "splice.json", pub)
    with pytest.raises(ProjectError) as between:
        find_project_root(pub / "mywork")
    assert between.value.code is ErrorCode.NOT_A_PROJECT
    assert "Run the command in the directory of the project" in str(between.value.hint)

    shared = tmp_path / "tmp"  # as /tmp: world-writable, sticky
    (shared / "mywork").mkdir(parents=True)
    os.chmod(shared, 0o1777)
    make_project(shared)  # yours
    for name in ("splice.lock", "splice-lock.json", ".splice"):  # theirs beside it
        path = shared / name
        path.mkdir() if name == ".splice" else path.write_text("{}")
        _chown(path)
        with pytest.raises(ProjectError) as beside:
            find_project_root(shared / "mywork")
        assert beside.value.code is ErrorCode.NOT_A_PROJECT, name
        path.rmdir() if name == ".splice" else path.unlink()
    (shared / ".splice").symlink_to(shared / "mywork")  # their link to a directory of yours
    _chown(shared / ".splice")
    with pytest.raises(ProjectError):
        find_project_root(shared / "mywork")
    (shared / ".splice").unlink()
    assert find_project_root(shared / "mywork") == shared  # yours alone: taken

    if shutil.which("git") is None:
        return
    (shared / "splice.json").unlink()
    home = tmp_path / "githome"
    home.mkdir()
    (home / ".gitconfig").write_text("[safe]\n\tdirectory = *\n")
    monkeypatch.setenv("HOME", str(home))
    subprocess.run(["git", "init", "-q", str(shared)], check=True)
    evil = make_project(shared / "evil")
    victim = make_project(shared / "victim")
    _chown(shared / ".git", evil, evil / "splice.json")
    workspace = find_workspace(victim, home=tmp_path / "home")
    assert (workspace.root, workspace.members) == (victim, (victim,))
    passed = [
        f"{shared / '.git'} is not taken as the workspace root: it is another user's "
        f"(uid {OTHER}), who cannot write this directory"
    ]
    assert workspace.dropped_lines() == passed
    _chown(victim)  # they may write your directory: their work tree holds it
    assert find_workspace(victim, home=tmp_path / "home").members == (evil, victim)
    # A FIFO of theirs as HEAD held git (so the sync) for its time limit: git is not started.
    os.chown(victim, 0, 0)
    (shared / ".git" / "HEAD").unlink()
    os.mkfifo(shared / ".git" / "HEAD")
    assert find_workspace(victim, home=tmp_path / "home").dropped_lines() == passed
