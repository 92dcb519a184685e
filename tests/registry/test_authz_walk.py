"""Who may do what on the registry, walked as a whole: every route and method × every kind of
caller × the path names that mean something else than they seem, in one process (the ASGI app
over a real SQLite store).

Each cell's expectation is written from docs/registry.md ("HTTP API", "Users, tokens and
namespaces", "Admin", "Discovery over MCP"), not read off the code. A refused request must leave
the store as it was: every table (but the rate-limit counters and a token's last use, which
docs/registry.md#abuse-limits says are counted) and every blob are compared before and after;
so are they around every read. An allowed change is undone (the database copied back) before
the next cell. Then every listing is walked for a hidden package: it leaves search, the
namespace's packages and the MCP search, and stays readable by its name.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from splice_build.registry.db.interface import NewToken
from splice_build.registry.http.app import create_app
from splice_build.registry.service import admin, tokens
from splice_build.registry.service.auth import Caller, new_token, new_token_id, token_hash
from splice_build.registry.service.registry_service import RegistryService
from splice_build.spec.signing import signing_payload
from testing.asgi import exchange, http_scope, sending
from testing.registry import NO_LIMITS, artifact, memory_service
from testing.registry_memory_blobs import MemoryBlobStore
from testing.signing import new_key

ADMIN = "operator-admin-token-for-the-walk"
HIDDEN = "@acme/secret"
Cell = tuple[int, str | None]  # status, error code (None: a success)


# -- the store ---------------------------------------------------------------------------


class World:
    """The seeded registry: who is who, their tokens, and what the store holds."""

    def __init__(self, root: Path) -> None:
        self.db = root / "data" / "registry.db"
        self.service: RegistryService = memory_service(
            root / "data", admin_sha256=hashlib.sha256(ADMIN.encode()).hexdigest()
        )
        deps = self.service.deps
        for user in ("alice", "bob", "carol", "erin", "dave"):
            admin.create_user(deps, user)

        def token(user: str, **request: Any) -> str:
            return str(admin.create_token(deps, user, tokens.TokenRequest(**request))["token"])

        self.tokens = {
            "owner": token("alice", can_manage=True),
            "owner_publish_only": token("alice", can_manage=False),
            "owner_scoped_elsewhere": token("alice", can_manage=True, namespaces=("globex",)),
            "maintainer": token("bob", can_manage=True),
            "other_maintainer": token("carol", can_manage=True),
            "no_rights": token("dave", can_manage=True),
            "other_owner": token("erin", can_manage=True),
        }
        erin = self.tokens["other_owner"]
        revoked = admin.create_token(deps, "alice", tokens.TokenRequest(can_manage=True))
        admin.revoke_token(deps, revoked["id"])
        self.revoked = str(revoked["token"])
        expired = new_token()
        alice = deps.meta.user_by_name("alice")
        assert alice is not None
        deps.meta.insert_token(
            NewToken(
                id=new_token_id(),
                user_id=alice.id,
                token_hash=token_hash(expired),
                label="expired",
                created_at="2020-01-01T00:00:00.000Z",
                expires_at="2020-01-02T00:00:00.000Z",
                namespaces=None,
                can_manage=True,
            )
        )
        self.expired = expired
        self.victim = str(admin.create_token(deps, "alice", tokens.TokenRequest())["id"])
        for owner, ns, name in (
            (self.tokens["owner"], "acme", "greeter"),
            (self.tokens["owner"], "acme", "secret"),
            (erin, "globex", "tool"),
        ):
            self.service.publish(Caller(f"Bearer {owner}"), artifact(root / "src", ns, name))
        admin.set_hidden(deps, "acme", "secret", True)
        for owner, ns, user in ((self.tokens["owner"], "acme", "bob"), (erin, "globex", "carol")):
            self.service.set_maintainer(Caller(f"Bearer {owner}"), ns, user, add=True)
        self.key = new_key(root / "keys", "acme")
        self.service.add_key(
            Caller(f"Bearer {self.tokens['owner']}"), "acme", {"publicKey": self.key.public_key}
        )
        self.spare_key = new_key(root / "keys", "spare").public_key
        # Namespaces the admin released with no package, one keeping its former owner's
        # maintainer (bob), one its key: docs/registry.md#users-tokens-and-namespaces.
        for ns in ("orphan", "keyed"):
            admin.set_owner(deps, ns, "alice")
        self.service.set_maintainer(
            Caller(f"Bearer {self.tokens['owner']}"), "orphan", "bob", add=True
        )
        keyed = {"publicKey": new_key(root / "keys", "keyed").public_key}
        self.service.add_key(Caller(f"Bearer {self.tokens['owner']}"), "keyed", keyed)
        for ns in ("orphan", "keyed"):
            admin.set_owner(deps, ns, None)
        self.orphan = artifact(root / "src", "orphan", "tool")
        self.keyed = artifact(root / "src", "keyed", "tool")
        self.next = artifact(root / "src", "acme", "greeter", "2.0.0")
        self.app = create_app(self.service)
        # The same store behind a server started without SPLICE_REGISTRY_ADMIN_TOKEN_SHA256.
        without_admin = RegistryService(deps.meta, deps.blobs, limits=NO_LIMITS)
        self.app_without_admin = create_app(without_admin)
        self._reader = sqlite3.connect(self.db, isolation_level=None)  # autocommit: sees commits
        self._queries: list[str] = []

    def signature(self, package_id: str, version: str = "1.0.0") -> dict[str, str]:
        row = self.service.deps.meta.version(package_id, version)
        assert row is not None
        payload = signing_payload(package_id, version, row.integrity)
        return {"keyId": self.key.key_id, "signature": self.key.sign(payload)}

    @property
    def blobs(self) -> MemoryBlobStore:
        store = self.service.deps.blobs
        assert isinstance(store, MemoryBlobStore)
        return store

    def dump(self) -> tuple[Any, ...]:
        """Every row but the counters docs/registry.md#abuse-limits keeps, and every blob."""
        if not self._queries:
            tables = self._reader.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            for (name,) in sorted(tables.fetchall()):
                if name in ("rate_limits", "sqlite_sequence"):
                    continue
                columns = [c[1] for c in self._reader.execute(f"PRAGMA table_info({name})")]
                kept = [c for c in columns if not (name == "tokens" and c == "last_used_at")]
                self._queries.append(f"SELECT {', '.join(kept)} FROM {name} ORDER BY rowid")
        rows = tuple(tuple(self._reader.execute(query).fetchall()) for query in self._queries)
        stored = self.blobs.keys()
        return rows, tuple((key, self.blobs.get(key)) for key in stored)

    def checkpoint(self) -> Callable[[], None]:
        """Undo whatever happens after this: the database copied back, blobs as they were."""
        saved = sqlite3.connect(":memory:")
        with sqlite3.connect(self.db) as conn:
            conn.backup(saved)
        stored = self.blobs.keys()
        blobs = {key: self.blobs.get(key) for key in stored}

        def restore() -> None:
            with sqlite3.connect(self.db) as conn:
                saved.backup(conn)
            self.blobs._blobs = dict(blobs)  # the test's own store: drop what was added

        return restore


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("authz"))


