"""The answers to the routes that act as a user are checked like every read
(docs/registry.md#validated-answers): a registry the author logged in to, or an impostor at
its address, cannot crash `whoami`, `token`, `keys register|revoke`, `namespace
add-maintainer`, `publish` or `sign` with an answer of the wrong shape, cannot print a second
line under `token create`'s token, and cannot make `keys register` or `whoami` report another
key or another registry. The real server on 127.0.0.1 behind a proxy that twists one answer;
the real `splice` binary."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from testing.cli import Completed, run_splice
from testing.counting_proxy import counting_proxy
from testing.registry import package_dir
from testing.registry_server import admin, registry_server, user_token

USER = "alice"


class World:
    def __init__(self, url: str, token: str, root: Path) -> None:
        self.url = url
        self.token = token
        self.root = root
        self.twist: Callable[[str, Any], Any] | None = None
        self._versions = itertools.count(1)

    def run(self, *args: str) -> Completed:
        return run_splice("--json", *args, "--registry", self.url, env={"SPLICE_TOKEN": self.token})

    def next_package(self) -> str:
        """A new version of @alice/tool to publish (versions are immutable)."""
        version = f"1.0.{next(self._versions)}"
        return str(package_dir(self.root, USER, "tool", version))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("account-answers")
    with registry_server(root / "data") as server:
        token = user_token(server, USER)
        admin(server, "create-user", "bob")
        holder: list[World] = []

        def rewrite(path: str, answer: Any) -> Any:
            twist = holder[0].twist
            return answer if twist is None else twist(path, answer)

        with counting_proxy(server.url, rewrite) as proxy:
            world = World(proxy.url, token, root / "pkgs")
            holder.append(world)
            done = world.run("publish", world.next_package())  # @alice exists from here on
            assert done.code == 0, done.stderr
            yield world


def _key(name: str) -> str:
    done = run_splice("--json", "keys", "generate", name)
    assert done.code == 0, done.stderr
    return str(done.json()["keyId"])


def _registered_key(world: World, name: str) -> str:
    key_id = _key(name)
    done = world.run("keys", "register", f"@{USER}", "--key", name)
    assert done.code == 0, done.stderr
    return key_id


def _whoami(world: World) -> tuple[str, list[str]]:
    return "/auth/whoami", ["whoami"]


def _tokens(world: World) -> tuple[str, list[str]]:
    return "/auth/tokens", ["token", "list"]


def _create_token(world: World) -> tuple[str, list[str]]:
    return "/auth/tokens", ["token", "create", "--label", "ci"]


def _revoke_token(world: World) -> tuple[str, list[str]]:
    done = world.run("token", "create", "--label", "spare")
    assert done.code == 0, done.stderr
    token_id = done.json()["id"]
    return f"/auth/tokens/{token_id}", ["token", "revoke", token_id]


def _register_key(world: World) -> tuple[str, list[str]]:
    _key("fresh")
    return f"/namespaces/{USER}/keys", ["keys", "register", f"@{USER}", "--key", "fresh"]


def _revoke_key(world: World) -> tuple[str, list[str]]:
    key_id = _registered_key(world, "old")
    path = f"/namespaces/{USER}/keys/{quote(key_id, safe='')}"
    return path, ["keys", "revoke", f"@{USER}", key_id]


def _add_maintainer(world: World) -> tuple[str, list[str]]:
    return f"/namespaces/{USER}/maintainers/bob", ["namespace", "add-maintainer", USER, "bob"]


def _publish(world: World) -> tuple[str, list[str]]:
    return "/publish", ["publish", world.next_package()]


def _sign(world: World) -> tuple[str, list[str]]:
    _registered_key(world, "signer")
    package = world.next_package()
    version = package.rsplit("-", 1)[1]
    assert world.run("publish", package).code == 0
    path = f"/packages/{USER}/tool/{version}/signatures"
    return path, ["sign", f"@{USER}/tool@{version}", "--key", "signer", "--dir", package]


ROUTES: dict[str, Callable[[World], tuple[str, list[str]]]] = {
    "whoami": _whoami,
    "token-list": _tokens,
    "token-create": _create_token,
    "token-revoke": _revoke_token,
    "keys-register": _register_key,
    "keys-revoke": _revoke_key,
    "add-maintainer": _add_maintainer,
    "publish": _publish,
    "sign": _sign,
}


def _numbers(answer: Any) -> Any:
    return {key: 12345 for key in answer} if isinstance(answer, dict) else answer


MUTATIONS: dict[str, Callable[[Any], Any]] = {
    "a-list": lambda answer: [answer],
    "empty": lambda answer: {},
    "numbers": _numbers,
}
# A revocation's answer is not read: any JSON object will do.
CASES = [
    (route, mutation)
    for route in ROUTES
    for mutation in MUTATIONS
    if route != "token-revoke" or mutation == "a-list"
]


def _twisted(world: World, path: str, mutate: Callable[[Any], Any], argv: list[str]) -> dict:
    def twist(asked: str, answer: Any) -> Any:
        return mutate(answer) if asked.split("?", 1)[0] == path else answer

    world.twist = twist
    try:
        done = world.run(*argv)
    finally:
        world.twist = None
    assert "Traceback" not in done.stderr and "unexpected failure" not in done.stderr, done.stderr
    assert done.code == 1, (done.stdout, done.stderr)
    error: dict = done.json()["error"]
    return error


@pytest.mark.parametrize(("route", "mutation"), CASES)
def test_a_malformed_account_answer_is_a_registry_error(
    world: World, route: str, mutation: str
) -> None:
    path, argv = ROUTES[route](world)
    error = _twisted(world, path, MUTATIONS[mutation], argv)
    assert error["code"] == "REGISTRY_ERROR", error
    assert f"the registry answered {path} with a malformed document" in error["message"]


@pytest.mark.parametrize(
    "token", ["splice_x\nexport PATH=/tmp/evil:$PATH", "splice_x\x1b]52;c;AAAA\x07", "a b", ""]
)
def test_a_created_token_that_is_not_one_visible_word_is_refused(world: World, token: str) -> None:
    """`T=$(splice token create)` captures exactly one token or nothing."""
    error = _twisted(
        world, "/auth/tokens", lambda answer: {**answer, "token": token}, ["token", "create"]
    )
    assert error["code"] == "REGISTRY_ERROR", error
    assert "token" in json.dumps(error["details"])


def test_keys_register_refuses_an_answer_about_another_key(world: World) -> None:
    _key("mine")
    other = _key("other")
    path = f"/namespaces/{USER}/keys"
    error = _twisted(
        world,
        path,
        lambda answer: {**answer, "keyId": other},
        ["keys", "register", f"@{USER}", "--key", "mine"],
    )
    assert error["code"] == "REGISTRY_ERROR", error
    assert error["details"] == [f"registry: {other}"]


def test_whoami_names_the_registry_it_asked(world: World) -> None:
    world.twist = lambda path, answer: (
        {**answer, "registry": "https://registry.invalid"} if path == "/auth/whoami" else answer
    )
    try:
        json_done = world.run("whoami")
        text_done = run_splice("whoami", "--registry", world.url, env={"SPLICE_TOKEN": world.token})
    finally:
        world.twist = None
    assert json_done.code == 0 and text_done.code == 0, (json_done.stderr, text_done.stderr)
    assert json_done.json()["registry"] == world.url
    assert text_done.stdout.splitlines()[0] == f"{USER} on {world.url}"


def test_token_list_says_expired_of_a_token_past_its_expiry(world: World) -> None:
    """`splice token list` showed a token past its `expiresAt` as `active` (only `revokedAt`
    was read), though the registry answers it 401. The real server's answer, with one
    token's expiry moved to the past (the answer it gives once that day has come) and
    another's to the future."""
    past, future = "2020-01-02T03:04:05.006Z", "2999-01-02T03:04:05.006Z"

    def expiring(answer: Any) -> Any:
        mine = next(token for token in answer["tokens"] if token["current"])
        return {
            "tokens": [
                {**mine, "current": False, "id": "tok_0000000000000001", "expiresAt": past},
                {**mine, "expiresAt": future},
            ]
        }

    world.twist = lambda path, answer: expiring(answer) if path == "/auth/tokens" else answer
    try:
        done = run_splice(
            "token", "list", "--registry", world.url, env={"SPLICE_TOKEN": world.token}
        )
    finally:
        world.twist = None
    assert done.code == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first.endswith(f"  expired {past}"), first
    assert second.endswith(f"  active, expires {future} (current)"), second
