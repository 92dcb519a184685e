"""Regressions that hold: `splice add` through the malicious registry refuses a twisted version
answer (other bytes, other size, widened permissions, another package's manifest) or a
download whose `x-splice-integrity` header contradicts the version answer, with the
install's own codes, and leaves the project byte-identical."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from testing.cli import run_splice
from testing.counting_proxy import Headers
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


def _integrity_header(value: str | None) -> Callable[[str, Headers], Headers]:
    """Answers with ``x-splice-integrity`` set to ``value`` on downloads (``None``: removed)."""

    def twist(path: str, headers: Headers) -> Headers:
        if not path.endswith("/download"):
            return headers
        kept = [(k, v) for k, v in headers if k.lower() != "x-splice-integrity"]
        return kept if value is None else [*kept, ("x-splice-integrity", value)]

    return twist


@pytest.mark.parametrize(
    ("header", "code"),
    [
        ("sha256-" + "1" * 64, "INTEGRITY_MISMATCH"),
        ("sha512-not-a-digest", "INTEGRITY_MISMATCH"),
        ("", "INTEGRITY_MISMATCH"),
        (None, None),
    ],
    ids=["other-digest", "malformed", "empty", "absent"],
)
def test_a_download_whose_integrity_header_disagrees_is_refused(
    served, tmp_path: Path, header: str | None, code: str | None
) -> None:
    """The bytes and the metadata agree; only the header says otherwise (docs/compatibility.md
    #install-pipeline, step 3). Without the header the same bytes install."""
    registry, package = served
    project = tmp_path / "project"
    project.mkdir()
    assert run_splice("init", cwd=project).code == 0
    before = state_bytes(project)
    registry.twist_headers = _integrity_header(header)
    try:
        done = run_splice(
            "--json", "--registry", registry.url, "add", package.package_id, cwd=project
        )
    finally:
        registry.twist_headers = None
    if code is None:
        assert done.code == 0, done.stdout + done.stderr
        return
    assert done.code == 1, done.stdout + done.stderr
    error = done.json()["error"]
    assert error["code"] == code, error
    assert "x-splice-integrity" in error["message"]
    assert "Traceback" not in done.stderr
    assert state_bytes(project) == before
