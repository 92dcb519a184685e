"""`splice verify` applies the lock's pins against what the registry shows now: after a signed
install, a registry that drops the signature, marks its key revoked, shows another signer or
other bytes makes `verify` fail with the code an install or update would (SIGNER_CHANGED,
LOCK_MISMATCH), naming what changed, and changes nothing in the project."""

from __future__ import annotations

import json
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
from testing.signing import new_key, signature_entry


@pytest.fixture
def signed(tmp_path: Path) -> tuple[Path, SignedPackage]:
    store = tmp_path / "served-data"
    return store, signed_store(store, tmp_path / "pkgs")


@pytest.fixture
def registry(signed: tuple[Path, SignedPackage]) -> Iterator[HostileRegistry]:
    with hostile_registry(signed[0]) as hostile:
        yield hostile


@pytest.fixture
def project(tmp_path: Path, registry: HostileRegistry, signed: tuple[Path, SignedPackage]) -> Path:
    """The package installed honestly: splice.lock pins its signer."""
    project = tmp_path / "project"
    project.mkdir()
    assert run_splice("init", cwd=project).code == 0
    added = run_splice("--registry", registry.url, "add", signed[1].package_id, cwd=project)
    assert added.code == 0, added.stderr
    entry = json.loads((project / "splice.lock").read_text())["packages"][signed[1].package_id]
    assert entry["signedBy"] == signed[1].key_id
    return project


def _on_version(package: SignedPackage, change: Callable[[dict[str, Any]], None]):
    def twist(path: str, answer: Any) -> Any:
        if is_version_answer(path, package):
            change(answer)
        return answer

    return twist


def _dropped(answer: dict[str, Any]) -> None:
    answer["signatures"] = []


def _revoked(answer: dict[str, Any]) -> None:
    for entry in answer["signatures"]:
        entry["revokedAt"] = "2026-01-02T00:00:00.000Z"


def _verify(registry: HostileRegistry, project: Path, package: SignedPackage) -> dict[str, Any]:
    before = state_bytes(project)
    done = run_splice(
        "--json", "--registry", registry.url, "verify", package.package_id, cwd=project
    )
    assert "Traceback" not in done.stderr
    assert state_bytes(project) == before
    report = done.json()
    assert done.code == (0 if report["verified"] else 1), done.stdout
    return report


def _check(report: dict[str, Any], check_id: str) -> dict[str, Any]:
    return next(c for c in report["checks"] if c["id"] == check_id)


def test_an_honest_registry_verifies_every_pin(registry, project, signed) -> None:
    report = _verify(registry, project, signed[1])
    assert report["verified"] is True
    pinned = _check(report, "pinned")
    assert pinned["status"] == "passed"
    assert signed[1].key_id in pinned["message"]


@pytest.mark.parametrize(
    ("change", "said"),
    [(_dropped, "shows no signature"), (_revoked, "revoked")],
    ids=["dropped", "revoked"],
)
def test_a_signature_that_disappears_is_a_changed_signer(
    registry, project, signed, change, said: str
) -> None:
    package = signed[1]
    registry.twist = _on_version(package, change)
    report = _verify(registry, project, package)
    assert report["verified"] is False
    pinned = _check(report, "pinned")
    assert (pinned["status"], pinned["code"]) == ("failed", "SIGNER_CHANGED")
    assert package.key_id in pinned["message"]
    assert said in pinned["message"]


def test_another_signer_is_a_changed_signer(registry, project, signed, tmp_path: Path) -> None:
    """A valid signature over the same bytes by a key the lock does not pin."""
    package = signed[1]
    other = new_key(tmp_path / "other-keys", "mallory")
    forged = signature_entry(other, package.package_id, package.version, package.integrity)
    registry.twist = _on_version(package, lambda answer: answer.update(signatures=[forged]))
    report = _verify(registry, project, package)
    pinned = _check(report, "pinned")
    assert (pinned["status"], pinned["code"]) == ("failed", "SIGNER_CHANGED")
    assert other.key_id in pinned["message"]
    assert _check(report, "signature")["status"] == "passed"  # the signature itself is valid


def test_other_bytes_than_pinned_are_a_lock_mismatch(registry, project, signed) -> None:
    package = signed[1]
    other = "sha256-" + "0" * 64
    registry.twist = _on_version(package, lambda answer: answer.update(integrity=other))
    report = _verify(registry, project, package)
    pinned = _check(report, "pinned")
    assert (pinned["status"], pinned["code"]) == ("failed", "LOCK_MISMATCH")
    assert other in pinned["message"]


def test_verify_outside_any_project_checks_the_registrys_artifact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`splice verify @splice/example` before adding it anywhere was NOT_A_PROJECT; the
    TypeScript CLI verifies a registry package from anywhere. Nothing is pinned or installed
    there, so those two checks are not in the report."""
    from splice_build.cli.main import main

    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["--json", "verify", "@splice/example"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verified"] is True
    assert [c["id"] for c in report["checks"]] == [
        "sha256", "size", "package", "metadata", "signature", "provenance", "source"
    ]  # fmt: skip
    assert list(tmp_path.iterdir()) == []  # no project made