# -- callers -----------------------------------------------------------------------------


def callers(world: World) -> dict[str, tuple[str | None, str]]:
    """Name → (Authorization header, who the docs say that is).

    Identities: ``anon`` (no header), ``malformed`` (not ``Bearer <token>``), ``wrong`` (a
    well-formed bearer token that is no valid user token), ``admin`` (the admin token), or a
    user's role from ``World.tokens``. The scheme is case-insensitive and followed by one or
    more spaces (RFC 9110, section 11.1); anything else is malformed.
    """
    owner = world.tokens["owner"]
    table: dict[str, tuple[str | None, str]] = {
        "anonymous": (None, "anon"),
        "empty header": ("", "anon"),
        "basic scheme": ("Basic YWxpY2U6cGFzc3dvcmQ=", "malformed"),
        "unknown token": ("Bearer splice_" + "A" * 43, "wrong"),
        "not a token": ("Bearer 12345", "wrong"),
        "revoked token": (f"Bearer {world.revoked}", "wrong"),
        "expired token": (f"Bearer {world.expired}", "wrong"),
        "admin token": (f"Bearer {ADMIN}", "admin"),
        "lowercase scheme": (f"bearer {owner}", "owner"),
        "upper scheme, spaces": (f"BEARER   {owner}", "owner"),
        "tab after scheme": (f"Bearer\t{owner}", "malformed"),
        "token scheme": (f"Token {owner}", "malformed"),
        "bare token": (owner, "malformed"),
        "two tokens": (f"Bearer {owner} {owner}", "malformed"),
        "token and comma": (f"Bearer {owner},", "wrong"),
    }
    for role, value in world.tokens.items():
        table[role] = (f"Bearer {value}", role)
    return table


