"""A tool's code that another user may change is never run; install/sync take that access.

Packages installed under a daemon's umask 0 before Splice fixed its modes (0666 files, 0777
directories), or a tree someone chmod'ed, let any local user rewrite a tool between the
check from bytes and Node reading it (install/installed.py ``refuse_other_writers``,
install/modes.py; docs/security.md#installed-code).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpliceError
from splice_build.project import state_owner
from splice_build.project.layout import ProjectLayout
from splice_build.runtime import runtime as runtime_module
from splice_build.runtime.isolation import fileview
from splice_build.sdk import Splice
from testing.acls import posix_acls_kept, set_access_acl
from testing.other_user import NOBODY, as_another_user, as_nobody
from testing.registry_fixtures import embedded_store, new_project, publish
from testing.workspaces import sync_in_place

GREETER = "@acme/greeter"
# Writes a directory and a file into its grant, with Node's defaults (0777 and 0666).
_WRITES = """import { mkdirSync, writeFileSync } from "node:fs";
export default function hello(input, ctx) {
  mkdirSync(`${ctx.paths.project}/out/deep/made`);
  writeFileSync(`${ctx.paths.project}/out/deep/written`, "x");
  return { message: "written" };
}
"""
EVIL = "export default function hello() { return { message: 'PWNED' }; }\n"


def _chmod_tree(top: Path, bits: int) -> None:
    for path in [top, *top.rglob("*")]:
        path.chmod(stat.S_IMODE(path.stat().st_mode) | bits)


def _refusal(project: Path) -> SpliceError | None:
    """The INSTALLED_PACKAGE_MODIFIED refusal of a run of the greeter, None when it ran."""
    try:
        Splice(project).run("greeter.hello", {"name": "x"})
    except SpliceError as exc:
        assert exc.code is ErrorCode.INSTALLED_PACKAGE_MODIFIED, exc
        return exc
    return None


@pytest.fixture
def project(registry: dict) -> Iterator[Path]:
    """An installed project another user can reach (pytest's own directories are 0700)."""
    shared = Path(tempfile.mkdtemp(prefix="splice-others-"))
    shared.chmod(0o755)
    root = new_project(shared / "p", {GREETER: "1.0.0"})
    root.chmod(0o755)
    assert sync_in_place(root).ok
    yield root
    shutil.rmtree(shared)


def _rewrite_after_the_check(monkeypatch: pytest.MonkeyPatch, entry: Path) -> None:
    """The other user rewrites ``entry`` as soon as the call's re-check returns, in the window
    before Node reads it."""
    checked = runtime_module._check_bound

    def then_swap(*args: object) -> None:
        checked(*args)  # type: ignore[arg-type]
        as_nobody('printf %s "$1" > "$2"', EVIL, str(entry))

    monkeypatch.setattr(runtime_module, "_check_bound", then_swap)


@as_another_user
def test_a_tool_another_user_may_rewrite_is_refused_before_it_runs(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attack: uid 65534 rewrites tools/hello.js in the window after the re-check and
    before Node reads it (here, as soon as the re-check returns). On the old code the
    other user's code ran; now the call is refused before any process starts."""
    layout = ProjectLayout(project)
    package = layout.package_dir(GREETER)
    entry = package / "tools" / "hello.js"
    _chmod_tree(layout.packages_dir, stat.S_IWOTH)  # as installed under umask 0 before
    _rewrite_after_the_check(monkeypatch, entry)
    with pytest.raises(SpliceError) as refused:
        Splice(project).run("greeter.hello", {"name": "x"})
    assert refused.value.code is ErrorCode.INSTALLED_PACKAGE_MODIFIED
    assert f"{layout.packages_dir}: every user may write it" in refused.value.details
    assert "splice install" in (refused.value.hint or "")
    assert "PWNED" not in entry.read_text()

    monkeypatch.undo()
    # Installed again: a chmod would leave a descriptor they opened for writing theirs.
    result = sync_in_place(project)
    assert result.ok and [p.name for p in result.projects[0].restored] == [GREETER]
    for path in [layout.state_dir, *layout.state_dir.joinpath("packages").rglob("*")]:
        assert not path.stat().st_mode & stat.S_IWOTH, path
    assert Splice(project).run("greeter.hello", {"name": "x"}).output == {"message": "Hello, x."}


@as_another_user
def test_what_may_write_the_way_to_a_package_decides_whether_it_runs(project: Path) -> None:
    """One walk: the project's directory, a scope's directory and a file open to every user,
    a group beyond the project's, are refused with the path named; the project's own group
    (a team's setgid checkout under umask 002) is not. A chmod of a directory above the
    package is seen by the no-op sync, which then runs the graph and closes it."""
    layout = ProjectLayout(project)
    package = layout.package_dir(GREETER)
    scope = package.parent

    project.chmod(0o777)
    refused = _refusal(project)
    assert (
        refused is not None
        and refused.hint == f"Take write access from other users: `chmod o-w {project}`."
    )
    project.chmod(0o755)

    team, foreign = 100, NOBODY  # a group of the project's directory, another group
    for path in [project, *project.rglob("*")]:
        os.chown(path, -1, team)
    _chmod_tree(project, stat.S_IWGRP)
    assert _refusal(project) is None  # a team's checkout runs as it did

    os.chown(package / "manifest.json", -1, foreign)
    refused = _refusal(project)
    assert refused is not None
    assert list(refused.details) == [
        f"{package / 'manifest.json'}: group {foreign} may write it and not the project"
    ]
    os.chown(package / "manifest.json", -1, team)

    assert sync_in_place(project).ok  # now recorded: the next sync is a no-op
    scope.chmod(0o777)
    refused = _refusal(project)
    assert refused is not None and list(refused.details) == [f"{scope}: every user may write it"]
    assert sync_in_place(project).ok
    assert stat.S_IMODE(scope.stat().st_mode) == 0o775
    assert _refusal(project) is None


@as_another_user
def test_a_lock_another_user_may_write_is_refused_before_it_runs(project: Path) -> None:
    """splice.lock's grants decide what a verified tool may reach (the variables it reads, the
    paths it writes), and only the package's code and the directories on its way were
    checked: a lock another user owns or may write (an ex-member's in a team's checkout, one
    made 0666 under a daemon's umask 0) had its grants taken as they stood. A team's
    group-writable lock still runs."""
    lock = ProjectLayout(project).lock_file

    lock.chmod(0o666)
    refused = _refusal(project)
    assert refused is not None and list(refused.details) == [f"{lock}: every user may write it"]
    assert refused.hint is not None and f"chmod go-w {lock}" in refused.hint
    lock.chmod(0o644)
    os.chown(lock, NOBODY, -1)
    refused = _refusal(project)
    assert refused is not None and list(refused.details) == [
        f"{lock}: it is owned by user {NOBODY}, who may not write the project"
    ]
    os.chown(lock, 0, -1)
    team = 100  # the project directory's group: a team's checkout
    os.chown(project, -1, team)
    project.chmod(0o2775)
    os.chown(lock, -1, team)
    lock.chmod(0o664)
    assert _refusal(project) is None


@as_another_user
def test_the_check_before_a_run_reads_the_projects_acl_once(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a team's checkout (group-writable, umask 002) each entry the check looks at has the
    group's write, and which groups may write the project was read again for each of them:
    one getxattr of the project's directory per directory and file of the package
    (state_owner.project_team). The answer is the same: a team's checkout runs, a group
    beyond it is refused."""
    from splice_build.install.installed import other_writers

    layout = ProjectLayout(project)
    team = 100  # a group of the project's directory
    for path in [project, *project.rglob("*")]:
        os.chown(path, -1, team)
    _chmod_tree(project, stat.S_IWGRP)
    stats = [(str(p), p.stat()) for p in layout.package_dir(GREETER).rglob("*")]
    read = os.getxattr
    reads: list[str] = []

    def counted(path: str | Path, name: str) -> bytes:
        reads.append(os.fspath(path))
        return read(path, name)

    monkeypatch.setattr(os, "getxattr", counted)
    assert other_writers(layout, GREETER, stats) == []
    # Once as the first entry on the way, once for the groups (was once more per entry).
    assert reads.count(str(project)) == 2
    manifest = layout.package_dir(GREETER) / "manifest.json"
    os.chown(manifest, -1, NOBODY)
    found = other_writers(layout, GREETER, [(str(manifest), manifest.stat())])
    assert found == [(str(manifest), f"group {NOBODY} may write it and not the project")]


def test_a_write_grant_made_under_umask_0_is_not_open_to_other_users(
    registry: dict, home: Path, tmp_path: Path
) -> None:
    """The directories of a write grant a call creates (``mkdir -p``) were 0777 under a
    daemon's umask 0; they are 0755 there, as everything else Splice makes in a project
    (project/layout.py: a umask of 0 sets no group apart). So are the file and directory the
    tool writes there: it ran under the program's umask 0, and made them 0666 and 0777
    (runtime/isolation/child.py ``close_to_others``)."""
    publish(
        embedded_store(home),
        tmp_path / "packages",
        name="writer",
        permissions={"fs": {"read": [], "write": ["out/deep"]}, "network": [], "env": []},
        files={"tools/hello.js": _WRITES},
    )
    project = new_project(tmp_path / "w", {"@acme/writer": "1.0.0"})
    assert sync_in_place(project, accept_permissions=True).ok
    umask = os.umask(0)
    try:
        result = Splice(project).run("writer.hello", {"name": "x"})
    finally:
        os.umask(umask)
    assert result.ok, result.to_json()
    names = ("out", "out/deep", "out/deep/made", "out/deep/written")
    modes = [stat.S_IMODE((project / name).stat().st_mode) for name in names]
    assert modes == [0o755, 0o755, 0o755, 0o644]


@as_another_user
@pytest.mark.skipif(
    not posix_acls_kept(), reason="the temporary directory's file system keeps no POSIX ACLs"
)
def test_an_acl_on_a_file_of_a_group_of_one_lets_no_other_user_rewrite_a_tool(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ACL naming another user on a tool's file whose owning group is this user's alone
    (a default ACL of the directory it was made in, or setfacl): its group bits are the
    ACL's mask, and the group-of-one rule let it pass without looking at the ACL, so uid
    65534 rewrote the tool after the re-check and the call ran their code. Refused now, as
    any ACL beyond the project's; install makes the file again without it."""
    layout = ProjectLayout(project)
    entry = layout.package_dir(GREETER) / "tools" / "hello.js"
    assert state_owner._group_of_one(entry.stat().st_gid, os.geteuid())
    set_access_acl(entry, NOBODY, 6)
    _rewrite_after_the_check(monkeypatch, entry)
    with pytest.raises(SpliceError) as refused:
        Splice(project).run("greeter.hello", {"name": "x"})
    assert refused.value.code is ErrorCode.INSTALLED_PACKAGE_MODIFIED
    assert list(refused.value.details) == [f"{entry}: a POSIX ACL lets other users write it"]
    assert "PWNED" not in entry.read_text()
    monkeypatch.undo()
    assert sync_in_place(project).ok
    assert Splice(project).run("greeter.hello", {"name": "x"}).output == {"message": "Hello, x."}


@as_another_user
def test_a_directory_above_the_project_another_user_may_write_is_refused(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project lies in a directory every user may write, not sticky (a team's
    ``/srv/shared``): uid 65534 renamed the project away after the check and put a copy of
    theirs in its place before the file view was planned, then rewrote the tool after the
    re-check (which hashes the bound copy: the same bytes until then). On the old code
    their code ran. Refused now, naming the directory; a sticky one (``/tmp``) runs, unless
    its owner is a user who may not write the project."""
    shared = project.parent
    entry = ProjectLayout(project).package_dir(GREETER) / "tools" / "hello.js"
    planned, checked = fileview.plan_view, runtime_module._check_bound

    def swap_then_plan(*args: object, **kwargs: object) -> object:
        as_nobody('mv "$1/p" "$1/old" && cp -r "$1/old" "$1/p"', str(shared))
        return planned(*args, **kwargs)  # type: ignore[arg-type]

    def then_write(*args: object) -> None:
        checked(*args)  # type: ignore[arg-type]
        as_nobody('printf %s "$1" > "$2"', EVIL, str(entry))

    shared.chmod(0o777)
    with monkeypatch.context() as patched:
        patched.setattr(fileview, "plan_view", swap_then_plan)
        patched.setattr(runtime_module, "_check_bound", then_write)
        with pytest.raises(SpliceError) as refused:
            Splice(project).run("greeter.hello", {"name": "x"})
    assert refused.value.code is ErrorCode.INSTALLED_PACKAGE_MODIFIED
    assert list(refused.value.details) == [f"{shared}: every user may write it"]
    assert f"chmod +t {shared}" in (refused.value.hint or "")
    assert not (shared / "old").exists()

    shared.chmod(0o1777)
    assert Splice(project).run("greeter.hello", {"name": "x"}).output == {"message": "Hello, x."}
    os.chown(shared, NOBODY, -1)
    with pytest.raises(SpliceError) as refused:
        Splice(project).run("greeter.hello", {"name": "x"})
    assert refused.value.code is ErrorCode.INSTALLED_PACKAGE_MODIFIED
    # (and the system's sticky /tmp, when it holds the directory: its entry is theirs now)
    assert refused.value.details[0] == (
        f"{shared}: it is owned by user {NOBODY}, who may not write the project"
    )
