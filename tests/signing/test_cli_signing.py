"""End to end: the real `splice` binary signing against a real registry server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests

from splice_build.errors import ErrorCode, InstallError
from splice_build.install.checks import AllOf, Candidate, Expected, Sha256Matches
from splice_build.install.signature_check import SignatureValid
from splice_build.spec.signing import check_signatures
from testing.cli import Completed, run_splice
from testing.registry import package_dir
from testing.registry_server import RunningRegistry, user_token
from testing.signing import with_field


def as_user(token: str, server: RunningRegistry, *args: str) -> Completed:
    return run_splice(*args, "--registry", server.url, env={"SPLICE_TOKEN": token})


def as_user_in(cwd: Path, token: str, server: RunningRegistry, *args: str) -> Completed:
    return run_splice(*args, "--registry", server.url, cwd=cwd, env={"SPLICE_TOKEN": token})


def ok(done: Completed) -> Completed:
    assert done.code == 0, (done.stdout, done.stderr)
    return done


def error_of(done: Completed, exit_code: int = 1) -> dict:
    assert done.code == exit_code, (done.stdout, done.stderr)
    return done.json()["error"]


def metadata(server: RunningRegistry, package_id: str, version: str) -> dict:
    ns, name = package_id[1:].split("/")
    response = requests.get(f"{server.url}/packages/{ns}/{name}/{version}", timeout=10)
    response.raise_for_status()
    return response.json()


def signer_of(meta: dict) -> str | None:
    return check_signatures(
        meta["signatures"],
        package_id=meta["name"],
        version=meta["version"],
        integrity=meta["integrity"],
    ).signed_by


def publisher(server: RunningRegistry, pkg_root: Path, user: str) -> tuple[str, str]:
    """A user whose namespace exists (one unsigned publish) and who has a registered key."""
    token = user_token(server, user)
    ok(as_user(token, server, "publish", str(package_dir(pkg_root, user, "tool", "1.0.0"))))
    generated = ok(run_splice("keys", "generate", user, "--json")).json()
    ok(as_user(token, server, "keys", "register", f"@{user}", "--key", user))
    return token, generated["keyId"]


def test_keys_generate_never_overwrites() -> None:
    first = ok(run_splice("keys", "generate", "--json")).json()
    path = Path(first["path"])
    before = path.read_bytes()
    assert path.stat().st_mode & 0o777 == 0o600
    error = error_of(run_splice("keys", "generate", "--json"))
    assert error["code"] == "KEY_EXISTS"
    assert path.read_bytes() == before
    listed = ok(run_splice("keys", "list", "--json")).json()["keys"]
    assert [(k["name"], k["keyId"]) for k in listed] == [("default", first["keyId"])]
    assert "BEGIN PRIVATE KEY" not in json.dumps(first)


def test_register_then_publish_sign_and_sign_dir(server: RunningRegistry, tmp_path: Path) -> None:
    token, key_id = publisher(server, tmp_path, "signer")
    keys = ok(run_splice("keys", "list", "@signer", "--registry", server.url, "--json")).json()
    assert [k["keyId"] for k in keys["keys"]] == [key_id]

    v2 = package_dir(tmp_path, "signer", "tool", "1.0.1")
    done = ok(as_user(token, server, "publish", str(v2), "--sign", "--key", "signer", "--json"))
    assert done.json()["signedBy"] == key_id
    assert signer_of(metadata(server, "@signer/tool", "1.0.1")) == key_id

    v1 = tmp_path / "signer-tool-1.0.0"
    signed = as_user(
        token, server, "sign", "@signer/tool@1.0.0", "--dir", str(v1), "--key", "signer"
    )
    assert "Signed @signer/tool@1.0.0" in ok(signed).stdout
    assert signer_of(metadata(server, "@signer/tool", "1.0.0")) == key_id


def test_signing_mismatched_bytes_is_refused(server: RunningRegistry, tmp_path: Path) -> None:
    token, key_id = publisher(server, tmp_path, "careful")
    source = tmp_path / "careful-tool-1.0.0"
    published = (source / "SKILL.md").read_bytes()
    (source / "SKILL.md").write_text("# Edited after publishing\n")
    args = ("sign", "@careful/tool@1.0.0", "--dir", str(source), "--key", "careful", "--json")
    error = error_of(as_user(token, server, *args))
    assert error["code"] == "INTEGRITY_MISMATCH"
    assert "differs from the published artifact" in error["message"]
    other = package_dir(tmp_path / "other", "careful", "tool", "2.0.0")
    args = ("sign", "@careful/tool@1.0.0", "--dir", str(other), "--key", "careful", "--json")
    assert error_of(as_user(token, server, *args))["code"] == "INTEGRITY_MISMATCH"
    assert metadata(server, "@careful/tool", "1.0.0")["signatures"] == []
    # without --dir the current directory is the source compared
    (source / "SKILL.md").write_bytes(published)
    ok(as_user_in(source, token, server, "sign", "@careful/tool@1.0.0", "--key", "careful"))
    assert signer_of(metadata(server, "@careful/tool", "1.0.0")) == key_id


def test_a_version_the_signer_did_not_build_is_never_signed(
    server: RunningRegistry, tmp_path: Path
) -> None:
    """A publish-only CI token leaks; with it, someone publishes 1.0.1. The owner, who
    builds 1.0.1 too, runs `splice sign @leaky/tool@1.0.1`. It used to download the
    registry's bytes, check them against the registry's own metadata (they agree: the
    registry stored what was published) and sign them: the leaked token's release became
    one the owner vouches for. Now it is compared with the owner's source and refused."""
    token, _key_id = publisher(server, tmp_path, "leaky")
    ci = ok(as_user(token, server, "token", "create", "--namespace", "leaky", "--json"))
    evil = package_dir(tmp_path / "evil", "leaky", "tool", "1.0.1")
    (evil / "tools" / "hello.js").write_text("export default async () => ({ stolen: 1 });\n")
    ok(as_user(ci.json()["token"], server, "publish", str(evil)))
    own = package_dir(tmp_path / "own", "leaky", "tool", "1.0.1")

    signed = as_user_in(own, token, server, "sign", "@leaky/tool@1.0.1", "--key", "leaky", "--json")
    error = error_of(signed)
    assert error["code"] == "INTEGRITY_MISMATCH"
    assert "differs from the published artifact" in error["message"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    args = ("sign", "@leaky/tool@1.0.1", "--key", "leaky", "--json")
    error = error_of(as_user_in(elsewhere, token, server, *args), exit_code=2)
    assert error["code"] == "USAGE"
    assert "not a package directory" in error["message"]
    assert metadata(server, "@leaky/tool", "1.0.1")["signatures"] == []


def test_tampered_or_moved_signatures_do_not_verify(
    server: RunningRegistry, tmp_path: Path
) -> None:
    token, key_id = publisher(server, tmp_path, "moved")
    source = tmp_path / "moved-tool-1.0.0"
    ok(as_user_in(source, token, server, "sign", "@moved/tool@1.0.0", "--key", "moved"))
    ok(as_user(token, server, "publish", str(package_dir(tmp_path, "moved", "tool", "1.0.1"))))
    v1, v2 = metadata(server, "@moved/tool", "1.0.0"), metadata(server, "@moved/tool", "1.0.1")
    (signature,) = v1["signatures"]

    # the registry refuses the 1.0.0 signature for 1.0.1 (other version, other bytes)
    url = f"{server.url}/packages/moved/tool/1.0.1/signatures"
    headers = {"authorization": f"Bearer {token}"}
    body = {"keyId": key_id, "signature": signature["signature"]}
    response = requests.post(url, json=body, headers=headers, timeout=10)
    assert response.status_code == 422 and response.json()["error"]["code"] == "INVALID_SIGNATURE"
    assert (
        requests.post(url, json={"keyId": key_id}, headers=headers, timeout=10).status_code == 400
    )
    stranger = {"keyId": "ed25519:" + "0" * 16, "signature": signature["signature"]}
    response = requests.post(url, json=stranger, headers=headers, timeout=10)
    assert response.status_code == 403 and response.json()["error"]["code"] == "KEY_NOT_REGISTERED"

    # an installer given tampered metadata fails closed on the real bytes
    data = requests.get(server.url + v1["download"], timeout=10).content
    cases = {
        "moved to 1.0.1": (v2, [signature]),
        "other signature": (v1, [with_field(signature, signature=signature["signature"][::-1])]),
        "other key": (v1, [with_field(signature, keyId="ed25519:" + "1" * 16)]),
    }
    for name, (meta, signatures) in cases.items():
        download = server.url + meta["download"]
        payload = data if meta is v1 else requests.get(download, timeout=10).content
        expected = Expected(meta["name"], meta["version"], meta["integrity"], meta["size"])
        with pytest.raises(InstallError) as info:
            AllOf([Sha256Matches(), SignatureValid(signatures)]).check(Candidate(payload, expected))
        assert info.value.code is ErrorCode.SIGNATURE_INVALID, name


def test_revoked_key_is_ignored_and_cannot_sign(server: RunningRegistry, tmp_path: Path) -> None:
    token, key_id = publisher(server, tmp_path, "revoker")
    source = tmp_path / "revoker-tool-1.0.0"
    ok(as_user_in(source, token, server, "sign", "@revoker/tool@1.0.0", "--key", "revoker"))
    done = ok(as_user(token, server, "keys", "revoke", "@revoker", key_id, "--json"))
    assert done.json()["revokedAt"] is not None
    meta = metadata(server, "@revoker/tool", "1.0.0")
    assert meta["signatures"][0]["revokedAt"] is not None
    assert signer_of(meta) is None
    again = as_user(token, server, "keys", "register", "@revoker", "--key", "revoker", "--json")
    assert error_of(again)["code"] == "KEY_REVOKED"
    v2 = package_dir(tmp_path, "revoker", "tool", "1.0.1")
    args = ("publish", str(v2), "--sign", "--key", "revoker", "--json")
    assert error_of(as_user(token, server, *args))["code"] == "KEY_NOT_REGISTERED"
    gone = requests.get(f"{server.url}/packages/revoker/tool/1.0.1", timeout=10)
    assert gone.status_code == 404  # nothing was published unsigned


def test_only_the_owner_registers_keys_over_http(server: RunningRegistry, tmp_path: Path) -> None:
    publisher(server, tmp_path, "owner")
    intruder = user_token(server, "intruder")
    ok(run_splice("keys", "generate", "intruder"))
    args = ("keys", "register", "@owner", "--key", "intruder", "--json")
    error = error_of(as_user(intruder, server, *args))
    assert error["code"] == "FORBIDDEN"
    keys = requests.get(f"{server.url}/namespaces/owner/keys", timeout=10)
    assert keys.headers["access-control-allow-origin"] == "*"
    assert len(keys.json()["keys"]) == 1


@pytest.mark.parametrize(
    "args",
    [
        ("keys", "revoke", "@acme"),
        ("keys", "revoke", "@acme", "not-a-key-id"),
        ("keys", "generate", "a", "b"),
        ("keys", "list", "--key", "x"),
        ("keys", "register", "@Bad!"),
        ("sign", "@acme/tool@^1.0.0"),
        ("sign", "acme"),
        ("publish", ".", "--key", "x"),
    ],
)
def test_usage_errors_exit_2(args: tuple[str, ...]) -> None:
    done = run_splice(*args, "--registry", "http://127.0.0.1:9")
    assert done.code == 2, (done.stdout, done.stderr)