# -- routes and what the docs say of each --------------------------------------------------

MANAGING = (
    "owner",
    "owner_scoped_elsewhere",
    "maintainer",
    "other_maintainer",
    "other_owner",
    "no_rights",
)
ROLES = (*MANAGING, "owner_publish_only")


def as_user(allowed: Cell, **refusals: Cell) -> Callable[[str], Cell]:
    """A route that acts as a user: no valid user token is 401; each role its own answer."""

    def expect(identity: str) -> Cell:
        if identity not in ROLES:
            return 401, "UNAUTHENTICATED"
        return refusals.get(identity, allowed)

    return expect


def as_admin(allowed: Cell) -> Callable[[str], Cell]:
    """docs/registry.md#admin: a missing (or unreadable) admin token 401, a wrong one 403."""

    def expect(identity: str) -> Cell:
        if identity == "admin":
            return allowed
        if identity in ("anon", "malformed"):
            return 401, "UNAUTHENTICATED"
        return 403, "FORBIDDEN"

    return expect


SCOPE: Cell = (403, "TOKEN_SCOPE")
FORBIDDEN: Cell = (403, "FORBIDDEN")
ELSEWHERE: Cell = (404, "NOT_FOUND")
RESERVED: Cell = (403, "NAMESPACE_RESERVED")
SCOPED = {"owner_scoped_elsewhere": SCOPE}
PUBLISH_ONLY = {"owner_publish_only": SCOPE}
# Only the owner, with a managing token in scope (maintainers and keys).
OWNER_ONLY = {
    **PUBLISH_ONLY,
    "owner_scoped_elsewhere": SCOPE,
    "maintainer": FORBIDDEN,
    "other_maintainer": FORBIDDEN,
    "other_owner": FORBIDDEN,
    "no_rights": FORBIDDEN,
}
# The owner or a maintainer, any token in scope (publish, signatures).
OWNER_OR_MAINTAINER = {
    "owner_scoped_elsewhere": SCOPE,
    "other_maintainer": FORBIDDEN,
    "other_owner": FORBIDDEN,
    "no_rights": FORBIDDEN,
}


