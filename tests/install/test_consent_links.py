"""A file grant whose path in the project is a symbolic link is shown with where it leads.

The runtime resolves each grant to its real path and grants (and binds in the file view)
that: a cloned checkout's ``docs -> ~/.ssh`` with a package asking ``fs.read: ["docs"]`` let
the tool read the user's private key while the consent prompt said only
``read files: <project>/docs``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from splice_build.errors import ErrorCode, InstallError
from splice_build.install.consent import require_links_accepted, ungranted_lines
from splice_build.install.consent_record import read_record, record_path, write_record
from splice_build.spec.outside_grants import outside_links
from splice_build.spec.permissions import Permissions
from splice_build.spec.project_state import ProjectState
from testing.cli import run_splice
from testing.hostile_packages import tool_returning, write_package
from testing.isolation import needs_os_layer
from testing.registry_fixtures import embedded_store, publish

if TYPE_CHECKING:
    from splice_build.runtime.result import ToolResult
    from splice_build.sdk import Splice


def test_a_grant_through_a_link_names_its_real_path(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    real_root = tmp_path / "real-project"
    (real_root / "ws").mkdir(parents=True)
    root = tmp_path / "project"  # the project itself reached through a link: not flagged
    os.symlink(real_root, root)
    os.symlink(home / ".ssh", real_root / "docs")
    os.symlink("ws", real_root / "out")  # a link inside the project, to the project
    requested = Permissions.from_json(
        {"fs": {"read": ["docs", "docs/keys", "ws", "missing/x"], "write": ["out/new"]}}
    )
    ssh = os.path.realpath(home / ".ssh")
    ws = os.path.realpath(real_root / "ws")
    assert ungranted_lines(requested, None, root) == [
        f"read files: {root}/docs (a link to {ssh})",
        f"read files: {root}/docs/keys (a link to {ssh}/keys)",
        f"read files: {root}/ws",
        f"read files: {root}/missing/x",
        f"write files: {root}/out/new (a link to {ws}/new)",
    ]


def _project_with_links(tmp_path: Path) -> tuple[Path, str]:
    """A project (reached through a link of its own) with ``docs -> ~/.ssh`` and
    ``out -> ws``; the real path of ``~/.ssh``."""
    ssh = tmp_path / "home" / ".ssh"
    ssh.mkdir(parents=True)
    real_root = tmp_path / "real-project"
    (real_root / "ws").mkdir(parents=True)
    root = tmp_path / "project"
    os.symlink(real_root, root)
    os.symlink(ssh, real_root / "docs")
    os.symlink("ws", real_root / "out")
    return root, os.path.realpath(ssh)


def test_a_grant_leading_out_holds_only_where_the_record_accepted_that_path(
    tmp_path: Path,
) -> None:
    """The decision consent and every run take (spec/outside_grants.py): the lock's grant
    says nothing of where a checkout's link leads, so it is asked for, granted or not,
    unless the record names that entry with the very real path it leads to now."""
    root, ssh = _project_with_links(tmp_path)
    requested = Permissions.from_json({"fs": {"read": ["docs", "ws"], "write": ["out/new"]}})
    line = f"read files: {root}/docs (a link to {ssh})"
    assert outside_links(root, requested) == {"docs": ssh}
    assert ungranted_lines(requested, requested, root) == [line]  # no record: a fresh clone
    assert ungranted_lines(requested, requested, root, {"docs": ssh}) == []
    assert ungranted_lines(requested, requested) == []  # no project: no link to judge
    os.remove(root / "docs")
    os.symlink(tmp_path / "home", root / "docs")  # a pull points it elsewhere
    moved = os.path.realpath(tmp_path / "home")
    assert ungranted_lines(requested, requested, root, {"docs": ssh}) == [
        f"read files: {root}/docs (a link to {moved})"
    ]
    with pytest.raises(InstallError) as refused:
        require_links_accepted("@acme/greeter", "1.0.0", requested, root, {"docs": ssh})
    assert refused.value.code is ErrorCode.PERMISSIONS_NOT_GRANTED
    assert refused.value.hint == "Run `splice install`: it asks for them."
    require_links_accepted("@acme/greeter", "1.0.0", requested, root, {"docs": moved})


def test_the_record_keeps_the_links_and_an_older_one_reads_without_them(
    tmp_path: Path,
) -> None:
    root, ssh = _project_with_links(tmp_path)
    home = tmp_path / "splice-home"
    grant = Permissions.from_json({"fs": {"read": ["docs"]}})
    write_record(home, root, {"@acme/greeter": grant}, {"@acme/greeter": {"docs": ssh}})
    record = read_record(home, root)
    assert record is not None and not record.corrupt
    assert dict(record.links_for("@acme/greeter")) == {"docs": ssh}
    older = {"version": 1, "project": os.path.realpath(root), "packages": {
        "@acme/greeter": grant.to_json()}}  # fmt: skip
    record_path(home, root).write_text(json.dumps(older))
    record = read_record(home, root)
    assert record is not None and record.grant_for("@acme/greeter") == grant
    assert dict(record.links_for("@acme/greeter")) == {}
    for shape in (
        {**older, "version": 2, "links": []},
        {**older, "version": True},  # equals 1 in Python, is no version
        {**older, "version": 2, "links": {"@acme/other": {"docs": ssh}}},  # granted nothing
    ):
        record_path(home, root).write_text(json.dumps(shape))
        assert read_record(home, root).corrupt  # type: ignore[union-attr]


def test_a_link_swapped_after_the_check_is_refused_at_the_call(tmp_path: Path) -> None:
    """The SDK checks the record once per call; the runtime resolves the grants again as it
    hands them to the sandbox, so a link retargeted in between runs nothing."""
    from splice_build.sdk import Splice

    root, ssh = _project_with_links(tmp_path)
    (Path(ssh) / "id_ed25519").write_text("PRIVATE-KEY-BYTES")
    home = tmp_path / "splice-home"
    publish(embedded_store(home), tmp_path / "work", permissions={"fs": {"read": ["docs"]}})
    (root / "splice.json").write_text('{"specVersion": 1, "packages": {}}')
    splice = Splice(root, home=home, registry="embedded:", broker=False)
    try:
        splice.add(["@acme/greeter"], accept_permissions=True)  # asked, and accepted
        assert [t["name"] for t in splice.tools()] == ["greeter.hello"]
        pkg, tool = splice.resolve_tool("greeter.hello")
        os.remove(root / "docs")
        os.symlink(tmp_path / "home", root / "docs")
        result = splice.run_resolved(pkg, tool, {"name": "x"})
        assert splice.tools() == []
        assert splice.list()[0]["code"] == "PERMISSIONS_NOT_GRANTED"
    finally:
        splice.close()
    assert result.error is not None and result.error.code is ErrorCode.PERMISSIONS_NOT_GRANTED
    assert "PRIVATE-KEY-BYTES" not in json.dumps(result.to_json())


def _run_added(root: Path, home: Path, then: Callable[[], object]) -> ToolResult:
    """``@acme/greeter`` added to the project at ``root`` (accepted), ``then()`` (which sets
    the hook that lands a rename), and one run of its tool."""
    from splice_build.sdk import Splice

    splice = Splice(root, home=home, registry="embedded:", broker=False)
    try:
        splice.add(["@acme/greeter"], accept_permissions=True)
        pkg, tool = splice.resolve_tool("greeter.hello")
        then()
        return splice.run_resolved(pkg, tool, {"name": "x"})
    finally:
        splice.close()


@needs_os_layer()
@pytest.mark.node
def test_a_link_swapped_in_between_the_check_and_the_file_view_is_not_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runtime checks the grants' real paths, then plans the file view, which resolves
    them again and binds what it finds: ``docs`` renamed for a link to ``~/.ssh`` in between
    (another user of a shared checkout, at any moment) was bound and the key read (a real
    ``splice run`` beside a loop of such renames: 9 of 60 calls). The plan is checked too."""
    from splice_build.runtime.sandbox import SandboxSpec

    root, ssh = _project_with_links(tmp_path)
    (Path(ssh) / "id_ed25519").write_text("PRIVATE-KEY-BYTES")
    os.rename(root / "docs", root / "docs-link")
    (root / "docs").mkdir()  # a directory of the project when consented to, and checked
    home = tmp_path / "splice-home"
    reader = tool_returning(
        "fs.readFileSync(`${ctx.paths.project}/docs/id_ed25519`, 'utf8')",
        imports="import fs from 'node:fs';",
    )
    publish(
        embedded_store(home),
        tmp_path / "work",
        permissions={"fs": {"read": ["docs"]}},
        files={"tools/hello.js": reader},
    )
    (root / "splice.json").write_text('{"specVersion": 1, "packages": {}}')
    planned = SandboxSpec.planned

    def swapped_first(spec: SandboxSpec) -> SandboxSpec:
        if (root / "docs-link").is_symlink():  # the rename lands
            os.rmdir(root / "docs")
            os.rename(root / "docs-link", root / "docs")
        return planned(spec)

    result = _run_added(
        root, home, lambda: monkeypatch.setattr(SandboxSpec, "planned", swapped_first)
    )
    assert "PRIVATE-KEY-BYTES" not in json.dumps(result.to_json())
    assert result.error is not None and result.error.code is ErrorCode.PERMISSIONS_NOT_GRANTED


