"""No registry token over plain http:// to a host that is not a literal loopback address
(docs/registry.md#where-a-token-goes, ``registry/client/credential_route.py``).

The real server behind a proxy on 127.0.0.1 that records every request carrying an
``Authorization`` header, reached as ``http://0.0.0.0:PORT`` (an address that is not loopback,
which Linux still connects to this machine) and as ``http://localhost:PORT`` (a name, which
any resolver may point elsewhere). Before the mend every command that acts as a user sent the
token there in clear; now each is ``INVALID_CONFIG`` and the proxy sees no token.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from splice_build.errors import ErrorCode, RegistryError
from splice_build.registry.client.credential_route import may_carry_token
from splice_build.registry.client.http import HttpRegistryClient
from testing.cli import run_splice
from testing.counting_proxy import CountingProxy, counting_proxy
from testing.registry import package_dir
from testing.registry_server import RunningRegistry, registry_server, user_token

USER = "alice"


@dataclass(frozen=True)
class World:
    server: RunningRegistry
    proxy: CountingProxy
    token: str
    key_id: str
    packages: Path
    home: Path

    def env(self, **extra: str) -> dict[str, str]:
        return {"SPLICE_HOME": str(self.home), "SPLICE_TOKEN": self.token, **extra}

    def run(self, url: str, *args: str, stdin: str | None = None) -> Any:
        return run_splice("--json", "--registry", url, *args, input=stdin, env=self.env())


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("plain-http")
    with (
        registry_server(root / "data", "--publish-limit", "0", "--request-limit", "0") as server,
        counting_proxy(server.url) as proxy,
    ):
        token = user_token(server, USER)
        env = {"SPLICE_TOKEN": token, "SPLICE_HOME": str(root / "home")}
        key = run_splice("--json", "keys", "generate", "signer", env=env)
        assert key.code == 0, key.stderr
        key_id = str(key.json()["keyId"])
        setup = [
            ["publish", str(package_dir(root / "pkgs", USER, "tool", "1.0.0"))],
            ["keys", "register", f"@{USER}", "--key", "signer"],
        ]
        for args in setup:
            done = run_splice("--json", "--registry", server.url, *args, env=env)
            assert done.code == 0, done.stderr
        yield World(server, proxy, token, key_id, root / "pkgs", root / "home")


def _far(proxy: CountingProxy, spelling: str) -> str:
    return proxy.url.replace("127.0.0.1", spelling)


def _user_commands(world: World) -> dict[str, tuple[list[str], str | None]]:
    """Every command that acts as a user, with the token on standard input for login."""
    new = str(package_dir(world.packages, USER, "tool", "2.0.0"))
    source = str(world.packages / f"{USER}-tool-1.0.0")
    return {
        "login": (["login"], world.token + "\n"),
        "whoami": (["whoami"], None),
        "token-list": (["token", "list"], None),
        "token-create": (["token", "create", "--label", "ci"], None),
        "token-revoke": (["token", "revoke", "tok_0123456789abcdef"], None),
        "add-maintainer": (["namespace", "add-maintainer", USER, "bob"], None),
        "remove-maintainer": (["namespace", "remove-maintainer", USER, "bob"], None),
        "keys-register": (["keys", "register", f"@{USER}", "--key", "signer"], None),
        "keys-revoke": (["keys", "revoke", f"@{USER}", world.key_id], None),
        "publish": (["publish", new], None),
        "publish-sign": (["publish", new, "--sign", "--key", "signer"], None),
        "sign": (["sign", f"@{USER}/tool@1.0.0", "--key", "signer", "--dir", source], None),
    }


@pytest.mark.parametrize("spelling", ["0.0.0.0", "localhost"])
def test_no_command_sends_a_token_over_plain_http_to_a_host_not_loopback(
    world: World, spelling: str
) -> None:
    url = _far(world.proxy, spelling)
    for name, (args, stdin) in _user_commands(world).items():
        before = len(world.proxy.authorized)
        done = world.run(url, *args, stdin=stdin)
        assert done.code == 2, (name, done.stdout, done.stderr)
        error = done.json()["error"]
        assert error["code"] == "INVALID_CONFIG", (name, error)
        assert error["message"] == (
            f"Refusing to send your registry token to {url} over plain http://"
        )
        assert "https://" in error["hint"]
        assert world.proxy.authorized[before:] == [], name
        assert world.token not in done.stdout + done.stderr
    credentials = world.home / "credentials.json"
    assert url not in (credentials.read_text() if credentials.is_file() else "")


def test_reads_over_plain_http_still_work_and_carry_no_token(world: World) -> None:
    url = _far(world.proxy, "0.0.0.0")
    before, authorized = len(world.proxy.requests), len(world.proxy.authorized)
    for args in (["search", "tool"], ["info", f"@{USER}/tool"]):
        done = world.run(url, *args)
        assert done.code == 0, (args, done.stderr)
    assert len(world.proxy.requests) > before
    assert world.proxy.authorized[authorized:] == []


def test_a_literal_loopback_address_gets_the_token(world: World) -> None:
    done = world.run(world.proxy.url, "whoami")
    assert done.code == 0, done.stderr
    assert done.json()["user"] == USER
    assert world.proxy.authorized[-1] == ("GET", "/auth/whoami")


_ARGUMENTS: dict[str, Any] = {
    "query": "tool",
    "package_id": f"@{USER}/tool",
    "version": "1.0.0",
    "namespace": USER,
    "user": "bob",
    "add": True,
    "public_key": "A" * 43 + "=",
    "key_id": "ed25519:0123456789abcdef",
    "token_id": "tok_0123456789abcdef",
    "archive": b"\x1f\x8b",
    "signature": "A" * 86 + "==",
    "label": "ci",
    "namespaces": None,
    "expires_in_days": None,
}


def test_every_client_method_keeps_the_token_from_plain_http(world: World) -> None:
    """Walks the whole HTTP client, not a list of routes: a method added later that acts as
    a user meets the same refusal, and no method sends the token."""
    url = _far(world.proxy, "0.0.0.0")
    before = len(world.proxy.authorized)
    client = HttpRegistryClient(url, token=world.token)
    refused: set[str] = set()
    answered: set[str] = set()
    try:
        for name, method in inspect.getmembers(client, inspect.ismethod):
            if name.startswith("_") or name == "close":
                continue
            params = inspect.signature(method).parameters.values()
            kwargs = {p.name: _ARGUMENTS[p.name] for p in params if p.default is p.empty}
            try:
                method(**kwargs)
                answered.add(name)
            except RegistryError as exc:
                (refused if exc.code is ErrorCode.INVALID_CONFIG else answered).add(name)
    finally:
        client.close()
    assert world.proxy.authorized[before:] == []
    user_routes = {"publish", "whoami", "tokens", "create_token", "revoke_token"}
    user_routes |= {"set_maintainer", "add_key", "revoke_key", "add_signature"}
    assert refused == user_routes
    assert answered >= {"search", "package", "version", "download", "keys"}


class _RecordingProxy(BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).seen.append(self.headers.get("authorization") or "")
        self.send_response(502)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return None


def test_a_loopback_registry_is_never_reached_through_a_proxy(world: World) -> None:
    """``HTTP_PROXY`` used to receive the loopback request, token included, in clear."""
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), _RecordingProxy)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    address = f"http://127.0.0.1:{proxy.server_port}"
    try:
        env = world.env(HTTP_PROXY=address, http_proxy=address)
        done = run_splice("--json", "--registry", world.server.url, "whoami", env=env)
    finally:
        proxy.shutdown()
        proxy.server_close()
    assert done.code == 0, done.stderr
    assert json.loads(done.stdout)["user"] == USER
    assert _RecordingProxy.seen == []


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://registry.example", True),
        ("https://192.0.2.1:8443", True),
        ("http://127.0.0.1:8787", True),
        ("http://127.8.9.10", True),
        ("http://[::1]:8787", True),
        ("http://localhost:8787", False),
        ("http://registry.example", False),
        ("http://192.0.2.1", False),
        ("http://0.0.0.0:8787", False),
        ("http://127.1", False),
        ("http://2130706433", False),
        ("http://[::ffff:127.0.0.1]", False),
        ("http://[::]", False),
        ("http://127.0.0.1.registry.example", False),
    ],
)
def test_which_urls_may_carry_a_token(url: str, allowed: bool) -> None:
    assert may_carry_token(url) is allowed