def account_routes(world: World) -> list[tuple[str, str, Any, Callable[[str], Cell]]]:
    """(method, path, body, expectation) of every route that acts as a user or an admin."""
    mcp = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    return [
        ("GET", "/auth/whoami", None, as_user((200, None))),
        ("POST", "/mcp", mcp, as_user((200, None))),
        ("POST", "/publish", world.next, as_user((201, None), **OWNER_OR_MAINTAINER)),
        ("POST", "/publish", world.orphan, as_user(RESERVED, **SCOPED, maintainer=(201, None))),
        ("POST", "/publish", world.keyed, as_user(RESERVED, **SCOPED)),
        ("GET", "/auth/tokens", None, as_user((200, None), **PUBLISH_ONLY)),
        ("POST", "/auth/tokens", {}, as_user((201, None), **PUBLISH_ONLY)),
        (
            "DELETE",
            f"/auth/tokens/{world.victim}",
            None,
            as_user(
                (200, None),
                **PUBLISH_ONLY,
                owner_scoped_elsewhere=SCOPE,  # the victim is unscoped
                maintainer=ELSEWHERE,  # another user's token is not found
                other_maintainer=ELSEWHERE,
                other_owner=ELSEWHERE,
                no_rights=ELSEWHERE,
            ),
        ),
        ("PUT", "/namespaces/acme/maintainers/dave", None, as_user((200, None), **OWNER_ONLY)),
        ("DELETE", "/namespaces/acme/maintainers/bob", None, as_user((200, None), **OWNER_ONLY)),
        (
            "POST",
            "/namespaces/acme/keys",
            {"publicKey": world.spare_key},
            as_user((201, None), **OWNER_ONLY),
        ),
        (
            "DELETE",
            f"/namespaces/acme/keys/{world.key.key_id}",
            None,
            as_user((200, None), **OWNER_ONLY),
        ),
        (
            "POST",
            "/packages/acme/greeter/1.0.0/signatures",
            world.signature("@acme/greeter"),
            as_user((201, None), **OWNER_OR_MAINTAINER),
        ),
        (
            "POST",
            "/packages/acme/secret/1.0.0/signatures",
            world.signature(HIDDEN),
            as_user((201, None), **OWNER_OR_MAINTAINER),
        ),
        ("POST", "/admin/users", {"name": "zed"}, as_admin((201, None))),
        ("POST", "/admin/users/dave/tokens", {}, as_admin((201, None))),
        ("POST", f"/admin/tokens/{world.victim}/revoke", None, as_admin((200, None))),
        ("PUT", "/admin/namespaces/acme", {"owner": "dave"}, as_admin((200, None))),
        ("PUT", "/admin/packages/acme/greeter/hidden", {"hidden": True}, as_admin((200, None))),
        ("POST", "/admin/artifacts/migrate", None, as_admin((200, None))),
    ]


READS = (
    "/",
    "/health",
    "/packages/search?q=greet",
    "/packages/acme/greeter",
    "/packages/acme/greeter/versions",
    "/packages/acme/greeter/1.0.0",
    "/packages/acme/greeter/1.0.0/download",
    "/packages/acme/greeter/1.0.0/provenance",
    "/namespaces/acme",
    "/namespaces/acme/keys",
    # A hidden package stays readable and installable by its name (docs/registry.md#http-api).
    "/packages/acme/secret",
    "/packages/acme/secret/versions",
    "/packages/acme/secret/1.0.0",
    "/packages/acme/secret/1.0.0/download",
    "/packages/acme/secret/1.0.0/provenance",
)

# Path names that are not the namespace they look like: each is no namespace at all.
NOT_ACME = (
    "ACME",
    "Acme",
    "%D0%B0cme",  # Cyrillic a
    "ac%E2%80%8Bme",  # a zero-width space inside
    "acme%00",
    "acme%20",
    "..",
    "%2E%2E",
    ".",
)


