"""What the grant checks cost a hostile manifest's deep grants (docs/security.md#grants-and-project-state).

A package may ask 1,000 entries a list (schemas/permissions.schema.json), each up to 128
names deep. Such a grant is rarely there yet, and every name below a missing one was asked
about all the same: an ``lstat`` for its real path, a ``stat`` for a ``splice.json`` in it,
one for a ``.git``, per check. 1,000 deep reads cost ``splice list`` 3.6 s of CPU and
``splice run`` 6.7 s (real CLI, a served registry). The work is counted here, in system calls
(no timing): each must stay about one a grant, and each verdict what it was.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from splice_build.spec.permissions import Permissions
from splice_build.spec.project_state import project_state_problems
from testing.manifests import MOST_ENTRIES, deep_grants

if TYPE_CHECKING:
    from splice_build.sdk import Splice

DEEP = deep_grants()


@contextmanager
def counted(*names: str) -> Iterator[Counter[str]]:
    """The paths each of ``os``'s ``names`` (``lstat``, ``stat``) was called with meanwhile."""
    seen: Counter[str] = Counter()
    real = {name: getattr(os, name) for name in names}

    def counting(call: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(path: Any, *args: Any, **kwargs: Any) -> Any:
            seen[os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else ""] += 1
            return call(path, *args, **kwargs)

        return wrapped

    for name, call in real.items():
        setattr(os, name, counting(call))
    try:
        yield seen
    finally:
        for name, call in real.items():
            setattr(os, name, call)


def test_deep_grants_not_made_yet_cost_a_look_each_not_one_a_name(tmp_path: Path) -> None:
    """main: 768,512 ``lstat`` and ``stat`` calls (every name of each grant, for its real
    path, a ``splice.json`` and a ``.git``); each grant is now looked at below its first
    missing name no more."""
    permissions = Permissions.from_json({"fs": {"read": DEEP, "write": DEEP}})
    with counted("lstat", "stat") as seen:
        assert project_state_problems(permissions, root=tmp_path) == []
    calls = sum(seen.values())
    assert calls < 10 * MOST_ENTRIES


def test_a_deep_grant_below_another_project_is_still_refused(tmp_path: Path) -> None:
    """The directories skipped are those below a missing name: one above it that holds a
    project is still looked at, for reading and writing."""
    member = tmp_path / "packages" / "a"
    member.mkdir(parents=True)
    (member / "splice.json").write_text("{}")
    deep = "packages/a/.env.d/" + "/".join(["b"] * 110)  # .env.d is not there
    permissions = Permissions.from_json({"fs": {"read": [deep], "write": [deep]}})
    reached = f"reaches the .env* files of the project {member}"
    problems = project_state_problems(permissions, root=tmp_path)
    fields = [line.split(": ", 1)[0] for line in problems]
    assert fields == ["permissions.fs.read", "permissions.fs.write"]
    assert all(f'"{deep}" {reached}' in line for line in problems)


def test_the_consent_lines_of_deep_grants_resolve_each_directory_once(tmp_path: Path) -> None:
    """main: ``os.path.realpath`` of every line, 128 ``lstat`` calls a grant and the root's
    again; the lines are the same."""
    permissions = Permissions.from_json({"fs": {"read": DEEP[:100], "write": []}})
    with counted("lstat") as seen:
        lines = permissions.describe(tmp_path)
    assert lines == [f"read files: {tmp_path}/{entry}" for entry in DEEP[:100]]
    calls = sum(seen.values())
    assert calls < 300


def _installed(tmp_path: Path) -> tuple[Splice, str]:
    """A project with ``@acme/greeter`` granted 20 deep reads, none made; the real path of
    the first one's first name."""
    from splice_build.sdk import Splice
    from testing.registry_fixtures import embedded_store, publish

    grants = {"fs": {"read": DEEP[:20], "write": []}, "network": [], "env": []}
    publish(embedded_store(Path(os.environ["SPLICE_HOME"])), tmp_path / "work", permissions=grants)
    splice = Splice.init(tmp_path / "project", registry="embedded", broker=False)
    splice.add(["@acme/greeter"], accept_permissions=True)
    return splice, os.path.realpath(tmp_path / "project" / DEEP[0].split("/")[0])


def test_a_listed_copy_resolves_each_grant_once(tmp_path: Path) -> None:
    """``splice list`` (``Splice.list``) checks a copy's grants against the project's state
    and, for its consent, where they lead: main resolved each grant afresh for the second,
    so the missing name of each was asked twice (and every name of a deep grant, before
    the first mend)."""
    splice, granted = _installed(tmp_path)
    with counted("lstat") as seen:
        assert [row["status"] for row in splice.list()] == ["ok"]
    assert seen[granted] == 1


@pytest.mark.node
def test_a_call_resolves_each_grant_once_for_the_copy_and_once_for_the_call(
    tmp_path: Path,
) -> None:
    """A call checks the copy (as ``list`` does), then the runtime checks the grants again
    as it starts the tool (runtime/runtime.py ``_granted_paths``: afresh, a link may have
    changed since), where they lead as well: main resolved them four times."""
    splice, granted = _installed(tmp_path)
    with counted("lstat") as seen:
        assert splice.run("greeter.hello", {"name": "x"}).ok
    assert seen[granted] == 2
