"""Every registry answer the CLI reads is validated before use: the malicious registry twists
one answer at a time (each field of the wrong type, each needed field missing, each string far
too long, `latest` not among the versions, an answer about another package) and the command
exits with REGISTRY_ERROR as a JSON error document, no traceback, the project unchanged."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from testing.cli import run_splice
from testing.hostile_registry import HostileRegistry, SignedPackage, hostile_registry, signed_store
from testing.project_state import state_bytes

PKG = "/packages/acme/greeter"
# endpoint -> (the path the proxy twists, a command that reads it)
ENDPOINTS: dict[str, tuple[str, list[str]]] = {
    "search": ("/packages/search", ["search", "greeter"]),
    "package": (PKG, ["info", "@acme/greeter"]),
    "version": (PKG + "/1.0.0", ["verify", "@acme/greeter"]),
    "namespace": ("/namespaces/acme", ["namespace", "info", "@acme"]),
    "keys": ("/namespaces/acme/keys", ["keys", "list", "@acme"]),
}
# endpoint -> where ("" the answer, "list" its first item) -> fields: a trailing "!" marks a
# field the client needs (removed as a mutation), a "~" a string (made huge as a mutation)
FIELDS: dict[str, dict[str, list[str]]] = {
    "search": {
        "": ["query~", "results!"],
        "results": ["name!~", "description~", "latest!~", "kind~"],
    },
    "package": {
        "": [
            "name!~",
            "namespace~",
            "description~",
            "latest~",
            "versions!",
            "createdAt~",
            "updatedAt~",
            "versionCount",
            "versionsTruncated",
        ],
        "versions": ["version!~", "publishedAt~"],
    },
    "version": {
        "": [
            "name!~",
            "version!~",
            "manifest!",
            "integrity!~",
            "size",
            "publishedAt~",
            "publishedBy~",
            "download~",
            "artifact",
            "provenance",
            "signatures",
        ],
        "signatures": ["keyId!~", "publicKey!~", "signature!~", "signedAt~", "revokedAt"],
    },
    "namespace": {"": ["namespace!~", "owner~", "maintainers", "reserved", "packages"]},
    "keys": {
        "": ["namespace~", "keys!"],
        "keys": ["keyId!~", "publicKey!~", "namespace~", "addedBy!~", "addedAt!~", "revokedAt"],
    },
}
HUGE = "x" * 100_000

Mutation = Callable[[Any], Any]


def _wrong_type(value: object) -> object:
    if isinstance(value, (str, bool)) or value is None:
        return 12345
    if isinstance(value, int):
        return "12345"
    if isinstance(value, list):
        return "not a list"
    return ["not an object"]


def _cases() -> list[tuple[str, str]]:
    """(endpoint, "where.field:kind") for every field of every answer the CLI reads."""
    cases = []
    for endpoint, places in FIELDS.items():
        for where, fields in places.items():
            for spec in fields:
                field = spec.rstrip("!~")
                name = f"{where}[0].{field}" if where else field
                cases.append((endpoint, f"{name}:type"))
                if "~" in spec:
                    cases.append((endpoint, f"{name}:huge"))
                if "!" in spec:
                    cases.append((endpoint, f"{name}:missing"))
    cases.append(("package", "latest:not-listed"))
    cases.append(("package", "name:another-package"))
    cases.append(("version", "version:another-version"))
    cases.append(("version", "body:not-an-object"))
    return cases


def _mutation(case: str) -> Mutation:
    name, kind = case.rsplit(":", 1)
    where, _, field = name.rpartition(".")
    where = where.removesuffix("[0]")

    def mutate(answer: Any) -> Any:
        twisted = copy.deepcopy(answer)
        if kind == "not-an-object":
            return [twisted]
        node = twisted[where][0] if where else twisted
        assert field in node, f"the honest answer has no {name}: fix FIELDS"
        if kind == "type":
            node[field] = _wrong_type(node[field])
        elif kind == "huge":
            node[field] = HUGE
        elif kind == "missing":
            del node[field]
        elif kind == "not-listed":
            node[field] = "9.9.9"
        elif kind == "another-package":
            node[field] = "@acme/other"
        else:
            assert kind == "another-version", kind
            node[field] = "2.0.0"
        return twisted

    return mutate


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HostileRegistry, Path, dict]]:
    """The signed package served through the malicious registry, a project that installed it,
    and the honest answer of every endpoint (read through the proxy before any twist)."""
    root = tmp_path_factory.mktemp("malformed")
    store = root / "served-data"
    package: SignedPackage = signed_store(store, root / "pkgs")
    with hostile_registry(store) as registry:
        project = root / "project"
        project.mkdir()
        assert run_splice("init", cwd=project).code == 0
        added = run_splice("--registry", registry.url, "add", package.package_id, cwd=project)
        assert added.code == 0, added.stderr
        honest: dict[str, Any] = {}

        def record(path: str, answer: Any) -> Any:
            honest.setdefault(path.split("?", 1)[0], copy.deepcopy(answer))
            return answer

        registry.twist = record
        for _, command in ENDPOINTS.values():
            done = run_splice("--json", "--registry", registry.url, *command, cwd=project)
            assert done.code == 0, (command, done.stdout, done.stderr)
        registry.twist = None
        yield registry, project, honest


def _run_twisted(world, endpoint: str, mutate: Mutation) -> None:
    registry, project, _ = world
    path, command = ENDPOINTS[endpoint]

    def twist(asked: str, answer: Any) -> Any:
        return mutate(answer) if asked.split("?", 1)[0] == path else answer

    before = state_bytes(project)
    registry.twist = twist
    try:
        done = run_splice("--json", "--registry", registry.url, *command, cwd=project)
    finally:
        registry.twist = None
    assert "Traceback" not in done.stderr and "unexpected failure" not in done.stderr
    assert done.code == 1, (done.stdout, done.stderr)
    error = done.json()["error"]
    assert error["code"] == "REGISTRY_ERROR", error
    assert f"the registry answered {path}" in error["message"]
    assert len(json.dumps(error)) < 4096  # the huge value is not echoed back
    assert state_bytes(project) == before


@pytest.mark.parametrize(("endpoint", "mutation"), _cases())
def test_a_twisted_answer_is_a_registry_error(world, endpoint: str, mutation: str) -> None:
    _run_twisted(world, endpoint, _mutation(mutation))


def test_the_table_covers_every_field_of_the_honest_answers(world) -> None:
    """FIELDS names every field the real server sends (so a new field gets its mutations)."""
    _, _, honest = world
    for endpoint, (path, _) in ENDPOINTS.items():
        answer = honest[path]
        for where, fields in FIELDS[endpoint].items():
            node = answer[where][0] if where else answer
            assert sorted(node) == sorted(f.rstrip("!~") for f in fields), (endpoint, where)


@pytest.mark.parametrize(
    ("method", "path", "field"),
    [
        ("versions", PKG + "/versions", "versions"),
        ("provenance", PKG + "/1.0.0/provenance", "name"),
    ],
)
def test_answers_no_command_reads_yet_are_validated_too(world, method, path, field) -> None:
    """`versions` and `provenance` are in the client protocol though no command reads them yet."""
    from splice_build.errors import ErrorCode, RegistryError
    from splice_build.registry.client.http import HttpRegistryClient

    registry, _, _ = world
    client = HttpRegistryClient(registry.url)
    args = ("@acme/greeter",) if method == "versions" else ("@acme/greeter", "1.0.0")
    try:
        assert getattr(client, method)(*args)["name"] == "@acme/greeter"
        registry.twist = lambda asked, answer: {**answer, field: 12345} if asked == path else answer
        with pytest.raises(RegistryError) as caught:
            getattr(client, method)(*args)
        assert caught.value.code is ErrorCode.REGISTRY_ERROR
        assert f"the registry answered {path}" in caught.value.message
    finally:
        registry.twist = None
        client.close()
