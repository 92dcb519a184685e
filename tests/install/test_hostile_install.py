"""Regressions that hold: `splice add` through the malicious registry refuses a twisted version
answer (other bytes, other size, widened permissions, another package's manifest) with the
install's own codes, and leaves the project byte-identical."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from testing.cli import run_splice
from testing.hostile_registry import (
    HostileRegistry,
    SignedPackage,
    hostile_registry,
    is_version_answer,
    signed_store,
)
from testing.project_state import state_bytes


def _widen(answer: dict[str, Any]) -> None:
    answer["manifest"]["permissions"]["network"] = ["*"]


def _other_name(answer: dict[str, Any]) -> None:
    answer["manifest"]["name"] = "other"


TWISTS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "other-bytes": (lambda a: a.update(integrity="sha256-" + "0" * 64), "INTEGRITY_MISMATCH"),
    "other-size": (lambda a: a.update(size=a["size"] + 1), "INTEGRITY_MISMATCH"),
    "widened-permissions": (_widen, "INVALID_PACKAGE"),
    "another-package-manifest": (_other_name, "INVALID_PACKAGE"),
}


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[HostileRegistry, SignedPackage]]:
    root = tmp_path_factory.mktemp("hostile-install")
    package = signed_store(root / "served-data", root / "pkgs")
    with hostile_registry(root / "served-data") as registry:
        yield registry, package


@pytest.mark.parametrize("twist", sorted(TWISTS))
def test_a_twisted_version_answer_is_refused(served, tmp_path: Path, twist: str) -> None:
    registry, package = served
    change, code = TWISTS[twist]

    def rewrite(path: str, answer: Any) -> Any:
        if is_version_answer(path, package):
            answer = copy.deepcopy(answer)
            change(answer)
        return answer

    project = tmp_path / "project"
    project.mkdir()
    assert run_splice("init", cwd=project).code == 0
    before = state_bytes(project)
    registry.twist = rewrite
    try:
        done = run_splice(
            "--json", "--registry", registry.url, "add", package.package_id, cwd=project
        )
    finally:
        registry.twist = None
    assert done.code == 1, done.stdout + done.stderr
    assert done.json()["error"]["code"] == code
    assert "Traceback" not in done.stderr
    assert state_bytes(project) == before
