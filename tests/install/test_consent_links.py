"""A file grant whose path in the project is a symbolic link is shown with where it leads.

The runtime resolves each grant to its real path and grants (and binds in the file view)
that: a cloned checkout's ``docs -> ~/.ssh`` with a package asking ``fs.read: ["docs"]`` let
the tool read the user's private key while the consent prompt said only
``read files: <project>/docs``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, InstallError
from splice_build.install.consent import require_links_accepted, ungranted_lines
from splice_build.install.consent_record import read_record, record_path, write_record
from splice_build.spec.outside_grants import outside_links
from splice_build.spec.permissions import Permissions
from testing.registry_fixtures import embedded_store, publish


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
