from __future__ import annotations

import json
from typing import Any

import pytest

from splice_build.errors import ErrorCode, SpecError
from splice_build.spec.json_depth import nesting_depth
from splice_build.spec.manifest import Manifest
from splice_build.spec.names import PackageId
from splice_build.spec.permissions import Permissions
from splice_build.spec.validation import load_schema
from testing.manifests import DROP, manifest_dict, nested_schema, tool_dict

REQUIRED_STRING = "is required and must be a non-empty string"
ENTRY_RULE = "must be a package-relative path without '..' ending in .ts, .mts, .js, .mjs"
RUNTIME_RULE = 'runtime: only {"type":"node"} is supported in spec version 1'
AGENT = {"instructions": "Help people.", "skills": ["@splice/github"]}


def errors_of(obj: object) -> list[str]:
    with pytest.raises(SpecError) as info:
        Manifest.from_dict(obj)
    assert info.value.code is ErrorCode.INVALID_MANIFEST
    assert info.value.message == "manifest.json is invalid"
    return list(info.value.details)


def with_tool(**overrides: Any) -> dict[str, Any]:
    return manifest_dict(tools=[tool_dict(**overrides)])


# --- valid manifests and normalization -----------------------------------------------------


def test_valid_manifest_normalizes_defaults() -> None:
    m = Manifest.from_dict(manifest_dict(permissions=DROP))
    assert (m.spec_version, m.id, m.version, m.description) == (
        1,
        "@splice/example",
        "0.1.0",
        "Example",
    )
    assert m.package_id == PackageId("splice", "example")
    assert m.runtime == {"type": "node"}
    assert m.permissions == Permissions()
    assert (m.license, m.homepage, m.agent, m.dependencies) == (None, None, None, None)
    tool = m.tool("hello")
    assert tool is not None and m.tool("nope") is None
    assert tool.timeout_ms is None and tool.effective_timeout_ms == 10_000
    assert tool.input == tool_dict()["input"] and tool.output == tool_dict()["output"]


def test_normalized_key_order_with_every_optional_field() -> None:
    raw = {
        "dependencies": {"@splice/json": "^1.0.0"},
        "agent": {
            "x-note": 1,
            "examples": ["Hi"],
            "model": "m",
            "skills": [],
            "instructions": "Do.",
        },
        "homepage": "https://example.com",
        "license": "MIT",
        "tools": [
            {
                "timeoutMs": 5000,
                "output": {},
                "input": {"type": "object"},
                "entry": "a.js",
                "description": "D",
                "name": "t",
                "x-ui": {},
            }
        ],
        "permissions": {"env": ["A"], "network": ["*"], "fs": {"write": [], "read": ["data"]}},
        "runtime": {"minNodeVersion": "24.0.0", "x-gpu": True, "type": "node"},
        "description": "Example",
        "version": "1.0.0",
        "x-vendor": {"a": 1},
        "name": "example",
        "namespace": "splice",
        "specVersion": 1,
    }
    out = Manifest.from_dict(raw).to_json()
    assert list(out) == [
        "specVersion",
        "namespace",
        "name",
        "version",
        "description",
        "runtime",
        "permissions",
        "tools",
        "license",
        "homepage",
        "agent",
        "dependencies",
    ]
    assert out["runtime"] == {"type": "node", "minNodeVersion": "24.0.0"}
    assert list(out["runtime"]) == ["type", "minNodeVersion"]
    assert list(out["permissions"]) == ["fs", "network", "env"]
    assert list(out["tools"][0]) == ["name", "description", "entry", "input", "output", "timeoutMs"]
    assert list(out["agent"]) == ["instructions", "skills", "model", "examples"]
    assert json.dumps(out).count("x-") == 0


def test_extension_keys_are_accepted_and_dropped() -> None:
    raw = manifest_dict(
        **{"x-vendor": {"a": 1}},
        tools=[tool_dict(**{"x-ui": "wide"})],
        runtime={"type": "node", "x-a": 1},
    )
    out = Manifest.from_dict(raw).to_json()
    assert (
        "x-vendor" not in out
        and "x-ui" not in out["tools"][0]
        and out["runtime"] == {"type": "node"}
    )