def _refused_at_every_check(splice: Splice) -> None:
    """``greeter.hello`` of ``splice``'s project, whose file grant cannot be resolved: its run
    and ``list`` refuse it PERMISSIONS_NOT_GRANTED, and an install asks again even accepted
    (PERMISSIONS_NOT_ACCEPTED)."""
    with pytest.raises(InstallError) as refused:
        splice.run("greeter.hello", {"name": "x"})
    assert refused.value.code is ErrorCode.PERMISSIONS_NOT_GRANTED
    assert splice.list()[0]["code"] == "PERMISSIONS_NOT_GRANTED"
    with pytest.raises(InstallError) as asked:
        splice.install(accept_permissions=True)
    assert asked.value.code is ErrorCode.PERMISSIONS_NOT_ACCEPTED


def test_a_grant_whose_link_cannot_be_read_is_refused_with_its_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``readlink`` fails on a link ``lstat`` found (``docs -> /proc/1/cwd`` for a user who is
    not root: EACCES; a link renamed away as it is read: EINVAL), so resolving the grant
    raises. The SDK's check let that OSError out of ``Splice.run`` (the CLI:
    INTERNAL_ERROR, 1 of 100 real ``splice run`` beside a loop of renames); every check
    now refuses with its code, and the prompt's line says so."""
    from splice_build.sdk import Splice

    root, _ssh = _project_with_links(tmp_path)
    os.remove(root / "docs")
    (root / "docs").mkdir()
    home = tmp_path / "splice-home"
    publish(embedded_store(home), tmp_path / "work", permissions={"fs": {"read": ["docs"]}})
    (root / "splice.json").write_text('{"specVersion": 1, "packages": {}}')
    unreadable = os.path.realpath(root / "docs")
    readlink = os.readlink

    def refused_for_docs(path: str | os.PathLike[str], **kw: object) -> str:
        if os.fspath(path) == unreadable:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return readlink(path, **kw)  # type: ignore[arg-type]

    splice = Splice(root, home=home, registry="embedded:", broker=False)
    try:
        splice.add(["@acme/greeter"], accept_permissions=True)
        os.rmdir(unreadable)
        os.symlink("/proc/1/cwd", unreadable)
        monkeypatch.setattr(os, "readlink", refused_for_docs)
        _refused_at_every_check(splice)
    finally:
        splice.close()
    requested = Permissions.from_json({"fs": {"read": ["docs"]}})
    assert ungranted_lines(requested, None, root) == [
        f"read files: {root}/docs (a link that could not be resolved: Permission denied)"
    ]


