"""Every log line of the registry server is redacted (docs/registry.md, docs/security.md#redaction).

The real server (``splice registry serve`` on 127.0.0.1) serves a store whose directory name is
a GitHub token. The stored artifact of a published version is replaced by a directory, so
``resources/read`` of its SKILL.md over ``POST /mcp`` hits an internal error whose exception
text holds the artifact's path, token included. The server logs the error; the line must
show the token redacted. Another version of the same store, not sabotaged, answers normally
(a SKILL.md once read is kept by the server, so the sabotaged one is never read before).
"""

from __future__ import annotations

import json
from pathlib import Path

import requests

from testing.registry_fixtures import publish
from testing.registry_server import registry_server, user_token

SECRET = "ghp_" + "Lq3" * 12


def _read_skill_doc(url: str, token: str, version: str) -> dict:
    uri = f"splice://registry/acme/greeter/{version}/SKILL.md"
    body = {"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": {"uri": uri}}
    answer = requests.post(
        url + "/mcp",
        data=json.dumps(body),
        headers={
            "authorization": f"Bearer {token}",
            "content-type": "application/json",
            "accept": "application/json",
        },
        timeout=30,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_mcp_internal_error_is_logged_redacted(tmp_path: Path) -> None:
    store = tmp_path / SECRET / "store"
    publish(store, tmp_path / "work")
    publish(store, tmp_path / "work", version="1.0.1")
    packages = store / "artifacts" / "packages" / "acme" / "greeter"
    (artifact,) = (packages / "1.0.0").glob("*.tar.gz")
    with registry_server(store) as server:
        token = user_token(server, "reader")
        assert "contents" in _read_skill_doc(server.url, token, "1.0.1")["result"]
        artifact.unlink()
        artifact.mkdir()  # reading it now raises OSError ("not a regular file") naming the path
        answer = _read_skill_doc(server.url, token, "1.0.0")
        assert answer["error"] == {"code": -32603, "message": "Internal error"}
        server.stop()
        assert server.process.stderr is not None
        logged = server.process.stderr.read()
    assert "internal error in resources/read: OSError" in logged, logged
    assert "not a regular file" in logged, logged
    assert SECRET not in logged
    assert f"{tmp_path}/[REDACTED]/store" in logged