def test_optional_tool_fields_are_kept_only_when_present() -> None:
    out = Manifest.from_dict(with_tool(output=DROP)).to_json()
    assert list(out["tools"][0]) == ["name", "description", "entry", "input"]


def test_round_trip_through_to_json() -> None:
    m = Manifest.from_dict(manifest_dict(license="MIT", agent=AGENT, dependencies={"@a/b": "*"}))
    assert Manifest.from_dict(m.to_json()) == m
    assert Manifest.from_dict(m.to_json()).to_json() == m.to_json()


def test_to_json_returns_copies() -> None:
    m = Manifest.from_dict(manifest_dict(agent=AGENT))
    out = m.to_json()
    out["tools"][0]["input"]["properties"]["name"]["type"] = "number"
    out["agent"]["skills"].append("@x/y")
    out["runtime"]["type"] = "python"
    assert m.to_json() == Manifest.from_dict(manifest_dict(agent=AGENT)).to_json()


def test_input_is_not_shared_with_the_caller() -> None:
    raw = manifest_dict()
    m = Manifest.from_dict(raw)
    raw["tools"][0]["input"]["type"] = "string"
    assert m.tools[0].input["type"] == "object"


def test_manifests_are_hashable_values() -> None:
    a = Manifest.from_dict(manifest_dict())
    b = Manifest.from_dict(manifest_dict())
    assert a == b and hash(a) == hash(b)
    assert a != Manifest.from_dict(manifest_dict(version="0.1.1"))


@pytest.mark.parametrize(
    ("field", "value", "normalized"),
    [
        ("specVersion", 1.0, 1),
        ("version", "1.0.0-beta.1+build.5", "1.0.0-beta.1+build.5"),
        ("description", "d" * 500, "d" * 500),
        ("description", "😀" * 250, "😀" * 250),  # 500 UTF-16 code units
        ("namespace", "a" * 64, "a" * 64),
        ("license", "", ""),
        ("homepage", "h" * 500, "h" * 500),
    ],
)
def test_valid_edge_values(field: str, value: object, normalized: object) -> None:
    assert Manifest.from_dict(manifest_dict(**{field: value})).to_json()[field] == normalized


@pytest.mark.parametrize(
    ("timeout", "normalized"), [(1, 1), (60_000, 60_000), (5000.0, 5000), (1e3, 1000)]
)
def test_valid_timeouts(timeout: float, normalized: int) -> None:
    m = Manifest.from_dict(with_tool(timeoutMs=timeout))
    assert m.tools[0].timeout_ms == normalized and m.tools[0].effective_timeout_ms == normalized
    assert type(m.to_json()["tools"][0]["timeoutMs"]) is int


@pytest.mark.parametrize(
    "entry", ["tools/hello.ts", "hello.mts", "a/b/c.js", "x.mjs", "tools/hello.test.ts", "..a.js"]
)
def test_valid_entries(entry: str) -> None:
    Manifest.from_dict(with_tool(entry=entry))


# --- invalid manifests: every rule of docs/compatibility.md#manifest ----------------------------------

