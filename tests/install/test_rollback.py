"""Rollback and freeze: a registry that hides its newest versions cannot move a project back.

The real registry server behind the hostile proxy (testing/hostile_registry.py) lists every
version but the newest, and names an old one ``latest``. ``add`` and ``update`` keep the
locked version instead of downgrading to the best version still listed, and ``outdated``
does not offer the older one as ``wanted`` (docs/security.md#rollback-and-freeze)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testing.cli import run_splice
from testing.hostile_registry import HostileRegistry, hostile_registry
from testing.registry_fixtures import new_project, publish

GREETER = "@acme/greeter"
NEWEST = "1.2.0"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileRegistry]:
    root = tmp_path_factory.mktemp("rollback")
    for version in ("1.0.0", "1.1.0", NEWEST):
        publish(root / "data", root / "work", version=version)
    with hostile_registry(root / "data") as registry:
        yield registry


def _hide_newest(path: str, answer: Any) -> Any:
    """The package answer without the newest version, an old one named ``latest``."""
    if path.split("?", 1)[0] != f"/packages/{GREETER[1:]}" or not isinstance(answer, dict):
        return answer
    answer = copy.deepcopy(answer)
    answer["versions"] = [v for v in answer["versions"] if v["version"] != NEWEST]
    answer["latest"] = "1.0.0"
    return answer


def _locked(project: Path) -> str:
    return json.loads((project / "splice.lock").read_text())["packages"][GREETER]["version"]


@pytest.mark.parametrize(
    ("command", "range_text"),
    [(("add", GREETER), f"^{NEWEST}"), (("update",), "^1.0.0"), (("sync",), "^1.0.0")],
    ids=["add", "update", "sync"],
)
def test_a_registry_hiding_the_newest_version_cannot_downgrade(
    served: HostileRegistry, tmp_path: Path, command: tuple[str, ...], range_text: str
) -> None:
    project = new_project(tmp_path / "p")
    added = run_splice("--json", "--registry", served.url, "add", GREETER, cwd=project)
    assert added.code == 0, added.stdout + added.stderr
    assert _locked(project) == NEWEST
    data = json.loads((project / "splice.json").read_text())
    data["packages"][GREETER] = range_text
    (project / "splice.json").write_text(json.dumps(data))
    served.twist = _hide_newest
    try:
        outdated = run_splice("--json", "outdated", cwd=project)
        done = run_splice("--json", *command, cwd=project)
    finally:
        served.twist = None
    assert done.code == 0, done.stdout + done.stderr
    assert _locked(project) == NEWEST
    assert json.loads((project / "splice.json").read_text())["packages"][GREETER] == range_text
    row = outdated.json()[0]
    assert (row["current"], row["wanted"], row["status"]) == (NEWEST, NEWEST, "up-to-date")
