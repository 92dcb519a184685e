from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from typing import Any

import pytest

from splice_build.errors import ErrorCode, SpecError
from splice_build.spec import permissions as permissions_module
from splice_build.spec.permissions import (
    Permissions,
    billed_capabilities,
    broker_capabilities,
    capability_catalogue,
    host_allowed,
    is_valid_host_pattern,
    ungranted,
)
from splice_build.spec.validation import load_schema

BILLED = {"ai.generate", "web.search", "web.extract", "web.map", "web.similar", "web.answer"}


def _errors(obj: object, where: str = "permissions") -> list[str]:
    errors: list[str] = []
    Permissions.parse_into(obj, errors, where)
    return errors


# --- normalization -------------------------------------------------------------------------


def test_empty_object_is_no_permissions() -> None:
    p = Permissions.from_json({})
    assert p == Permissions() and p.is_empty
    assert p.to_json() == {"fs": {"read": [], "write": []}, "network": [], "env": []}


def test_lists_are_deduplicated_keeping_first_occurrence() -> None:
    p = Permissions.from_json(
        {
            "fs": {"read": ["b", "a", "b", "."], "write": ["w", "w"]},
            "network": ["*", "api.github.com", "*"],
            "env": ["B", "A", "B"],
            "capabilities": ["web.search", "market.price", "web.search"],
        }
    )
    assert p.fs_read == ("b", "a", ".")
    assert p.fs_write == ("w",)
    assert p.network == ("*", "api.github.com")
    assert p.env == ("B", "A")
    assert p.capabilities == ("web.search", "market.price")
    assert list(p.to_json()) == ["fs", "network", "env", "capabilities"]
    assert p.to_json()["capabilities"] == ["web.search", "market.price"]


def test_capabilities_omitted_when_empty() -> None:
    assert "capabilities" not in Permissions.from_json({"capabilities": []}).to_json()
    assert "capabilities" not in Permissions.from_json({"env": ["X"]}).to_json()


def test_json_round_trip() -> None:
    p = Permissions(fs_read=("data",), network=("*.example.com",), capabilities=("ai.generate",))
    assert Permissions.from_json(p.to_json()) == p


@pytest.mark.parametrize(
    ("obj", "errors"),
    [
        (None, ["permissions: must be an object"]),
        ([], ["permissions: must be an object"]),
        ({"shell": True}, ['permissions: unknown permission "shell"']),
        ({"fs": []}, ["permissions.fs: must be an object"]),
        ({"fs": {"exec": []}}, ['permissions.fs: unknown key "exec"']),
        ({"fs": {"read": "data"}}, ["permissions.fs.read: must be an array"]),
        (
            {"fs": {"read": ["../secrets"]}},
            [
                "permissions.fs.read[0]: must be a project-relative path without '..' or invisible characters (e.g. data/notes)"
            ],
        ),
        (
            {"fs": {"write": ["ok", "/etc"]}},
            [
                "permissions.fs.write[1]: must be a project-relative path without '..' or invisible characters (e.g. data/notes)"
            ],
        ),
        (
            {"fs": {"read": ["a\\b"]}},
            [
                "permissions.fs.read[0]: must be a project-relative path without '..' or invisible characters (e.g. data/notes)"
            ],
        ),
        (
            {"fs": {"read": ["C:data"]}},
            [
                "permissions.fs.read[0]: must be a project-relative path without '..' or invisible characters (e.g. data/notes)"
            ],
        ),
        (
            {"fs": {"read": ["a//b"]}},
            [
                "permissions.fs.read[0]: must be a project-relative path without '..' or invisible characters (e.g. data/notes)"
            ],
        ),
        (
            {"fs": {"read": [""]}},
            [
                "permissions.fs.read[0]: must be a project-relative path without '..' or invisible characters (e.g. data/notes)"
            ],
        ),
        (
            {"fs": {"read": [1]}},
            [
                "permissions.fs.read[0]: must be a project-relative path without '..' or invisible characters (e.g. data/notes)"
            ],
        ),
        ({"network": "*"}, ["permissions.network: must be an array"]),
        (
            {"network": ["HTTP://x"]},
            [
                'permissions.network[0]: must be a lowercase hostname, optionally prefixed with *., or "*" for any public host'
            ],
        ),
        ({"env": ["lower"]}, ["permissions.env[0]: must be an UPPER_SNAKE_CASE name"]),
        ({"env": ["OK", "1BAD"]}, ["permissions.env[1]: must be an UPPER_SNAKE_CASE name"]),
        ({"env": ["A" * 129]}, ["permissions.env[0]: must be an UPPER_SNAKE_CASE name"]),
        ({"env": ["A\n"]}, ["permissions.env[0]: must be an UPPER_SNAKE_CASE name"]),
        ({"capabilities": {}}, ["permissions.capabilities: must be an array"]),
    ],
)
def test_invalid_permissions(obj: object, errors: list[str]) -> None:
    assert _errors(obj) == errors