INVALID: list[tuple[str, Any, list[str]]] = [
    # the document
    ("array", [], ["manifest: must be a JSON object"]),
    ("string", "manifest", ["manifest: must be a JSON object"]),
    ("null", None, ["manifest: must be a JSON object"]),
    # specVersion short-circuits
    (
        "specVersion missing",
        manifest_dict(specVersion=DROP, name="Bad", extra=1),
        ["specVersion: is required"],
    ),
    (
        "specVersion 2",
        manifest_dict(specVersion=2, name="Bad"),
        ["specVersion: unsupported version 2 (supported: 1)"],
    ),
    (
        "specVersion string",
        manifest_dict(specVersion="1"),
        ['specVersion: unsupported version "1" (supported: 1)'],
    ),
    (
        "specVersion true",
        manifest_dict(specVersion=True),
        ["specVersion: unsupported version true (supported: 1)"],
    ),
    (
        "specVersion null",
        manifest_dict(specVersion=None),
        ["specVersion: unsupported version null (supported: 1)"],
    ),
    # top level
    ("unknown field", manifest_dict(extra=True), ["extra: unknown field"]),
    ("x without dash", manifest_dict(xvendor=1), ["xvendor: unknown field"]),
    ("namespace missing", manifest_dict(namespace=DROP), [f"namespace: {REQUIRED_STRING}"]),
    ("namespace empty", manifest_dict(namespace=""), [f"namespace: {REQUIRED_STRING}"]),
    ("namespace blank", manifest_dict(namespace="  \ufeff"), [f"namespace: {REQUIRED_STRING}"]),
    ("namespace number", manifest_dict(namespace=7), [f"namespace: {REQUIRED_STRING}"]),
    (
        "namespace upper",
        manifest_dict(namespace="Splice"),
        ["namespace: may only contain lowercase letters, digits and dashes"],
    ),
    (
        "namespace dash",
        manifest_dict(namespace="-splice"),
        ["namespace: may only contain lowercase letters, digits and dashes"],
    ),
    (
        "namespace newline",
        manifest_dict(namespace="splice\n"),
        ["namespace: may only contain lowercase letters, digits and dashes"],
    ),
    (
        "namespace long",
        manifest_dict(namespace="a" * 65),
        [
            "namespace: must be at most 64 characters",
            "namespace: may only contain lowercase letters, digits and dashes",
        ],
    ),
    (
        "name dot",
        manifest_dict(name="ex.ample"),
        ["name: may only contain lowercase letters, digits and dashes"],
    ),
    ("name missing", manifest_dict(name=DROP), [f"name: {REQUIRED_STRING}"]),
    ("version missing", manifest_dict(version=DROP), [f"version: {REQUIRED_STRING}"]),
    (
        "version short",
        manifest_dict(version="1.0"),
        ['version: "1.0" is not a valid semantic version'],
    ),
    (
        "version v",
        manifest_dict(version="v1.0.0"),
        ['version: "v1.0.0" is not a valid semantic version'],
    ),
    ("version number", manifest_dict(version=1), [f"version: {REQUIRED_STRING}"]),
    (
        "version long",
        manifest_dict(version="1.0.0-" + "a" * 59),
        # The limit is the field's; the text is still a valid semantic version (as in TS).
        ["version: must be at most 64 characters"],
    ),
    ("description missing", manifest_dict(description=DROP), [f"description: {REQUIRED_STRING}"]),
    ("description blank", manifest_dict(description=" \n\t "), [f"description: {REQUIRED_STRING}"]),
    (
        "description long",
        manifest_dict(description="d" * 501),
        ["description: must be at most 500 characters"],
    ),
    (
        "description utf16",
        manifest_dict(description="😀" * 251),
        ["description: must be at most 500 characters"],
    ),
    (
        "license number",
        manifest_dict(license=1),
        ["license: must be a string of at most 500 characters"],
    ),
    (
        "license null",
        manifest_dict(license=None),
        ["license: must be a string of at most 500 characters"],
    ),
    (
        "homepage long",
        manifest_dict(homepage="h" * 501),
        ["homepage: must be a string of at most 500 characters"],
    ),
    # runtime
    ("runtime string", manifest_dict(runtime="node"), [RUNTIME_RULE]),
    ("runtime empty", manifest_dict(runtime={}), [RUNTIME_RULE]),
    ("runtime python", manifest_dict(runtime={"type": "python"}), [RUNTIME_RULE]),
    (
        "runtime unknown key",
        manifest_dict(runtime={"type": "node", "gpu": True}),
        ["runtime.gpu: unknown field"],
    ),
    (
        "minNodeVersion range",
        manifest_dict(runtime={"type": "node", "minNodeVersion": ">=22"}),
        ['runtime.minNodeVersion: must be a semantic version like "22.18.0"'],
    ),
    (
        "minNodeVersion number",
        manifest_dict(runtime={"type": "node", "minNodeVersion": 22}),
        ['runtime.minNodeVersion: must be a semantic version like "22.18.0"'],
    ),
    # permissions (details in test_permissions.py)
    ("permissions list", manifest_dict(permissions=[]), ["permissions: must be an object"]),
    (
        "permissions shell",
        manifest_dict(permissions={"shell": True}),
        ['permissions: unknown permission "shell"'],
    ),
    # tools
    ("tools missing", manifest_dict(tools=DROP), ["tools: must be a non-empty array"]),
    ("tools empty", manifest_dict(tools=[]), ["tools: must be a non-empty array"]),
    ("tools object", manifest_dict(tools={"hello": {}}), ["tools: must be a non-empty array"]),
    (
        "tool not object",
        manifest_dict(tools=[tool_dict(), "hello"]),
        ["tools[1]: must be an object"],
    ),
    ("tool unknown field", with_tool(permissions={}), ["tools[0].permissions: unknown field"]),
    ("tool name missing", with_tool(name=DROP), [f"tools[0].name: {REQUIRED_STRING}"]),
    (
        "tool name digit",
        with_tool(name="1hello"),
        [
            "tools[0].name: must start with a letter and contain only lowercase letters, digits and dashes"
        ],
    ),
    (
        "tool name dot",
        with_tool(name="a.b"),
        [
            "tools[0].name: must start with a letter and contain only lowercase letters, digits and dashes"
        ],
    ),
    (
        "tool name long",
        with_tool(name="a" * 65),
        [
            "tools[0].name: must be at most 64 characters",
            "tools[0].name: must start with a letter and contain only lowercase letters, digits and dashes",
        ],
    ),
    (
        "tool description blank",
        with_tool(description=""),
        [f"tools[0].description: {REQUIRED_STRING}"],
    ),
    (
        "duplicate tools",
        manifest_dict(tools=[tool_dict(), tool_dict(entry="b.js")]),
        ['tools[1].name: duplicate tool name "hello"'],
    ),
    ("entry missing", with_tool(entry=DROP), [f"tools[0].entry: {REQUIRED_STRING}"]),
    ("entry escape", with_tool(entry="../escape.ts"), [f"tools[0].entry: {ENTRY_RULE}"]),
    ("entry absolute", with_tool(entry="/tools/a.ts"), [f"tools[0].entry: {ENTRY_RULE}"]),
    ("entry backslash", with_tool(entry="tools\\a.ts"), [f"tools[0].entry: {ENTRY_RULE}"]),
    ("entry drive", with_tool(entry="C:a.ts"), [f"tools[0].entry: {ENTRY_RULE}"]),
    ("entry dot segment", with_tool(entry="./tools/a.ts"), [f"tools[0].entry: {ENTRY_RULE}"]),
    ("entry dot", with_tool(entry="."), [f"tools[0].entry: {ENTRY_RULE}"]),
    ("entry python", with_tool(entry="tools/a.py"), [f"tools[0].entry: {ENTRY_RULE}"]),
    ("entry cjs", with_tool(entry="tools/a.cjs"), [f"tools[0].entry: {ENTRY_RULE}"]),
    ("entry newline", with_tool(entry="tools/a.ts\n"), [f"tools[0].entry: {ENTRY_RULE}"]),
    (
        "entry long",
        with_tool(entry="a/" * 127 + "b.ts"),
        ["tools[0].entry: must be at most 256 characters", f"tools[0].entry: {ENTRY_RULE}"],
    ),
    (
        "input missing",
        with_tool(input=DROP),
        ['tools[0].input: is required (use {"type":"object"} for tools without input)'],
    ),
    (
        "input string",
        with_tool(input={"type": "string"}),
        ['tools[0].input.type: tool input must be "object"'],
    ),
    ("input untyped", with_tool(input={}), ['tools[0].input.type: tool input must be "object"']),
    ("input not object", with_tool(input="object"), ["tools[0].input: must be an object"]),
    (
        "input pattern",
        with_tool(
            input={"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}}
        ),
        ['tools[0].input.properties.a: unsupported keyword "pattern"'],
    ),
    (
        "input too deep",
        with_tool(input={"type": "object", "properties": {"a": nested_schema(16)}}),
        ["tools[0].input.properties.a" + ".items" * 16 + ": schema nesting is too deep (max 16)"],
    ),
    (
        "output keyword",
        with_tool(output={"type": "object", "oneOf": []}),
        ['tools[0].output: unsupported keyword "oneOf"'],
    ),
    ("output null", with_tool(output=None), ["tools[0].output: must be an object"]),
    (
        "timeout zero",
        with_tool(timeoutMs=0),
        ["tools[0].timeoutMs: must be an integer between 1 and 60000"],
    ),
    (
        "timeout high",
        with_tool(timeoutMs=60_001),
        ["tools[0].timeoutMs: must be an integer between 1 and 60000"],
    ),
    (
        "timeout fraction",
        with_tool(timeoutMs=1.5),
        ["tools[0].timeoutMs: must be an integer between 1 and 60000"],
    ),
    (
        "timeout string",
        with_tool(timeoutMs="100"),
        ["tools[0].timeoutMs: must be an integer between 1 and 60000"],
    ),
    (
        "timeout bool",
        with_tool(timeoutMs=True),
        ["tools[0].timeoutMs: must be an integer between 1 and 60000"],
    ),
    # agent
    (
        "agent tools object",
        manifest_dict(agent=AGENT, tools="x"),
        ["tools: must be a non-empty array"],
    ),
    ("agent not object", manifest_dict(agent=[]), ["agent: must be an object"]),
    ("agent null", manifest_dict(agent=None, tools=[]), ["agent: must be an object"]),
    (
        "agent unknown field",
        manifest_dict(agent={**AGENT, "tools": []}),
        ["agent.tools: unknown field"],
    ),
    (
        "agent no instructions",
        manifest_dict(agent={"skills": []}),
        [f"agent.instructions: {REQUIRED_STRING}"],
    ),
    (
        "agent long instructions",
        manifest_dict(agent={**AGENT, "instructions": "i" * 8001}),
        ["agent.instructions: must be at most 8000 characters"],
    ),
    (
        "agent no skills",
        manifest_dict(agent={"instructions": "x"}),
        ["agent.skills: must be an array of package ids (it may be empty)"],
    ),
    (
        "agent skills string",
        manifest_dict(agent={**AGENT, "skills": "@a/b"}),
        ["agent.skills: must be an array of package ids (it may be empty)"],
    ),
    (
        "agent 21 skills",
        manifest_dict(agent={**AGENT, "skills": [f"@a/s{i}" for i in range(21)]}),
        ["agent.skills: at most 20 packages"],
    ),
    (
        "agent bad skill",
        manifest_dict(agent={**AGENT, "skills": ["@a/b", "github", 3]}),
        ['agent.skills: invalid package name "github"', "agent.skills: invalid package name 3"],
    ),
    (
        "agent self",
        manifest_dict(agent={**AGENT, "skills": ["@splice/example"]}),
        ["agent.skills: an agent cannot list itself (@splice/example)"],
    ),
    (
        "agent duplicate",
        manifest_dict(agent={**AGENT, "skills": ["@a/b", "@a/b"]}),
        ['agent.skills: duplicate package "@a/b"'],
    ),
    (
        "agent model blank",
        manifest_dict(agent={**AGENT, "model": " "}),
        ["agent.model: must be a non-empty string of at most 100 characters"],
    ),
    (
        "agent model long",
        manifest_dict(agent={**AGENT, "model": "m" * 101}),
        ["agent.model: must be a non-empty string of at most 100 characters"],
    ),
    (
        "agent 7 examples",
        manifest_dict(agent={**AGENT, "examples": ["e"] * 7}),
        ["agent.examples: must be at most 6 non-empty strings of up to 300 characters"],
    ),
    (
        "agent bad examples",
        manifest_dict(agent={**AGENT, "examples": ["ok", "", "e" * 301, 1]}),
        ["agent.examples: must be at most 6 non-empty strings of up to 300 characters"],
    ),
    # dependencies (reserved)
    (
        "dependencies list",
        manifest_dict(dependencies=[]),
        ["dependencies: must be an object mapping package ids to version ranges"],
    ),
    (
        "dependencies 51",
        manifest_dict(dependencies={f"@a/d{i}": "*" for i in range(51)}),
        ["dependencies: at most 50 entries"],
    ),
    (
        "dependency bad id",
        manifest_dict(dependencies={"json": "*"}),
        ['dependencies: invalid package name "json"'],
    ),
    (
        "dependency self",
        manifest_dict(dependencies={"@splice/example": "*"}),
        ["dependencies: a package cannot depend on itself (@splice/example)"],
    ),
    (
        "dependency latest",
        manifest_dict(dependencies={"@a/b": "latest"}),
        ["dependencies.@a/b: invalid version range (use 1.2.3, ^1.2.3, ~1.2.3 or *)"],
    ),
    (
        "dependency range",
        manifest_dict(dependencies={"@a/b": ">=1"}),
        ["dependencies.@a/b: invalid version range (use 1.2.3, ^1.2.3, ~1.2.3 or *)"],
    ),
    (
        "dependency number",
        manifest_dict(dependencies={"@a/b": 1}),
        ["dependencies.@a/b: invalid version range (use 1.2.3, ^1.2.3, ~1.2.3 or *)"],
    ),
]


@pytest.mark.parametrize(
    ("raw", "expected"), [(raw, exp) for _, raw, exp in INVALID], ids=[i for i, _, _ in INVALID]
)
def test_invalid_manifest(raw: object, expected: list[str]) -> None:
    assert errors_of(raw) == expected


def test_agent_packages_may_have_no_tools() -> None:
    for tools in ([], DROP):
        m = Manifest.from_dict(manifest_dict(agent=AGENT, tools=tools))
        assert m.tools == () and m.agent == {
            "instructions": "Help people.",
            "skills": ["@splice/github"],
        }
        assert m.to_json()["tools"] == []


def test_valid_dependencies_are_kept_in_order() -> None:
    deps = {"@b/x": "^1.0.0", "@a/y": "~0.1.0", "@c/z": "*", "@d/w": "1.2.3"}
    assert list(
        Manifest.from_dict(manifest_dict(dependencies=deps)).to_json()["dependencies"].items()
    ) == list(deps.items())


def test_every_problem_at_once_in_field_order() -> None:
    raw = manifest_dict(
        name="Bad Name",
        version="1.0",
        extra=True,
        homepage=5,
        permissions={"network": ["HTTP://x"], "shell": 1},
        tools=[
            {
                "name": "Hello",
                "description": "",
                "entry": "../escape.ts",
                "input": {"type": "string"},
                "timeoutMs": 0,
            }
        ],
        **{"x-ok": 1, "another": 2},
    )
    assert errors_of(raw) == [
        "extra: unknown field",
        "another: unknown field",
        "name: may only contain lowercase letters, digits and dashes",
        'version: "1.0" is not a valid semantic version',
        'permissions: unknown permission "shell"',
        'permissions.network[0]: must be a lowercase hostname, optionally prefixed with *., or "*" for any public host',
        "tools[0].name: must start with a letter and contain only lowercase letters, digits and dashes",
        f"tools[0].description: {REQUIRED_STRING}",
        f"tools[0].entry: {ENTRY_RULE}",
        'tools[0].input.type: tool input must be "object"',
        "tools[0].timeoutMs: must be an integer between 1 and 60000",
        "homepage: must be a string of at most 500 characters",
    ]


def test_errors_of_several_tools_are_grouped_by_tool() -> None:
    tools = [
        tool_dict(name="a", timeoutMs=0, extra=1),
        tool_dict(name="B"),
        tool_dict(name="a", entry="x.py"),
    ]
    assert errors_of(manifest_dict(tools=tools)) == [
        "tools[0].extra: unknown field",
        "tools[0].timeoutMs: must be an integer between 1 and 60000",
        "tools[1].name: must start with a letter and contain only lowercase letters, digits and dashes",
        'tools[2].name: duplicate tool name "a"',
        f"tools[2].entry: {ENTRY_RULE}",
    ]


# --- from_json -----------------------------------------------------------------------------


def test_from_json_text_and_bytes() -> None:
    text = json.dumps(manifest_dict())
    assert (
        Manifest.from_json(text)
        == Manifest.from_json(text.encode())
        == Manifest.from_dict(manifest_dict())
    )


def test_byte_order_mark_is_accepted() -> None:
    text = json.dumps(manifest_dict())
    assert Manifest.from_json("\ufeff" + text).id == "@splice/example"
    assert Manifest.from_json(b"\xef\xbb\xbf" + text.encode()).id == "@splice/example"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "{'a': 1}",
        '{"specVersion": 1,}',
        '{"specVersion": NaN}',
        '{"a": Infinity}',
    ],
)
def test_invalid_json(text: str) -> None:
    with pytest.raises(SpecError) as info:
        Manifest.from_json(text)
    assert info.value.code is ErrorCode.INVALID_MANIFEST
    (detail,) = info.value.details
    assert detail.startswith("manifest.json is not valid JSON: ")


