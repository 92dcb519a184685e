"""A grant never reaches the state of another project either: a member below the root
(``packages/a/.env``, ``packages/a/.splice``) or, through a link, a project beside it
(spec/project_state.py ``_other_project_problem``, docs/security.md#grants-and-project-state).

The root's tool granted ``fs.read: ["packages/a/.env"]`` and ``fs.write:
["packages/a/.splice"]`` read the member's provider key (a key no tool may hold) and
rewrote the member's installed code, and the member's own tools still ran: the rule held
only the root's own state, and a grant holding a whole member only once it contains it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpliceError
from splice_build.spec.project_state import fs_entry_problem
from testing.registry_fixtures import embedded_store, new_project, publish

_READER = """import fs from 'node:fs';
export default function hello(input, ctx) {
  return { message: fs.readFileSync(ctx.paths.project + '/packages/a/.env', 'utf8') };
}
"""


def test_a_grant_into_a_member_or_a_linked_project_is_refused(tmp_path: Path) -> None:
    root = new_project(Path(os.path.realpath(tmp_path)) / "repo")
    member = new_project(root / "packages" / "a")
    beside = new_project(root.parent / "b")
    (root / "b-state").symlink_to(beside / ".splice")
    (root / "b-src").symlink_to(beside / "src")
    assert fs_entry_problem("packages/a/.env", root) == (
        f'"packages/a/.env" reaches the .env* files of the project {member}'
    )
    assert "reaches the .splice/ of the project" in (
        fs_entry_problem("packages/a/.splice/packages", root) or ""
    )
    assert "reaches the splice.lock of the project" in (
        fs_entry_problem("packages/a/splice.lock", root) or ""
    )
    assert (
        fs_entry_problem("b-state", root)
        == f'"b-state" reaches the .splice/ of the project {beside}'
    )
    (member / "up").symlink_to(root / ".env")
    assert fs_entry_problem("up", member) == f'"up" reaches the .env* files of the project {root}'
    assert fs_entry_problem("packages/a/out", root) is None
    assert fs_entry_problem("b-src", root) is None
    assert fs_entry_problem("packages/a.env", root) is None  # no project there


@pytest.mark.node
def test_a_root_tool_recorded_before_the_member_was_made_runs_nothing(tmp_path: Path) -> None:
    """Consented while ``packages/a`` was a plain directory; once it is a project with its
    provider key in ``.env``, the root's tool is refused before any process starts."""
    from splice_build.sdk import Splice

    home = tmp_path / "home"
    publish(embedded_store(home), tmp_path / "work", name="reader",
            permissions={"fs": {"read": ["packages/a/.env"]}}, files={"tools/hello.js": _READER})  # fmt: skip
    root = new_project(tmp_path / "repo")
    (root / "packages" / "a").mkdir(parents=True)
    outer = Splice(root, home=home, registry="embedded:", broker=False)
    try:
        outer.add(["@acme/reader"], accept_permissions=True)
        member = new_project(root / "packages" / "a")
        (member / ".env").write_text("TAVILY_API_KEY=tvly-member-key\n")
        with pytest.raises(SpliceError) as refused:
            outer.run("reader.hello", {"name": "x"})
    finally:
        outer.close()
    assert refused.value.code is ErrorCode.PERMISSIONS_NOT_GRANTED
    assert any("reaches the .env* files of the project" in d for d in refused.value.details)
