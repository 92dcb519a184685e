"""A token scoped to some namespaces learns nothing of the user's other tokens
(docs/registry.md#users-tokens-and-namespaces): `token list` hides them, and a refused
`token revoke` must not describe them either. Before the mend the refusal's detail named the
other token's scope ("token tok_… scope: secretproj"), so a token leaked for `@acme` could
read, id by id, which namespaces the user's other tokens publish to. The real server and the
real `splice` binary.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testing.cli import run_splice
from testing.registry_server import RunningRegistry, registry_server, user_token


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningRegistry]:
    root = tmp_path_factory.mktemp("scoped-revoke")
    with registry_server(root / "data", "--request-limit", "0") as running:
        yield running


def _as(server: RunningRegistry, token: str, *args: str) -> dict[str, object]:
    done = run_splice("--json", "--registry", server.url, *args, env={"SPLICE_TOKEN": token})
    result: dict[str, object] = done.json()
    return result


@pytest.mark.parametrize("other_scope", [["secretproj"], ["acme", "secretproj"], None])
def test_a_scoped_token_cannot_learn_another_tokens_scope_by_revoking_it(
    server: RunningRegistry, other_scope: list[str] | None
) -> None:
    full = user_token(server, "alice")
    scoped = user_token(server, "alice", "--namespace", "acme")
    if other_scope is None:  # an unscoped managing token: "every namespace"
        other = user_token(server, "alice")
        other_id = _as(server, other, "whoami")["token"]["id"]  # type: ignore[index]
    else:
        flags = [word for ns in other_scope for word in ("--namespace", ns)]
        created = _as(server, full, "token", "create", "--label", "hidden-label", *flags)
        other_id = created["id"]
    done = run_splice(
        "--json",
        "--registry",
        server.url,
        "token",
        "revoke",
        str(other_id),
        env={"SPLICE_TOKEN": scoped},
    )
    assert done.code == 1, done.stdout
    error = done.json()["error"]
    assert error["code"] == "FORBIDDEN"
    assert error["message"] == "A scoped token can only revoke tokens within its own scope"
    assert error["details"] == ["registry code: TOKEN_SCOPE"]
    for secret in ("secretproj", "every namespace", "hidden-label"):
        assert secret not in done.stdout + done.stderr
    listed = _as(server, full, "token", "list")["tokens"]
    assert [t["revokedAt"] for t in listed if t["id"] == other_id] == [None]  # type: ignore[index,union-attr]
