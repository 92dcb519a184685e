"""End to end: the real `splice` binary against a real registry server subprocess.

Runs once per store back end (SQLite + files, PostgreSQL + S3): see conftest.py.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest
import requests

from testing.cli import run_splice
from testing.registry import HOSTILE, artifact, package_dir
from testing.registry_backends import StoreBackend
from testing.registry_server import RunningRegistry, admin, user_token


def splice_as(token: str, *args: str, registry: str):
    return run_splice(*args, "--registry", registry, env={"SPLICE_TOKEN": token})


def store_of(server: RunningRegistry) -> StoreBackend:
    assert server.backend is not None, "BUG: the server fixture has a backend"
    return server.backend


def error_of(done) -> dict:
    assert done.code == 1, (done.stdout, done.stderr)
    return done.json()["error"]


def test_publish_search_info_download(server: RunningRegistry, pkg_root: Path) -> None:
    token = user_token(server, "alice")
    login = run_splice("login", "--registry", server.url, input=token + "\n")
    assert login.code == 0, login.stderr
    assert f"Logged in to {server.url} as alice" in login.stdout
    # a later command without --registry asks the embedded registry: the login says so
    assert login.stdout.splitlines()[1] == (
        "next: commands without --registry still use the embedded registry; pass --registry "
        f"{server.url}, or make it the default: splice config set registry {server.url}"
    )
    assert run_splice("config", "set", "registry", server.url).code == 0
    again = run_splice("login", "--registry", server.url, input=token + "\n")
    assert again.stdout == f"Logged in to {server.url} as alice\n", again.stderr
    assert run_splice("config", "unset", "registry").code == 0
    directory = package_dir(pkg_root, "alice", "tool", "1.0.0")
    done = run_splice("publish", str(directory), "--registry", server.url)
    assert done.code == 0, done.stderr
    assert "Published @alice/tool@1.0.0" in done.stdout
    found = run_splice("search", "tool", "--registry", server.url, "--json").json()
    assert "@alice/tool" in [r["name"] for r in found["results"]]
    text = run_splice("search", "alice", "--registry", server.url)
    assert "@alice/tool" in text.stdout and "latest: 1.0.0" in text.stdout
    info = run_splice("info", "@alice/tool", "--registry", server.url, "--json").json()
    assert info["selected"]["version"] == "1.0.0"
    assert info["tools"][0]["name"] == "tool.hello"
    assert info["selected"]["download"] == "/packages/alice/tool/1.0.0/download"  # a path, as TS
    response = requests.get(server.url + info["selected"]["download"], timeout=10)
    assert response.headers["x-splice-integrity"] == info["selected"]["integrity"]
    assert "immutable" in response.headers["cache-control"]
    assert "sha256-" + hashlib.sha256(response.content).hexdigest() == info["selected"]["integrity"]
    for output in (login, done, text):
        assert token not in output.stdout + output.stderr
    who = run_splice("whoami", "--registry", server.url, "--json").json()
    assert (
        who["user"] == "alice" and who["owns"] == ["alice"] and who["tokenSource"] == "credentials"
    )
    assert token not in str(who)


def test_duplicate_version_is_409(server: RunningRegistry, pkg_root: Path) -> None:
    token = user_token(server, "dup")
    directory = package_dir(pkg_root, "dup", "tool")
    assert splice_as(token, "publish", str(directory), registry=server.url).code == 0
    error = error_of(splice_as(token, "publish", str(directory), "--json", registry=server.url))
    assert error["code"] == "VERSION_EXISTS"


def test_ownership_and_reserved_namespaces_are_403(server: RunningRegistry, pkg_root: Path) -> None:
    owner, other = user_token(server, "owner1"), user_token(server, "intruder")
    assert (
        splice_as(
            owner, "publish", str(package_dir(pkg_root, "owner1", "a")), registry=server.url
        ).code
        == 0
    )
    wrong = error_of(
        splice_as(
            other,
            "publish",
            str(package_dir(pkg_root, "owner1", "b")),
            "--json",
            registry=server.url,
        )
    )
    assert wrong["code"] == "FORBIDDEN"
    reserved = error_of(
        splice_as(
            other,
            "publish",
            str(package_dir(pkg_root, "splice", "x")),
            "--json",
            registry=server.url,
        )
    )
    assert reserved["code"] == "FORBIDDEN"
    assert "registry code: NAMESPACE_RESERVED" in reserved["details"]


def test_scoped_publish_only_token(server: RunningRegistry, pkg_root: Path) -> None:
    managing = user_token(server, "scoper")
    created = splice_as(
        managing, "token", "create", "--namespace", "@scoper", "--label", "ci", registry=server.url
    )
    assert created.code == 0, created.stderr
    ci_token = created.stdout.strip()
    assert ci_token.startswith("splice_") and ci_token not in created.stderr
    outside = error_of(
        splice_as(
            ci_token,
            "publish",
            str(package_dir(pkg_root, "elsewhere", "x")),
            "--json",
            registry=server.url,
        )
    )
    assert outside["code"] == "FORBIDDEN" and "registry code: TOKEN_SCOPE" in outside["details"]
    assert (
        splice_as(
            ci_token, "publish", str(package_dir(pkg_root, "scoper", "x")), registry=server.url
        ).code
        == 0
    )
    manage = error_of(splice_as(ci_token, "token", "list", "--json", registry=server.url))
    assert manage["code"] == "FORBIDDEN" and "registry code: TOKEN_SCOPE" in manage["details"]
    listed = splice_as(managing, "token", "list", "--json", registry=server.url).json()["tokens"]
    assert {t["label"] for t in listed} == {"default", "ci"}
    assert ci_token not in str(listed)


def test_a_token_cannot_mint_one_that_outlives_it(server: RunningRegistry) -> None:
    """A leaked short-lived managing token must not become a lasting publish token."""
    short = user_token(server, "shortlived", "--expires", "2d")
    whoami = splice_as(short, "whoami", "--json", registry=server.url).json()
    parent_expiry = whoami["token"]["expiresAt"]
    assert parent_expiry is not None
    inherited = splice_as(short, "token", "create", "--json", registry=server.url).json()
    assert inherited["expiresAt"] == parent_expiry, "no --expires: the creating token's expiry"
    sooner = splice_as(short, "token", "create", "--expires", "1d", "--json", registry=server.url)
    assert sooner.json()["expiresAt"] < parent_expiry
    longer = error_of(
        splice_as(short, "token", "create", "--expires", "90d", "--json", registry=server.url)
    )
    assert longer["code"] == "FORBIDDEN" and "registry code: TOKEN_SCOPE" in longer["details"]
    assert "outlive" in longer["message"]
    expiries = [
        t["expiresAt"]
        for t in splice_as(short, "token", "list", "--json", registry=server.url).json()["tokens"]
    ]
    assert None not in expiries and len(expiries) == 3, expiries


def test_a_scoped_token_cannot_revoke_wider_tokens(server: RunningRegistry) -> None:
    """A leaked token for one namespace must not revoke the user's unscoped managing token
    (only an administrator hands those out)."""
    main = user_token(server, "narrow")
    scoped = user_token(server, "narrow", "--namespace", "narrow")
    main_id = splice_as(main, "whoami", "--json", registry=server.url).json()["token"]["id"]
    refused = error_of(splice_as(scoped, "token", "revoke", main_id, "--json", registry=server.url))
    assert refused["code"] == "FORBIDDEN" and "registry code: TOKEN_SCOPE" in refused["details"]
    assert splice_as(main, "whoami", registry=server.url).code == 0, "still valid"
    child = splice_as(scoped, "token", "create", "--json", registry=server.url).json()
    assert splice_as(scoped, "token", "revoke", child["id"], registry=server.url).code == 0
    assert splice_as(child["token"], "whoami", registry=server.url).code == 1


def test_revoked_and_expired_tokens_are_401(server: RunningRegistry) -> None:
    managing = user_token(server, "revoker")
    created = splice_as(managing, "token", "create", "--json", registry=server.url).json()
    assert splice_as(created["token"], "whoami", registry=server.url).code == 0
    assert splice_as(managing, "token", "revoke", created["id"], registry=server.url).code == 0
    assert (
        error_of(splice_as(created["token"], "whoami", "--json", registry=server.url))["code"]
        == "UNAUTHENTICATED"
    )
    expiring = splice_as(
        managing, "token", "create", "--expires", "1d", "--json", registry=server.url
    ).json()
    assert splice_as(expiring["token"], "whoami", registry=server.url).code == 0
    store_of(server).execute(  # a day passes
        "UPDATE tokens SET expires_at = '2000-01-01T00:00:00.000Z' WHERE id = %s",
        (expiring["id"],),
    )
    assert (
        error_of(splice_as(expiring["token"], "whoami", "--json", registry=server.url))["code"]
        == "UNAUTHENTICATED"
    )


@pytest.mark.parametrize("version", ["1.0.0-9007199254740993", "1.0.0-rc.99999999999999999999"])
def test_a_version_that_compares_equal_to_another_is_not_published(
    server: RunningRegistry, tmp_path: Path, version: str
) -> None:
    """Beyond 2**53 prerelease numbers compare as doubles: 1.0.0-9007199254740993 would
    equal 1.0.0-9007199254740992, and an exact range could resolve to the other one."""
    token = user_token(server, "bignum")
    answer = requests.post(
        f"{server.url}/publish",
        data=artifact(tmp_path, "bignum", "tool", version),
        headers={"authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["code"] == "INVALID_PACKAGE" and f"version: {version}" in error["details"]
    assert requests.get(f"{server.url}/packages/bignum/tool", timeout=10).status_code == 404


def test_tokens_are_stored_only_as_hashes(server: RunningRegistry) -> None:
    token = user_token(server, "hashed")
    assert splice_as(token, "whoami", registry=server.url).code == 0
    stored = store_of(server).dump()
    assert token.encode() not in stored
    assert hashlib.sha256(token.encode()).hexdigest().encode() in stored


def test_hostile_archives_are_422_with_nothing_stored(server: RunningRegistry) -> None:
    token = user_token(server, "evil")
    for name, make in HOSTILE.items():
        response = requests.post(
            server.url + "/publish",
            data=make(),
            headers={"authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert response.status_code == 422, (name, response.text)
        assert response.json()["error"]["code"] == "INVALID_PACKAGE"
    assert not [key for key in store_of(server).artifacts() if key.startswith("packages/acme/")]
    assert requests.get(server.url + "/packages/acme/evil", timeout=5).status_code == 404


def test_database_refuses_updates_and_deletes_of_versions(
    server: RunningRegistry, pkg_root: Path
) -> None:
    token = user_token(server, "frozen")
    assert (
        splice_as(
            token, "publish", str(package_dir(pkg_root, "frozen", "pkg")), registry=server.url
        ).code
        == 0
    )
    store = store_of(server)
    for statement in (
        "UPDATE versions SET integrity = 'sha256-x' WHERE package_id = '@frozen/pkg'",
        "DELETE FROM versions WHERE package_id = '@frozen/pkg'",
    ):
        with pytest.raises(store.integrity_error):
            store.execute(statement)
    assert store.query("SELECT count(*) FROM versions WHERE package_id = '@frozen/pkg'") == [(1,)]


def test_twenty_concurrent_publishes_have_one_winner(
    server: RunningRegistry, pkg_root: Path
) -> None:
    token = user_token(server, "racer")
    data = artifact(pkg_root, "racer", "pkg", "1.0.0")
    statuses: list[int] = []
    barrier = threading.Barrier(20)

    def publish() -> None:
        barrier.wait()
        response = requests.post(
            server.url + "/publish",
            data=data,
            headers={"authorization": f"Bearer {token}"},
            timeout=60,
        )
        statuses.append(response.status_code)

    threads = [threading.Thread(target=publish) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses.count(201) == 1, statuses
    assert statuses.count(409) == 19, statuses
    assert (
        len(requests.get(server.url + "/packages/racer/pkg/versions", timeout=5).json()["versions"])
        == 1
    )


def test_cors_only_on_anonymous_reads(server: RunningRegistry) -> None:
    assert (
        requests.get(server.url + "/packages/search?q=x", timeout=5).headers[
            "access-control-allow-origin"
        ]
        == "*"
    )
    preflight = requests.options(server.url + "/health", timeout=5)
    assert preflight.status_code == 204
    whoami = requests.get(server.url + "/auth/whoami", timeout=5)
    assert whoami.status_code == 401 and "access-control-allow-origin" not in whoami.headers


def test_admin_http_api(server: RunningRegistry) -> None:
    from testing.registry_server import ADMIN_TOKEN

    headers = {"authorization": f"Bearer {ADMIN_TOKEN}"}
    made = requests.post(
        server.url + "/admin/users", json={"name": "viahttp"}, headers=headers, timeout=5
    )
    assert made.status_code == 201
    again = requests.post(
        server.url + "/admin/users", json={"name": "viahttp"}, headers=headers, timeout=5
    )
    assert again.status_code == 409 and again.json()["error"]["code"] == "USER_EXISTS"
    wrong = requests.post(
        server.url + "/admin/users",
        json={"name": "x"},
        headers={"authorization": "Bearer splice_no"},
        timeout=5,
    )
    assert wrong.status_code == 403
    owner = requests.put(
        server.url + "/admin/namespaces/team", json={"owner": "viahttp"}, headers=headers, timeout=5
    )
    assert owner.json() == {"namespace": "team", "owner": "viahttp", "reserved": True}


def test_not_logged_in(server: RunningRegistry, pkg_root: Path) -> None:
    done = run_splice(
        "publish", str(package_dir(pkg_root, "anon", "x")), "--registry", server.url, "--json"
    )
    assert error_of(done)["code"] == "NOT_LOGGED_IN"
    # the login that mends it names the registry: a bare `splice login` is USAGE ("needs the
    # registry to log in to"), where the hint sent a new user
    assert error_of(done)["hint"] == (
        f"Run `splice login --registry {server.url}` or set SPLICE_TOKEN."
    )
    bad = run_splice("login", "--registry", server.url, "--json", input="splice_" + "A" * 43 + "\n")
    assert error_of(bad)["code"] == "UNAUTHENTICATED"
    empty = run_splice("login", "--registry", server.url, input="\n")
    assert empty.code == 2


def test_logout(server: RunningRegistry) -> None:
    token = user_token(server, "leaver")
    assert run_splice("login", "--registry", server.url, input=token + "\n").code == 0
    assert f"Logged out of {server.url}" in run_splice("logout", "--registry", server.url).stdout
    assert f"Not logged in to {server.url}" in run_splice("logout", "--registry", server.url).stdout


def test_admin_cli_set_owner_and_revoke(server: RunningRegistry) -> None:
    token = user_token(server, "assigned")
    assert "owner: assigned" in admin(server, "set-owner", "docs", "assigned")
    token_id = splice_as(token, "whoami", "--json", registry=server.url).json()["token"]["id"]
    admin(server, "revoke-token", token_id)
    assert splice_as(token, "whoami", registry=server.url).code == 1


def test_a_released_namespace_with_packages_is_not_claimed_by_a_publish(
    server: RunningRegistry, pkg_root: Path
) -> None:
    """Whoever claimed it would publish new versions (a new "latest") of packages other
    projects install; only the administrator assigns it again."""
    owner = user_token(server, "leaving")
    first = package_dir(pkg_root, "leaving", "tool", "1.0.0")
    assert splice_as(owner, "publish", str(first), registry=server.url).code == 0
    admin(server, "set-owner", "leaving", "--release")
    assert requests.get(f"{server.url}/namespaces/leaving", timeout=10).json()["owner"] is None
    mallory = user_token(server, "successor")
    takeover = package_dir(pkg_root, "leaving", "tool", "2.0.0")
    refused = error_of(splice_as(mallory, "publish", str(takeover), "--json", registry=server.url))
    assert "registry code: NAMESPACE_RESERVED" in refused["details"], refused
    answer = requests.get(f"{server.url}/packages/leaving/tool", timeout=10).json()
    assert answer["latest"] == "1.0.0"
    assert "owner: successor" in admin(server, "set-owner", "leaving", "successor")
    assert splice_as(mallory, "publish", str(takeover), registry=server.url).code == 0, "assigned"
