"""A signed package restored from the cache is verified again and reports its real signer.

docs/signing.md#restoring-from-the-cache: the signatures that verified at install are kept
with the cached artifact; a restore (files removed or modified) verifies them again over the
cached bytes, also offline (the registry stopped), under ``requireSignatures`` or
``--require-signed``, and reports the key that signed. `splice install` never prints
``signature: unsigned`` for a signed package. Real registry on 127.0.0.1, real binary.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from splice_build.install.cache import ArtifactCache
from splice_build.project.home import SpliceHome
from splice_build.project.layout import ProjectLayout
from testing.cli import Completed, run_splice
from testing.project_state import state_bytes
from testing.registry import package_dir
from testing.registry_server import RunningRegistry, registry_server, user_token
from testing.signing import new_key, signature_entry

PACKAGE = "@sealed/tool"


@pytest.fixture
def signed(tmp_path: Path) -> Iterator[tuple[RunningRegistry, str]]:
    """A registry with @sealed/tool@1.0.0 signed by a registered key; (server, key id)."""
    with registry_server(
        tmp_path / "data", "--publish-limit", "0", "--request-limit", "0"
    ) as server:
        env = {"SPLICE_TOKEN": user_token(server, "sealed")}
        registry = ("--registry", server.url)
        first = package_dir(tmp_path / "src", "sealed", "tool", "0.9.0")  # creates the namespace
        assert run_splice("publish", str(first), *registry, env=env).code == 0
        key_id = run_splice("keys", "generate", "sealed", "--json").json()["keyId"]
        assert (
            run_splice("keys", "register", "@sealed", "--key", "sealed", *registry, env=env).code
            == 0
        )
        source = package_dir(tmp_path / "src", "sealed", "tool", "1.0.0")
        published = run_splice(
            "publish", str(source), "--sign", "--key", "sealed", *registry, env=env
        )
        assert published.code == 0, published.stderr
        yield server, key_id


def _project(tmp_path: Path, server: RunningRegistry, policy: str) -> tuple[Path, tuple[str, ...]]:
    """A project with the signed version installed; the flags its installs use."""
    project = tmp_path / "project"
    project.mkdir()
    assert run_splice("init", "--registry", server.url, cwd=project).code == 0
    flags: tuple[str, ...] = ()
    if policy == "requireSignatures":
        data = json.loads((project / "splice.json").read_text())
        data["requireSignatures"] = ["sealed"]
        (project / "splice.json").write_text(json.dumps(data, indent=2) + "\n")
    else:
        flags = ("--require-signed",)
    added = run_splice("add", f"{PACKAGE}@1.0.0", *flags, cwd=project)
    assert added.code == 0, added.stderr
    return project, flags


def _signed_by(project: Path) -> Any:
    return json.loads((project / "splice.lock").read_text())["packages"][PACKAGE].get("signedBy")


def _damage(project: Path, how: str) -> None:
    directory = ProjectLayout(project).package_dir(PACKAGE)
    if how == "removed":
        shutil.rmtree(directory)
    else:
        (directory / "tools" / "hello.js").write_text("export default () => ({ message: 'x' });\n")


def _signature_store(project: Path) -> Path:
    """The stored signatures of the installed artifact (next to it in the cache)."""
    lock = json.loads((project / "splice.lock").read_text())["packages"][PACKAGE]
    cache = ArtifactCache(SpliceHome.from_env(os.environ).artifact_cache_dir.parent)
    return cache.signatures_path_for(lock["integrity"])


def _runs(project: Path) -> None:
    ran = run_splice("run", "tool.hello", "name=Ada", cwd=project)
    assert ran.code == 0, ran.stderr
    assert json.loads(ran.stdout) == {"message": "Hello, Ada."}


@pytest.mark.parametrize(
    ("damage", "policy", "registry"),
    [
        ("removed", "requireSignatures", "offline"),
        ("modified", "--require-signed", "offline"),
        ("modified", "requireSignatures", "online"),
        ("removed", "--require-signed", "online"),
    ],
)
def test_a_signed_package_is_restored_with_its_signature_verified_again(
    signed: tuple[RunningRegistry, str], tmp_path: Path, damage: str, policy: str, registry: str
) -> None:
    server, key_id = signed
    project, flags = _project(tmp_path, server, policy)
    assert _signed_by(project) == key_id
    _damage(project, damage)
    if registry == "offline":
        server.stop()
    restored = run_splice("install", *flags, cwd=project)
    assert restored.code == 0, restored.stderr
    assert f"signature: verified {key_id}" in restored.stdout, restored.stdout
    assert "unsigned" not in restored.stdout
    _damage(project, damage)
    report = run_splice("--json", "install", *flags, cwd=project)
    assert report.code == 0, report.stderr
    (entry,) = report.json()
    assert entry["signedBy"] == key_id and entry["fromCache"] is True
    assert entry["signature"] == f"verified {key_id}"
    assert _signed_by(project) == key_id
    _runs(project)


def _refused(done: Completed) -> dict[str, Any]:
    assert done.code == 1, done.stdout + done.stderr
    return done.json()["error"]


def test_a_tampered_stored_signature_fails_closed_offline(
    signed: tuple[RunningRegistry, str], tmp_path: Path
) -> None:
    server, _ = signed
    project, _ = _project(tmp_path, server, "requireSignatures")
    store = _signature_store(project)
    stored = json.loads(store.read_text())
    first = stored["signatures"][0]
    first["signature"] = (
        first["signature"][:10]
        + ("A" if first["signature"][10] != "A" else "B")
        + first["signature"][11:]
    )
    store.write_text(json.dumps(stored))
    _damage(project, "removed")
    server.stop()
    before = (project / "splice.lock").read_bytes()
    refused = _refused(run_splice("--json", "install", cwd=project))
    assert refused["code"] == "SIGNATURE_INVALID"
    assert (project / "splice.lock").read_bytes() == before
    assert not ProjectLayout(project).package_dir(PACKAGE).exists()


def test_a_stored_signature_by_another_key_is_a_signer_change(
    signed: tuple[RunningRegistry, str], tmp_path: Path
) -> None:
    """A valid signature, over exactly these bytes, by a key the lock does not pin."""
    server, key_id = signed
    project, _ = _project(tmp_path, server, "requireSignatures")
    store = _signature_store(project)
    stored = json.loads(store.read_text())
    other = new_key(tmp_path / "other-keys", "other")
    stored["signatures"] = [signature_entry(other, PACKAGE, "1.0.0", stored["integrity"])]
    store.write_text(json.dumps(stored))
    _damage(project, "removed")
    server.stop()
    refused = _refused(run_splice("--json", "install", cwd=project))
    assert refused["code"] == "SIGNER_CHANGED"
    assert key_id in refused["message"] and other.key_id in refused["message"]


def test_without_a_stored_signature_an_online_restore_asks_the_registry(
    signed: tuple[RunningRegistry, str], tmp_path: Path
) -> None:
    """A cache written before signatures were stored: the registry's signatures, verified."""
    server, key_id = signed
    project, _ = _project(tmp_path, server, "requireSignatures")
    _signature_store(project).unlink()
    _damage(project, "removed")
    restored = run_splice("install", cwd=project)
    assert restored.code == 0, restored.stderr
    assert f"signature: verified {key_id}" in restored.stdout
    assert _signature_store(project).is_file(), "stored again for the next offline restore"


