"""`splice namespace info | add-maintainer | remove-maintainer` with the real binary.

Against the real server (once per store back end, see conftest.py) and the embedded registry.
"""

from __future__ import annotations

from pathlib import Path

from testing.cli import run_splice
from testing.registry import package_dir
from testing.registry_server import RunningRegistry, admin, user_token


def splice_as(token: str | None, *args: str, registry: str):
    env = {"SPLICE_TOKEN": token} if token else {}
    return run_splice("namespace", *args, "--registry", registry, env=env)


def test_info_and_maintainers(server: RunningRegistry, pkg_root: Path) -> None:
    owner, helper = user_token(server, "nsowner"), user_token(server, "nshelper")
    published = run_splice(
        "publish",
        str(package_dir(pkg_root, "nsowner", "kit")),
        "--registry",
        server.url,
        env={"SPLICE_TOKEN": owner},
    )
    assert published.code == 0, published.stderr

    info = splice_as(None, "info", "@nsowner", registry=server.url)
    assert info.code == 0, info.stderr
    assert info.stdout.splitlines() == [
        "@nsowner",
        "owner: nsowner",
        "maintainers: -",
        "reserved: no",
        "packages: @nsowner/kit",
    ]

    added = splice_as(owner, "add-maintainer", "nsowner", "nshelper", "--json", registry=server.url)
    assert added.code == 0, added.stderr
    assert added.json() == {
        "namespace": "nsowner",
        "owner": "nsowner",
        "maintainers": ["nshelper"],
        "reserved": False,
        "packages": ["@nsowner/kit"],
    }
    assert "Added nshelper to the maintainers of @nsowner" in added.stderr
    by_helper = run_splice(
        "publish",
        str(package_dir(pkg_root, "nsowner", "extra")),
        "--registry",
        server.url,
        env={"SPLICE_TOKEN": helper},
    )
    assert by_helper.code == 0, by_helper.stderr

    refused = splice_as(
        helper, "remove-maintainer", "nsowner", "nshelper", "--json", registry=server.url
    )
    assert refused.code == 1
    assert refused.json()["error"]["code"] == "FORBIDDEN"

    removed = splice_as(owner, "remove-maintainer", "@nsowner", "nshelper", registry=server.url)
    assert removed.code == 0, removed.stderr
    assert "maintainers: -" in removed.stdout
    assert "packages: @nsowner/extra, @nsowner/kit" in removed.stdout
    for done in (added, removed):
        assert owner not in done.stdout + done.stderr


def test_errors(server: RunningRegistry) -> None:
    owner = user_token(server, "nsowner2")
    missing = splice_as(None, "info", "nowhere", "--json", registry=server.url)
    assert missing.code == 1
    assert "Namespace @nowhere not found" in missing.json()["error"]["message"]
    admin(server, "set-owner", "nsowner2", "nsowner2")
    unknown = splice_as(owner, "add-maintainer", "nsowner2", "ghost", "--json", registry=server.url)
    assert unknown.code == 1
    assert unknown.json()["error"]["message"] == "User ghost not found"
    itself = splice_as(owner, "add-maintainer", "nsowner2", "nsowner2", registry=server.url)
    assert itself.code == 1 and "cannot be a maintainer" in itself.stderr
    anonymous = splice_as(
        None, "add-maintainer", "nsowner2", "ghost", "--json", registry=server.url
    )
    assert anonymous.code == 1
    assert anonymous.json()["error"]["code"] == "NOT_LOGGED_IN"
    for args in (("info", "a", "b"), ("add-maintainer", "a"), ("remove-maintainer", "a")):
        assert splice_as(owner, *args, registry=server.url).code == 2


def test_embedded_registry_offline() -> None:
    done = run_splice("namespace", "info", "splice", "--json")
    assert done.code == 0, done.stderr
    data = done.json()
    assert data["namespace"] == "splice" and data["reserved"] is True
    assert "@splice/files" in data["packages"]