def test_the_record_accepts_where_the_question_showed_the_link_leading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Consent resolved the grants three times: once for what to record, once to decide and
    once for the question's lines, so a link retargeted between the first and the last was
    shown leading to one place and recorded (then run) as leading to another. It is resolved
    once and the question shows that."""
    from splice_build.install import installer
    from splice_build.sdk import Splice

    root, ssh = _project_with_links(tmp_path)
    home = tmp_path / "splice-home"
    publish(embedded_store(home), tmp_path / "work", permissions={"fs": {"read": ["docs"]}})
    (root / "splice.json").write_text('{"specVersion": 1, "packages": {}}')
    public = tmp_path / "public-docs"
    public.mkdir()
    asked = installer.require_consent

    def retargeted_first(*args: object, **kw: object) -> None:
        if os.readlink(root / "docs") != str(public):  # the retarget lands
            os.remove(root / "docs")
            os.symlink(public, root / "docs")
        asked(*args, **kw)  # type: ignore[arg-type]

    shown: list[str] = []
    monkeypatch.setattr(installer, "require_consent", retargeted_first)
    splice = Splice(root, home=home, registry="embedded:", broker=False)
    try:
        splice.add(
            ["@acme/greeter"], accept_permissions=lambda lines, _: shown.extend(lines) or True
        )
    finally:
        splice.close()
    record = read_record(home, root)
    assert record is not None
    assert dict(record.links_for("@acme/greeter")) == {"docs": ssh}
    assert shown == [f"read files: {os.path.realpath(root)}/docs (a link to {ssh})"]


def test_a_write_grant_is_not_created_through_a_link_swapped_in_after_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runtime creates a missing write grant (``mkdir -p``) after checking the grants:
    ``out`` renamed for a link to a directory elsewhere in between made ``out/new`` there
    (and on the old code bound it for writing). It is resolved, held to the consent and
    made following no link."""
    from splice_build.runtime.runtime import SpliceRuntime

    root, _ssh = _project_with_links(tmp_path)
    os.remove(root / "out")
    (root / "out").mkdir()  # a directory of the project when consented to
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    home = tmp_path / "splice-home"
    publish(embedded_store(home), tmp_path / "work", permissions={"fs": {"write": ["out/new"]}})
    (root / "splice.json").write_text('{"specVersion": 1, "packages": {}}')
    checked = SpliceRuntime._granted_paths

    def swapped_after(runtime: SpliceRuntime, pkg: object) -> object:
        paths = checked(runtime, pkg)  # type: ignore[arg-type]
        if (root / "out").is_dir() and not (root / "out").is_symlink():  # the rename lands
            os.rmdir(root / "out")
            os.symlink(elsewhere, root / "out")
        return paths

    result = _run_added(
        root, home, lambda: monkeypatch.setattr(SpliceRuntime, "_granted_paths", swapped_after)
    )
    assert list(elsewhere.iterdir()) == []
    assert result.error is not None and result.error.code is ErrorCode.PERMISSIONS_NOT_GRANTED