def test_official_skills_restore_from_the_cache_under_require_signatures(tmp_path: Path) -> None:
    """The official key is pinned in the lock, and its signatures are stored with the artifact."""
    assert run_splice("init", cwd=tmp_path).code == 0
    data = json.loads((tmp_path / "splice.json").read_text())
    data["requireSignatures"] = ["splice"]
    (tmp_path / "splice.json").write_text(json.dumps(data, indent=2) + "\n")
    assert run_splice("add", "@splice/example", cwd=tmp_path).code == 0
    shutil.rmtree(ProjectLayout(tmp_path).package_dir("@splice/example"))
    restored = run_splice("install", cwd=tmp_path)
    assert restored.code == 0, restored.stderr
    assert "signature: verified ed25519:" in restored.stdout, restored.stdout
    kept = run_splice("--json", "install", cwd=tmp_path)
    assert kept.code == 0
    assert kept.json()[0]["signature"].startswith("verified ed25519:"), kept.json()


def test_the_restore_reports_the_real_signer_not_the_locks_claim(
    signed: tuple[RunningRegistry, str], tmp_path: Path
) -> None:
    """A lock whose signedBy names another key: the stored signature says who really signed."""
    server, key_id = signed
    project, _ = _project(tmp_path, server, "requireSignatures")
    lock = json.loads((project / "splice.lock").read_text())
    claimed = "ed25519:" + "0" * 16
    lock["packages"][PACKAGE]["signedBy"] = claimed
    (project / "splice.lock").write_text(json.dumps(lock, indent=2) + "\n")
    _damage(project, "removed")
    server.stop()
    refused = _refused(run_splice("--json", "install", cwd=project))
    assert refused["code"] == "SIGNER_CHANGED"
    assert refused["details"] == [f"pinned: {claimed}", f"found: {key_id}"]


def test_an_unsigned_package_restores_as_unsigned_and_cannot_be_claimed_signed(
    signed: tuple[RunningRegistry, str], tmp_path: Path
) -> None:
    server, key_id = signed
    project = tmp_path / "project"
    project.mkdir()
    assert run_splice("init", "--registry", server.url, cwd=project).code == 0
    assert run_splice("add", f"{PACKAGE}@0.9.0", cwd=project).code == 0
    lock_path = project / "splice.lock"
    lock = json.loads(lock_path.read_text())
    integrity = lock["packages"][PACKAGE]["integrity"]
    cache = ArtifactCache(SpliceHome.from_env(os.environ).artifact_cache_dir.parent)
    registry = lock["packages"][PACKAGE]["registry"]
    assert cache.signatures(integrity, PACKAGE, "0.9.0", registry) == (), "known to be unsigned"
    server.stop()
    _damage(project, "removed")
    restored = run_splice("install", cwd=project)
    assert restored.code == 0, restored.stderr
    assert "signature: unsigned" in restored.stdout
    lock["packages"][PACKAGE]["signedBy"] = key_id  # a lock edited to claim a signer
    lock_path.write_text(json.dumps(lock, indent=2) + "\n")
    _damage(project, "removed")
    refused = _refused(run_splice("--json", "install", cwd=project))
    assert refused["code"] == "SIGNER_CHANGED"
    assert refused["details"] == [f"pinned: {key_id}", "found: no signature"]


def test_an_offline_restore_of_a_lock_pin_obeys_trusted_signers(
    signed: tuple[RunningRegistry, str], tmp_path: Path
) -> None:
    """No signature stored, no registry: the lock's pin stands alone, and only if splice.json's
    trustedSigners list it (a lock edited to pin another key must not outrank them)."""
    server, key_id = signed
    project, _ = _project(tmp_path, server, "requireSignatures")
    other = "ed25519:" + "0" * 16
    assert run_splice("keys", "trust", "@sealed", other, cwd=project).code == 0
    _signature_store(project).unlink()
    _damage(project, "removed")
    server.stop()
    before = state_bytes(project)
    refused = _refused(run_splice("--json", "install", cwd=project))
    assert refused["code"] == "SIGNER_UNTRUSTED"
    assert key_id in refused["message"]
    assert state_bytes(project) == before
