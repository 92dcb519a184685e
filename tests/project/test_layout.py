"""The .splice/ layout: fixed names, and package ids that cannot escape packages/."""

from __future__ import annotations

from pathlib import Path

import pytest

from splice_build.errors import SpecError
from splice_build.project.layout import LEGACY_LOCK_FILE, LOCK_FILE, PROJECT_FILE, ProjectLayout


def test_paths() -> None:
    layout = ProjectLayout(Path("/p"))
    assert (PROJECT_FILE, LOCK_FILE, LEGACY_LOCK_FILE) == (
        "splice.json",
        "splice.lock",
        "splice-lock.json",
    )
    assert layout.project_file == Path("/p/splice.json")
    assert layout.lock_file == Path("/p/splice.lock")
    assert layout.legacy_lock_file == Path("/p/splice-lock.json")
    assert layout.state_dir == Path("/p/.splice")
    assert layout.packages_dir == Path("/p/.splice/packages")
    assert layout.package_dir("@acme/tool") == Path("/p/.splice/packages/@acme/tool")
    assert layout.tmp_dir == Path("/p/.splice/tmp")
    assert layout.state_lock == Path("/p/.splice/state.lock")
    assert layout.graph_db == Path("/p/.splice/graph.sqlite3")
    assert layout.workspace_dir == Path("/p/workspace")


@pytest.mark.parametrize(
    "bad", ["@acme/../../etc", "@../x", "acme/tool", "@acme/tool/x", "/etc", ""]
)
def test_package_dir_refuses_ids_that_are_not_ids(bad: str) -> None:
    with pytest.raises(SpecError):
        ProjectLayout(Path("/p")).package_dir(bad)