def test_a_grant_through_a_loop_of_links_is_refused_with_its_code(tmp_path: Path) -> None:
    """A pull turns ``docs`` into ``docs -> docs``: a loop, which ``realpath`` leaves as it
    found it, so the grant looked like a directory of the project. ``splice install`` asked
    nothing and every call ended TOOL_CRASHED ("Could not start the tool process: too many
    levels of symbolic links", the file view's plan). Every check now refuses it as a link
    that cannot be resolved, with its code, before any process."""
    from splice_build.sdk import Splice

    root = tmp_path / "project"
    (root / "docs").mkdir(parents=True)
    home = tmp_path / "splice-home"
    publish(embedded_store(home), tmp_path / "work", permissions={"fs": {"read": ["docs"]}})
    (root / "splice.json").write_text('{"specVersion": 1, "packages": {}}')
    splice = Splice(root, home=home, registry="embedded:", broker=False)
    try:
        splice.add(["@acme/greeter"], accept_permissions=True)
        os.rmdir(root / "docs")
        os.symlink("docs", root / "docs")
        _refused_at_every_check(splice)
    finally:
        splice.close()
    assert outside_links(root, Permissions.from_json({"fs": {"read": ["docs/sub"]}})) == {
        "docs/sub": ""
    }


@pytest.mark.node
def test_a_package_run_from_its_directory_is_granted_no_link_out_of_the_project(
    tmp_path: Path,
) -> None:
    """``splice run --dir`` and ``SpliceRuntime.load`` run a package no consent record
    covers, and the runtime held only an installed package's grants to the record: with the
    checkout's ``docs -> ~/.ssh`` a package directory asking ``fs.read: ["docs"]`` read the
    private key, with the OS layer and without. Such a grant is now refused as an unasked
    one is; a link that stays inside the project still runs."""
    from splice_build.runtime.runtime import SpliceRuntime

    root, ssh = _project_with_links(tmp_path)
    (Path(ssh) / "id_ed25519").write_text("PRIVATE-KEY-BYTES")
    (root / "ws" / "id_ed25519").write_text("in the project")
    (root / "splice.json").write_text('{"specVersion": 1, "packages": {}}')
    reader = tool_returning(
        "fs.readFileSync(`${ctx.paths.project}/${input.dir}/id_ed25519`, 'utf8')",
        imports="import fs from 'node:fs';",
    )
    pkg = write_package(tmp_path / "skills", reader, permissions={"fs": {"read": ["docs", "out"]}})
    runtime = SpliceRuntime(project_root=root, home=tmp_path / "splice-home")
    result = runtime.execute(runtime.load(pkg), "t", {"dir": "docs"})
    assert result.error is not None and result.error.code is ErrorCode.PERMISSIONS_NOT_GRANTED
    assert list(result.error.details) == [f"docs -> {ssh}"]
    done = run_splice("--json", "run", "--dir", str(pkg), "hostile.t", "dir=docs", cwd=root)
    assert (done.code, done.json()["error"]["code"]) == (1, "PERMISSIONS_NOT_GRANTED")
    assert "PRIVATE-KEY-BYTES" not in done.stdout + done.stderr
    os.remove(root / "docs")
    os.symlink("ws", root / "docs")  # inside the project: no consent needed
    done = run_splice("--json", "run", "--dir", str(pkg), "hostile.t", "dir=docs", cwd=root)
    assert (done.code, done.json()["output"]) == (0, "in the project")