def test_unknown_capability_lists_every_known_one() -> None:
    (error,) = _errors({"capabilities": ["web.search", "shell.exec"]})
    names = [c.name for c in capability_catalogue()]
    assert error == "permissions.capabilities[1]: must be one of: " + ", ".join(names)


def test_all_problems_at_once_with_a_custom_root() -> None:
    obj = {
        "fs": {"read": ["../x"], "write": ["/etc"], "x": 1},
        "network": ["Bad"],
        "env": ["lower"],
        "shell": 1,
    }
    errors = _errors(obj, where="packages.@a/b.permissions")
    assert errors == [
        'packages.@a/b.permissions: unknown permission "shell"',
        'packages.@a/b.permissions.fs: unknown key "x"',
        "packages.@a/b.permissions.fs.read[0]: must be a project-relative path without '..' or invisible characters (e.g. data/notes)",
        "packages.@a/b.permissions.fs.write[0]: must be a project-relative path without '..' or invisible characters (e.g. data/notes)",
        'packages.@a/b.permissions.network[0]: must be a lowercase hostname, optionally prefixed with *., or "*" for any public host',
        "packages.@a/b.permissions.env[0]: must be an UPPER_SNAKE_CASE name",
    ]
    with pytest.raises(SpecError) as info:
        Permissions.from_json(obj, where="packages.@a/b.permissions")
    assert info.value.code is ErrorCode.INVALID_MANIFEST
    assert list(info.value.details) == errors


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        ("*", True),
        ("api.github.com", True),
        ("*.example.com", True),
        ("localhost", True),
        ("127.0.0.1", True),
        ("xn--bcher-kva.example", True),
        ("a" * 63 + ".com", True),
        ("a" * 64 + ".com", False),
        (".".join(["a" * 63] * 4)[:253], True),
        (".".join(["a" * 63] * 4)[:251] + ".ab", False),  # 254 characters
        ("Example.com", False),
        ("-a.com", False),
        ("a-.com", False),
        ("a..com", False),
        ("a.com.", False),
        ("*.*.example.com", False),
        ("*example.com", False),
        ("example.*", False),
        ("http://x", False),
        ("a_b.com", False),
        ("[::1]", False),
        ("", False),
    ],
)
def test_host_patterns(host: str, ok: bool) -> None:
    assert is_valid_host_pattern(host) is ok
    assert (_errors({"network": [host]}) == []) is ok


# --- catalogue -----------------------------------------------------------------------------


def test_capability_catalogue() -> None:
    names = [c.name for c in capability_catalogue()]
    assert len(names) == 46 == len(set(names))
    assert names[:3] == ["onchain.balance", "onchain.transaction", "onchain.block"]
    assert names[-1] == "equity.news"
    assert broker_capabilities() == frozenset(names)
    assert billed_capabilities() == BILLED
    assert all(c.description and "\n" not in c.description for c in capability_catalogue())
    assert broker_capabilities() == permissions_module.BROKER_CAPABILITIES
    assert permissions_module.BILLED_CAPABILITIES == BILLED
    with pytest.raises(AttributeError):
        _ = permissions_module.NO_SUCH_NAME


def test_catalogue_file_shape() -> None:
    data = json.loads(
        resources.files("splice_build").joinpath("schemas", "capabilities.json").read_text()
    )
    for entry in data["capabilities"]:
        assert set(entry) == {"name", "billed", "description"}
        assert isinstance(entry["billed"], bool)


def test_every_capability_is_accepted() -> None:
    names = [c.name for c in capability_catalogue()]
    assert Permissions.from_json({"capabilities": names}).capabilities == tuple(names)


def test_schema_file_is_a_valid_json_schema() -> None:
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(load_schema("permissions.schema.json"))


