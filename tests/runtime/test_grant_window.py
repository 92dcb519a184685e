"""The grant check that a call makes at its start sees what changed since the call's
earlier checks (runtime/runtime.py ``_grant``, ``_spec``).

``_grant`` checks the grants before it creates a missing write directory, and leaves the
check to ``_spec`` when there is nothing to create. What lands in between (the call's own
``mkdir -p``, a tool of another call of the same server writing in a grant, a link swapped
in) is judged at the start: the call is refused, never run on an earlier answer. Each case
first runs the tool once in the same long-lived ``Splice``, so the process remembers the
grant's walk as clean."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode
from testing.registry_fixtures import embedded_store, publish

pytestmark = pytest.mark.node


def _plant_repository(root: Path) -> None:
    (root / "src" / "lib" / ".git").mkdir(parents=True, exist_ok=True)


def _swap_for_link(root: Path) -> None:
    os.rename(root / "src", root.parent / "moved")
    os.symlink(root.parent / "moved", root / "src")


@pytest.mark.parametrize(
    ("existing", "attack"),
    [(True, _plant_repository), (False, _plant_repository), (True, _swap_for_link)],
    ids=["repository-in-an-existing-grant", "repository-in-a-created-grant", "link-swapped-in"],
)
def test_what_lands_after_the_earlier_checks_is_refused_at_the_start(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    existing: bool,
    attack: Callable[[Path], None],
) -> None:
    from splice_build.runtime.runtime import SpliceRuntime
    from splice_build.sdk import Splice

    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    home = tmp_path / "splice-home"
    grant = {"fs": {"read": ["src"], "write": ["src"]}}
    publish(embedded_store(home), tmp_path / "work", permissions=grant)
    (root / "splice.json").write_text('{"specVersion": 1, "packages": {}}')
    granted = SpliceRuntime._grant

    def then_attack(runtime: SpliceRuntime, pkg: object) -> None:
        granted(runtime, pkg)  # type: ignore[arg-type]
        attack(root)

    splice = Splice(root, home=home, registry="embedded:", broker=False)
    try:
        splice.add(["@acme/greeter"], accept_permissions=True)
        assert splice.run("greeter.hello", {"name": "x"}).ok
        if not existing:
            os.rmdir(root / "src")  # the next call creates it, then the attack lands
        pkg, tool = splice.resolve_tool("greeter.hello")
        monkeypatch.setattr(SpliceRuntime, "_grant", then_attack)
        result = splice.run_resolved(pkg, tool, {"name": "x"})
    finally:
        splice.close()
    assert result.error is not None
    assert result.error.code is ErrorCode.PERMISSIONS_NOT_GRANTED