def path_routes(world: World) -> Iterator[tuple[str, str, Any, str, Cell]]:
    """(method, path, body, role, expected) of the owner's routes under names that are not
    its namespace, another's namespace, or with a `/` that splits a segment or ends the path."""
    sign = world.signature("@acme/greeter")
    templates: list[tuple[str, str, Any]] = [
        ("PUT", "/namespaces/{ns}/maintainers/dave", None),
        ("DELETE", "/namespaces/{ns}/maintainers/bob", None),
        ("POST", "/namespaces/{ns}/keys", {"publicKey": world.spare_key}),
        ("DELETE", f"/namespaces/{{ns}}/keys/{world.key.key_id}", None),
        ("POST", "/packages/{ns}/greeter/1.0.0/signatures", sign),
    ]
    for method, template, body in templates:
        for name in NOT_ACME:
            yield method, template.format(ns=name), body, "owner", ELSEWHERE
        yield method, template.format(ns="acme%2Fx"), body, "owner", ELSEWHERE  # no route
        yield method, template.format(ns="acme") + "/", body, "owner", ELSEWHERE  # no route
        if "signatures" not in template:
            yield method, template.format(ns="globex"), body, "owner", FORBIDDEN
            yield method, template.format(ns="globex"), body, "other_maintainer", FORBIDDEN
    # A package of another namespace, signed by the owner of acme or with acme's key.
    tool = world.signature("@globex/tool")
    yield "POST", "/packages/globex/tool/1.0.0/signatures", tool, "owner", FORBIDDEN
    yield (
        "POST",
        "/packages/globex/tool/1.0.0/signatures",
        tool,
        "other_maintainer",
        (403, "KEY_NOT_REGISTERED"),
    )
    # acme's key through the owner of another namespace: not its key, nor registrable there.
    key_path = f"/namespaces/globex/keys/{world.key.key_id}"
    yield "DELETE", key_path, None, "other_owner", ELSEWHERE
    acme_key = {"publicKey": world.key.public_key}
    yield "POST", "/namespaces/globex/keys", acme_key, "other_owner", (409, "KEY_EXISTS")
    for path in ("/publish/", "/auth/whoami/", "/auth/tokens/", "/admin/users/"):
        yield "POST" if "whoami" not in path else "GET", path, {}, "owner", ELSEWHERE


METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")


def documented_methods(world: World) -> dict[str, tuple[str, ...]]:
    """Each path of the docs' HTTP API table (a sample of its parameters) and its methods;
    reads answer an OPTIONS preflight too (they carry CORS)."""
    read = ("GET", "OPTIONS")
    table: dict[str, tuple[str, ...]] = {path: read for path in READS if "?" not in path}
    table["/packages/search"] = read
    table["/namespaces/acme/keys"] = (*read, "POST")
    return {
        **table,
        "/publish": ("POST",),
        "/auth/whoami": ("GET",),
        "/auth/tokens": ("GET", "POST"),
        f"/auth/tokens/{world.victim}": ("DELETE",),
        "/namespaces/acme/maintainers/dave": ("PUT", "DELETE"),
        f"/namespaces/acme/keys/{world.key.key_id}": ("DELETE",),
        "/packages/acme/greeter/1.0.0/signatures": ("POST",),
        "/admin/users": ("POST",),
        "/admin/users/dave/tokens": ("POST",),
        f"/admin/tokens/{world.victim}/revoke": ("POST",),
        "/admin/namespaces/acme": ("PUT",),
        "/admin/packages/acme/greeter/hidden": ("PUT",),
        "/admin/artifacts/migrate": ("POST",),
    }


def method_routes(world: World) -> Iterator[tuple[str, str, Any, str, Cell]]:
    """Every method on every path, as the owner: one the docs do not list is no route (404
    NOT_FOUND), changing nothing; HEAD is a GET without its body, so it changes nothing
    either."""
    for path, methods in documented_methods(world).items():
        for method in METHODS:
            if method == "HEAD" and "GET" in methods:
                yield method, path, None, "owner", (200, None)
            elif method not in methods:
                yield method, path, {}, "owner", ELSEWHERE


# -- requests ----------------------------------------------------------------------------


