"""The embedded registry: official skills offline on a fresh home, local publishing."""

from __future__ import annotations

import subprocess
from pathlib import Path

from splice_build.registry.db.sqlite import SqliteMetadataStore
from splice_build.registry.official import official_skills
from testing.cli import run_splice, splice_executable
from testing.registry import package_dir


def test_fresh_home_finds_official_skills() -> None:
    skills = official_skills()
    assert skills, "no official skills shipped"
    done = run_splice("search", "splice", "--json")
    assert done.code == 0, done.stderr
    names = {r["name"] for r in done.json()["results"]}
    assert {s.package_id for s in skills} <= names
    info = run_splice("info", skills[0].package_id, "--json").json()
    assert info["selected"]["provenance"]["publisher"] == {"user": "splice", "via": "internal"}


def test_concurrent_first_use_publishes_each_skill_once(tmp_path: Path) -> None:
    import os

    home = tmp_path / "home"
    env = {**os.environ, "SPLICE_HOME": str(home)}
    procs = [
        subprocess.Popen(
            [splice_executable(), "search", "splice", "--json"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(4)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    store = SqliteMetadataStore(home / "registry" / "registry.db")
    for skill in official_skills():
        assert [v.version for v in store.versions(skill.package_id)] == [skill.version]
    store.close()


def test_publish_to_the_embedded_registry(tmp_path: Path) -> None:
    directory = package_dir(tmp_path, "mine", "tool")
    dry = run_splice("publish", str(directory), "--dry-run")
    assert dry.code == 0 and "Dry run: @mine/tool@1.0.0 is valid" in dry.stdout
    done = run_splice("publish", str(directory))
    assert done.code == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        "Published @mine/tool@1.0.0 to embedded: (this machine's own registry: "
        "`splice publish --registry URL` publishes to a served one)"
    )
    again = run_splice("publish", str(directory), "--json")
    assert again.code == 1 and again.json()["error"]["code"] == "VERSION_EXISTS"
    reserved = run_splice("publish", str(package_dir(tmp_path, "splice", "fake")), "--json")
    assert reserved.json()["error"]["code"] == "FORBIDDEN"


def test_config_registry_precedence(tmp_path: Path) -> None:
    assert run_splice("config", "get", "registry").stdout.strip() == "embedded: (default)"
    assert run_splice("config", "set", "registry", "local").code == 0
    assert run_splice("config", "get", "registry").stdout.strip() == "http://127.0.0.1:8787 (user)"
    env = {"SPLICE_REGISTRY": "https://r.example.com/"}
    assert (
        run_splice("config", "get", "registry", env=env).stdout.strip()
        == "https://r.example.com (env)"
    )
    assert (
        run_splice("config", "get", "registry", "--registry", "embedded").stdout.strip()
        == "embedded: (flag)"
    )
    assert run_splice("config", "unset", "registry").code == 0
    listed = run_splice("config", "list", "--json").json()
    assert listed["source"] == "default" and listed["userConfig"] == {}
    assert run_splice("config", "set", "registry", "ftp://x").code == 2


def test_unreachable_registry() -> None:
    done = run_splice("search", "x", "--registry", "http://127.0.0.1:9", "--json")
    assert done.code == 1 and done.json()["error"]["code"] == "REGISTRY_UNREACHABLE"


def test_a_lone_surrogate_in_the_description_is_published(tmp_path: Path) -> None:
    """``"\\ud800"`` in a manifest string is valid (``JSON.parse`` keeps it) and reached the
    database's UTF-8 encoder as itself: the publish failed with 500 INTERNAL_ERROR after the
    artifact was stored. The description column now holds U+FFFD, as Node's encoder writes
    it; the manifest keeps the escape."""
    import json

    from splice_build.registry.client.embedded import EmbeddedRegistryClient
    from testing.packages import minimal_manifest
    from testing.registry_fixtures import publish

    manifest = minimal_manifest(description="odd \ud800 text")
    store = tmp_path / "store"
    publish(store, tmp_path / "pkgs", files={"manifest.json": json.dumps(manifest)})
    client = EmbeddedRegistryClient(store)
    try:
        [hit] = client.search("greeter")["results"]
        assert hit["description"] == "odd \ufffd text"
        answer = client.version("@acme/greeter", "1.0.0")
        assert answer["manifest"]["description"] == "odd \ud800 text"
    finally:
        client.close()