def test_import_reads_nothing_and_loads_no_jsonschema() -> None:
    code = (
        "import sys, builtins\n"
        "import splice_build.spec.manifest, splice_build.spec.package, splice_build.spec.tools\n"
        "assert 'jsonschema' not in sys.modules, 'jsonschema imported'\n"
        "from splice_build.spec import permissions\n"
        "assert permissions.capability_catalogue.cache_info().currsize == 0\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- describe ------------------------------------------------------------------------------


def test_describe_empty() -> None:
    assert Permissions().describe() == [
        "none (sandboxed: no file, network, environment or host capability access)"
    ]


def test_describe_lines() -> None:
    p = Permissions.from_json(
        {
            "fs": {"read": ["data"], "write": ["out"]},
            "network": ["api.github.com", "*"],
            "env": ["TOKEN"],
            "capabilities": ["market.price", "web.search"],
        }
    )
    assert p.describe() == [
        "read files: data",
        "write files: out",
        "network: api.github.com",
        "network: any public host (private, loopback and link-local addresses are blocked)",
        "environment variable: TOKEN",
        "host capabilities: market.price, web.search (run by Splice with the host's provider keys: "
        "the tool gets results, never keys) — web.search may spend provider credits/money",
    ]
    billed = Permissions.from_json({"capabilities": ["web.search", "web.answer"]}).describe()
    assert billed == [
        "host capabilities: web.search, web.answer (run by Splice with the host's provider keys: "
        "the tool gets results, never keys) — may spend provider credits/money"
    ]


# --- ungranted -----------------------------------------------------------------------------


def _p(**lists: Any) -> Permissions:
    return Permissions(**{k: tuple(v) for k, v in lists.items()})


@pytest.mark.parametrize(
    ("requested", "granted", "missing"),
    [
        (_p(), _p(), _p()),
        (_p(fs_read=["a"]), _p(fs_read=["a"]), _p()),
        (_p(fs_read=["a"]), _p(fs_write=["a"]), _p()),  # write implies read
        (_p(fs_write=["a"]), _p(fs_read=["a"]), _p(fs_write=["a"])),  # read does not imply write
        (_p(fs_read=["a/b"]), _p(fs_read=["a"]), _p(fs_read=["a/b"])),  # exact, not prefix
        (_p(fs_read=["a"]), _p(fs_read=["."]), _p(fs_read=["a"])),
        (_p(network=["api.github.com"]), _p(network=["*"]), _p(network=["api.github.com"])),
        (_p(network=["*"]), _p(network=["api.github.com"]), _p(network=["*"])),
        (
            _p(network=["a.example.com"]),
            _p(network=["*.example.com"]),
            _p(network=["a.example.com"]),
        ),
        (_p(env=["A", "B"]), _p(env=["B"]), _p(env=["A"])),
        (
            _p(capabilities=["web.search", "ai.generate"]),
            _p(capabilities=["ai.generate"]),
            _p(capabilities=["web.search"]),
        ),
        (_p(capabilities=["web.search"]), _p(), _p(capabilities=["web.search"])),
        (_p(), _p(network=["*"], env=["X"]), _p()),
    ],
)
def test_ungranted(requested: Permissions, granted: Permissions, missing: Permissions) -> None:
    result = ungranted(requested, granted)
    assert result == missing
    assert result.is_empty is missing.is_empty


def test_ungranted_json_omits_empty_capabilities() -> None:
    result = ungranted(_p(network=["x.com"]), _p())
    assert result.to_json() == {"fs": {"read": [], "write": []}, "network": ["x.com"], "env": []}


# --- host_allowed --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "patterns", "ok"),
    [
        ("api.github.com", ["api.github.com"], True),
        ("API.GitHub.com", ["api.github.com"], True),
        ("api.github.com.", ["api.github.com"], True),
        ("github.com", ["api.github.com"], False),
        ("a.example.com", ["*.example.com"], True),
        ("a.b.example.com", ["*.example.com"], True),
        ("example.com", ["*.example.com"], False),
        ("example.com.", ["*.example.com"], False),
        ("evil-example.com", ["*.example.com"], False),
        ("example.com.evil.net", ["*.example.com"], False),
        ("anything.at.all", ["*"], True),
        ("10.0.0.1", ["*"], True),  # whether the address is public is the network guard's job
        ("x.com", [], False),
        ("x.com", ["y.com", "x.com"], True),
    ],
)
def test_host_allowed(host: str, patterns: list[str], ok: bool) -> None:
    assert host_allowed(host, patterns) is ok
