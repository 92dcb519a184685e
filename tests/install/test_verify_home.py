"""`splice verify` checks the installed copy as `splice run` does, SPLICE_HOME included.

A checkout can ship a lock entry and an installed copy whose grant reaches SPLICE_HOME (here a
home inside the project, which the grant ``userhome`` names; an install refuses such a
manifest, docs/security.md#grants-and-project-state). `splice list` said ``invalid`` and
`splice run` refused it with ``PERMISSIONS_NOT_GRANTED``, but `splice verify` reported every
check passed and exited 0: its ``installed`` check was made without the home. It fails now
with the code `run` gives. So did `splice install` and `splice sync --check` (the graph's
check of the installed copies): "1 package(s) match splice.lock", exit 0, for the package
`list` sent them to repair; they now try to restore it and refuse it as `add` would
(``INVALID_MANIFEST``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpliceError
from splice_build.registry.client.embedded import EmbeddedRegistryClient
from splice_build.sdk import Splice
from splice_build.spec.archive import read_archive
from splice_build.spec.digests import files_digest
from testing.registry_fixtures import new_project, publish

PACKAGE = "@acme/greeter"
GRANT = {"fs": {"read": ["userhome"], "write": []}, "network": [], "env": []}


def test_verify_fails_a_grant_that_reaches_splice_home(tmp_path: Path) -> None:
    project = new_project(tmp_path / "p", {PACKAGE: "^1.0.0"})
    home = project / "userhome"
    published = publish(home / "registry", tmp_path / "work", permissions=GRANT)
    client = EmbeddedRegistryClient(home / "registry")
    try:
        files = read_archive(client.download(PACKAGE, "1.0.0"))
    finally:
        client.close()
    for relative, data in files.items():  # the installed copy the checkout ships
        path = project / ".splice/packages" / PACKAGE / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    entry = {
        "version": "1.0.0",
        "integrity": published["integrity"],
        "size": published["size"],
        "files": files_digest(files),
        "registry": "embedded:",
        "resolved": "embedded:/packages/acme/greeter/1.0.0/download",
        "permissions": GRANT,
    }
    lock = {"lockfileVersion": 1, "packages": {PACKAGE: entry}}
    (project / "splice.lock").write_text(json.dumps(lock, indent=2) + "\n")
    splice = Splice(project, home=home)
    (row,) = splice.list()
    assert row["code"] == "PERMISSIONS_NOT_GRANTED"
    report = splice.verify(PACKAGE)
    installed = {c["id"]: c for c in report["checks"]}["installed"]
    assert (installed["status"], installed["code"]) == ("failed", "PERMISSIONS_NOT_GRANTED")
    assert report["verified"] is False
    with pytest.raises(SpliceError) as refused:  # the repair `list` asks for says why too
        splice.install()
    assert refused.value.code is ErrorCode.INVALID_MANIFEST
