"""Install verifies publisher signatures, records signedBy and pins the signer (real binary)."""

from __future__ import annotations

import json
from pathlib import Path

from testing.cli import run_splice
from testing.registry import package_dir
from testing.registry_server import RunningRegistry, user_token


def _as(token: str, server: RunningRegistry, *args: str, cwd: Path | None = None):
    return run_splice(*args, "--registry", server.url, env={"SPLICE_TOKEN": token}, cwd=cwd)


def _lock(project: Path) -> dict:
    return json.loads((project / "splice.lock").read_text())["packages"]


def test_signed_install_records_and_pins_the_signer(
    server: RunningRegistry, tmp_path: Path
) -> None:
    token = user_token(server, "pinner")
    assert (
        _as(token, server, "publish", str(package_dir(tmp_path, "pinner", "tool", "1.0.0"))).code
        == 0
    )
    key_id = run_splice("keys", "generate", "pinner", "--json").json()["keyId"]
    assert _as(token, server, "keys", "register", "@pinner", "--key", "pinner").code == 0
    v101 = package_dir(tmp_path, "pinner", "tool", "1.0.1")
    assert _as(token, server, "publish", str(v101), "--sign", "--key", "pinner").code == 0

    project = tmp_path / "project"
    project.mkdir()
    assert run_splice("init", cwd=project).code == 0
    added = _as(token, server, "add", "@pinner/tool@1.0.1", "--json", cwd=project)
    assert added.code == 0, added.stderr
    assert added.json()[0]["signedBy"] == key_id
    assert _lock(project)["@pinner/tool"]["signedBy"] == key_id

    # An unsigned newer version inside the range: the pinned signer disappears.
    unsigned = package_dir(tmp_path, "pinner", "tool", "1.0.2")
    assert _as(token, server, "publish", str(unsigned)).code == 0
    before = (project / "splice.lock").read_bytes()
    refused = _as(token, server, "add", "@pinner/tool@1.0.2", "--json", cwd=project)
    assert refused.code == 1
    assert refused.json()["error"]["code"] == "SIGNER_CHANGED"
    assert (project / "splice.lock").read_bytes() == before

    allowed = _as(
        token, server, "add", "@pinner/tool@1.0.2", "--allow-signer-change", "--json", cwd=project
    )
    assert allowed.code == 0, allowed.stderr
    assert "signedBy" not in _lock(project)["@pinner/tool"]


def test_require_signed_refuses_an_unsigned_package(
    server: RunningRegistry, tmp_path: Path
) -> None:
    token = user_token(server, "plain")
    assert (
        _as(token, server, "publish", str(package_dir(tmp_path, "plain", "tool", "1.0.0"))).code
        == 0
    )
    project = tmp_path / "project"
    project.mkdir()
    run_splice("init", cwd=project)
    refused = _as(token, server, "add", "@plain/tool", "--require-signed", "--json", cwd=project)
    assert refused.code == 1
    assert refused.json()["error"]["code"] == "SIGNATURE_REQUIRED"
    assert not (project / "splice.lock").exists()


def test_official_skills_verify_and_are_pinned_to_the_official_key(tmp_path: Path) -> None:
    from splice_build.spec.official_key import official_key

    run_splice("init", cwd=tmp_path)
    added = run_splice("add", "@splice/example", "--json", cwd=tmp_path)
    assert added.code == 0, added.stderr
    assert _lock(tmp_path)["@splice/example"]["signedBy"] == official_key().key_id
    report = run_splice("verify", "@splice/example", "--json", cwd=tmp_path).json()
    signature = next(c for c in report["checks"] if c["id"] == "signature")
    assert signature["status"] == "passed", signature
    provenance = next(c for c in report["checks"] if c["id"] == "provenance")
    assert provenance["status"] == "passed", provenance


def test_project_policy_requires_signatures_for_listed_namespaces(
    server: RunningRegistry, tmp_path: Path
) -> None:
    token = user_token(server, "policy")
    assert (
        _as(token, server, "publish", str(package_dir(tmp_path, "policy", "tool", "1.0.0"))).code
        == 0
    )
    project = tmp_path / "project"
    project.mkdir()
    (project / "splice.json").write_text(
        json.dumps({"specVersion": 1, "packages": {}, "requireSignatures": ["@policy"]})
    )
    refused = _as(token, server, "add", "@policy/tool", "--json", cwd=project)
    assert refused.code == 1
    assert refused.json()["error"]["code"] == "SIGNATURE_REQUIRED"
    # Another namespace is not covered by the policy; the official skills are signed anyway.
    assert run_splice("add", "@splice/example", cwd=project).code == 0
    saved = json.loads((project / "splice.json").read_text())
    assert saved["requireSignatures"] == ["policy"]


def test_a_malformed_policy_is_an_invalid_project(tmp_path: Path) -> None:
    (tmp_path / "splice.json").write_text(
        json.dumps({"specVersion": 1, "packages": {}, "requireSignatures": ["Not A Namespace"]})
    )
    result = run_splice("list", "--json", cwd=tmp_path)
    assert result.code == 1
    error = result.json()["error"]
    assert error["code"] == "INVALID_PROJECT"
    assert "requireSignatures[0]" in error["message"]
