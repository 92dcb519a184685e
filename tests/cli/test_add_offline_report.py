"""`splice add` with the registry unreachable keeps the locked version (tests/install/
test_add_offline.py); its report says it was offline (docs/cli.md): ``offline: true`` under
``--json`` and an ``offline:`` line in the text, whether the installed copy is kept or
restored from the verified cache. Both said ``offline: false``, as if the registry had
answered. The report is the one ``splice add --json`` prints (``InstallReport.to_json``) and
its text the command's own (``report_lines``)."""

from __future__ import annotations

import shutil
from pathlib import Path

from splice_build.cli.commands.add import report_lines
from splice_build.sdk import Splice
from testing.crafted_registry import crafted_registry
from testing.registry_fixtures import new_project

PACKAGE = "@acme/greeter"


def test_an_offline_add_reports_offline(tmp_path: Path) -> None:
    project = new_project(tmp_path / "p")
    with crafted_registry(tmp_path / "work") as registry:
        registry.add_version(PACKAGE, "1.0.0")
        registry.list_versions(PACKAGE, ["1.0.0"])
        (online,) = Splice(project, registry=registry.url).add([PACKAGE])
    assert online.offline is False
    # Nothing listens at the registry's address any more.
    splice = Splice(project, registry=registry.url)
    (kept,) = splice.add([PACKAGE])
    assert (kept.already_installed, kept.offline) == (True, True)
    assert report_lines([kept.to_json()]) == [
        "@acme/greeter@1.0.0 is already installed",
        "  offline: the registry is unreachable; the locked version is kept",
    ]
    shutil.rmtree(project / ".splice/packages")
    (restored,) = splice.add([PACKAGE])
    report = restored.to_json()  # what `splice add --json` prints for it
    assert (report["alreadyInstalled"], report["fromCache"], report["offline"]) == (
        False,
        True,
        True,
    )
    assert report_lines([report])[:2] == [
        "Installed @acme/greeter@1.0.0",
        "  offline: installed from the verified local cache",
    ]