def test_invalid_utf8() -> None:
    with pytest.raises(SpecError) as info:
        Manifest.from_json(b'{"name": "\xff"}')
    assert info.value.details == ("manifest.json is not valid UTF-8",)


def test_deeply_nested_defaults_are_parsed_and_copied_without_recursion() -> None:
    """JSON.parse has no depth limit, so a 100,000-level ``default`` is valid (as in TS)."""
    depth = 100_000
    text = json.dumps(with_tool(input={"type": "object", "default": "DEEP"}))
    m = Manifest.from_json(text.replace('"DEEP"', "[" * depth + "]" * depth))
    value = m.to_json()["tools"][0]["input"]["default"]
    assert nesting_depth(value, depth + 1) == depth


def test_a_top_level_value_nested_100000_levels_is_not_an_object() -> None:
    with pytest.raises(SpecError) as info:
        Manifest.from_json("[" * 100_000 + "]" * 100_000)
    assert info.value.details == ("manifest: must be a JSON object",)


def test_schema_file_is_a_valid_json_schema() -> None:
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(load_schema("manifest.schema.json"))


def test_schema_problems_are_bounded_for_the_whole_manifest() -> None:
    """A long property name over thousands of bad subschemas: each problem copied the name
    into its path (5,000 of them under a 1 MB name took `splice validate` 207 s and 19 GB).
    Now at most 100 schema problems are listed in all, paths cut at 1,000 characters, and a
    schema past the budget still says it is invalid."""
    name = "A" * 10_000
    bad = {"type": "object", "properties": {name: {"properties": {f"p{i}": 0 for i in range(300)}}}}
    tools = [tool_dict(name=f"t{i}", input=bad) for i in range(3)]
    with pytest.raises(SpecError) as caught:
        Manifest.from_dict(manifest_dict(tools=tools))
    assert caught.value.code == ErrorCode.INVALID_MANIFEST
    details = list(caught.value.details)
    paths = [f"tools[0].input.properties.{name}.properties.p{i}" for i in (0, 1)]
    assert details[:2] == [f"{path[:500]}…{path[-500:]}: must be an object" for path in paths]
    assert len(details) == 103
    assert details[100:] == [
        "tools[0].input: further problems are not listed",
        "tools[1].input: further problems are not listed",
        "tools[2].input: further problems are not listed",
    ]
    assert max(map(len, details)) < 1100