def _worktree(base: Path) -> tuple[Path, Path]:
    """A git checkout ``main`` and its linked worktree ``wt`` (whose ``.git`` is a file
    naming ``main/.git/worktrees/wt``, which names ``main/.git`` its common directory)."""
    main = base / "main"
    git = ("git", "-c", "user.name=a", "-c", "user.email=a@b")
    subprocess.run([*git, "init", "-q", str(main)], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], cwd=main, check=True)
    subprocess.run([*git, "worktree", "add", "-q", str(base / "wt")], cwd=main, check=True)
    return main, base / "wt"


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_link_to_the_git_directory_of_a_worktree_is_refused_not_asked(tmp_path: Path) -> None:
    """A linked worktree's ``.git`` is a file; its repository is the main checkout's
    ``.git``, whose configuration and hooks git runs in the worktree. Through a link the
    checkout ships (``gitdir -> ../main/.git``) it was asked for as a link out of the
    project, and a tool granted it set ``core.fsmonitor``, which the user's next ``git
    status`` in the worktree ran. It is refused as the project's ``.git`` is, also for a
    project in a subdirectory of the worktree."""
    home = tmp_path / "home"
    publish(embedded_store(home), tmp_path / "work", permissions={"fs": {"write": ["gitdir"]}})
    main, worktree = _worktree(tmp_path)
    (worktree / "splice.json").write_text('{"specVersion": 1, "packages": {}}\n')
    os.symlink("../main/.git", worktree / "gitdir")
    env = {"SPLICE_HOME": str(home), "SPLICE_REGISTRY": "embedded:"}
    done = run_splice(
        "--json", "add", "@acme/greeter", "--accept-permissions", cwd=worktree, env=env
    )
    assert done.code == 1, done.stdout
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "INVALID_MANIFEST"
    common = os.path.realpath(main / ".git")
    assert error["details"] == [
        'permissions.fs.write: "gitdir" would include the project\'s git directory '
        f"{common}/worktrees/wt and the project's git directory {common}"
    ]
    app = worktree / "app"
    app.mkdir()
    os.symlink("../../main/.git/hooks", app / "hooks")
    assert ProjectState(app.resolve()).fs_problem("hooks", write=False) == (
        f'"hooks" is inside the project\'s git directory {common}'
    )