async def request(
    world: World,
    method: str,
    target: str,
    authorization: str | None,
    body: Any = None,
    *,
    app: Any = None,
) -> tuple[int, bytes]:
    """One request as a server hands it to the app: the path percent-decoded, the raw path
    kept (uvicorn does so)."""
    headers = [(b"accept", b"application/json, text/event-stream")]
    if authorization is not None:
        headers.append((b"authorization", authorization.encode("latin-1")))
    data = b""
    if isinstance(body, bytes):
        data = body
        headers.append((b"content-type", b"application/gzip"))
    elif body is not None:
        data = json.dumps(body).encode()
        headers.append((b"content-type", b"application/json"))
    raw, _, query = target.partition("?")
    scope = http_scope(method, target, headers)
    scope["path"] = unquote(raw)
    scope["raw_path"] = raw.encode()
    scope["query_string"] = query.encode()
    return await exchange(app or world.app, scope, sending(data))


def code_of(body: bytes) -> str | None:
    try:
        document = json.loads(body)
    except ValueError:
        return None
    error = document.get("error") if isinstance(document, dict) else None
    return error.get("code") if isinstance(error, dict) else None


# -- the walk ----------------------------------------------------------------------------


def test_every_route_times_every_caller_answers_as_the_docs_say(world: World) -> None:
    who = callers(world)
    failures: list[str] = []

    state = [world.dump()]

    async def cell(
        method: str, path: str, body: Any, caller: str, want: Cell, app: Any = None
    ) -> None:
        header = who[caller][0]
        before = state[0]
        safe = method in ("GET", "HEAD", "OPTIONS")
        restore = world.checkpoint() if want[0] < 400 and not safe else None
        status, answer = await request(world, method, path, header, body, app=app)
        got = (status, code_of(answer) if status >= 400 else None)
        label = f"{method} {path} as {caller}"
        if got != want:
            failures.append(f"{label}: {got} != {want}: {answer[:160]!r}")
        if restore is not None:
            restore()
        state[0] = world.dump()
        if state[0] != before:
            failures.append(f"{label}: the store changed ({got})")

    async def walk() -> int:
        cells = 0
        for method, path, body, expect in account_routes(world):
            for caller, (_, identity) in who.items():
                await cell(method, path, body, caller, expect(identity))
                cells += 1
                if path.startswith("/admin/"):  # docs/registry.md#admin: disabled for all
                    disabled = (403, "ADMIN_DISABLED")
                    await cell(method, path, body, caller, disabled, world.app_without_admin)
                    cells += 1
        for path in READS:
            for caller in who:
                await cell("GET", path, None, caller, (200, None))
                cells += 1
        for method, path, body, role, want in [*path_routes(world), *method_routes(world)]:
            await cell(method, path, body, role, want)
            cells += 1
        return cells

    cells = asyncio.run(walk())
    assert not failures, f"{len(failures)} of {cells} cells:\n" + "\n".join(failures)


def test_a_hidden_package_leaves_every_listing(world: World) -> None:
    """docs/registry.md#http-api: hidden packages leave search (over HTTP and MCP) and the
    namespace's packages, for every caller."""
    owner = f"Bearer {world.tokens['owner']}"

    async def walk() -> list[str]:
        seen = []
        listings = [
            *(f"/packages/search?q={q}" for q in ("secret", "acme", "%40acme%2Fsecret", "")),
            "/packages/search?q=secret&kind=skill",
            "/namespaces/acme",
        ]
        for header in (None, owner):
            for path in listings:
                status, body = await request(world, "GET", path, header)
                assert status == 200, (path, body)
                answer = json.loads(body)
                listed = answer.get("packages") or [hit["name"] for hit in answer["results"]]
                if HIDDEN in listed:
                    seen.append(f"GET {path}")
                assert "@acme/greeter" in listed or not path.endswith("acme"), (path, listed)
            for query in ("secret", "acme", HIDDEN):
                call = {"name": "registry_search", "arguments": {"query": query}}
                rpc = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
                status, body = await request(world, "POST", "/mcp", owner, rpc)
                text = json.loads(body)["result"]["content"][0]["text"]
                results = json.loads(text)["results"]
                if HIDDEN in [hit["name"] for hit in results]:
                    seen.append(f"MCP registry_search {query}")
        return seen

    assert asyncio.run(walk()) == []