def test_integers_beyond_a_double_are_not_finite_in_tool_schemas() -> None:
    """``1`` and 400 zeros is Infinity to JavaScript: a bound of that size is refused like
    ``1e400`` (``minimum`` crashed `splice validate` with OverflowError; ``maxLength`` was
    accepted, though TS refuses it and canonical JSON writes it as null)."""
    huge = "1" + "0" * 400
    bounds = {"minimum": 111, "maximum": 222, "maxLength": 333, "minItems": 444}
    tool = tool_dict(input={"type": "object", "properties": {"a": bounds}})
    text = json.dumps(manifest_dict(tools=[tool]))
    for number, literal in (("111", huge), ("222", "-" + huge), ("333", huge), ("444", huge)):
        text = text.replace(f": {number}", f": {literal}")
    with pytest.raises(SpecError) as caught:
        Manifest.from_json(text)
    assert caught.value.code == ErrorCode.INVALID_MANIFEST
    where = "tools[0].input.properties.a"
    assert list(caught.value.details) == [
        f"{where}.maxLength: must be a non-negative integer",
        f"{where}.minItems: must be a non-negative integer",
        f"{where}.minimum: must be a finite number",
        f"{where}.maximum: must be a finite number",
    ]


def test_only_a_manifest_parsed_from_text_keeps_its_schemas_uncopied() -> None:
    """A caller's dict stays the caller's (``from_dict`` copies the schemas), ``to_json`` gives
    copies to change; a publish encodes the manifest's own (``to_json(shared=True)``)."""
    raw = manifest_dict()
    manifest = Manifest.from_dict(raw)
    raw["tools"][0]["input"]["properties"] = {}
    assert manifest.tools[0].input["properties"] != {}
    normalized = manifest.to_json()
    normalized["tools"][0]["input"]["properties"] = {}
    assert manifest.tools[0].input["properties"] != {}
    shared = Manifest.from_json(json.dumps(manifest_dict())).to_json(shared=True)
    assert shared == Manifest.from_dict(manifest_dict()).to_json()
