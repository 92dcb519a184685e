"""The execute pipeline: result shape, limits before spawn, context, env, files, logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SandboxError
from splice_build.runtime import SpliceRuntime
from splice_build.skills import skills_root
from testing.hostile_packages import write_package

pytestmark = pytest.mark.node

EXAMPLE = skills_root() / "example"


@pytest.fixture
def runtime(make_runtime) -> SpliceRuntime:
    return make_runtime()


def test_example_hello_envelope(runtime: SpliceRuntime) -> None:
    result = runtime.execute(runtime.load(EXAMPLE), "hello", {"name": " Dim ", "excited": True})
    data = result.to_json()
    assert list(data) == ["ok", "package", "tool", "output", "logs", "durationMs", "isolation"]
    assert data["ok"] is True
    assert data["package"] == "@splice/example"
    assert data["output"] == {"message": "Hello, Dim!"}
    assert data["logs"] == ""
    assert isinstance(data["durationMs"], int)


@pytest.mark.parametrize("example", sorted(p.name for p in (EXAMPLE / "examples").glob("*.json")))
def test_example_files_match(runtime: SpliceRuntime, example: str) -> None:
    spec = json.loads((EXAMPLE / "examples" / example).read_text())
    result = runtime.execute(runtime.load(EXAMPLE), spec["tool"], spec["input"])
    assert result.ok and result.output == spec["output"], result.to_json()


def test_list_tools(runtime: SpliceRuntime) -> None:
    tools = runtime.list_tools(runtime.load(EXAMPLE))
    assert [t["name"] for t in tools] == ["hello", "stats"]
    assert tools[0]["input"]["required"] == ["name"] and "output" in tools[0]


def test_failure_envelope_has_no_output_and_details_only_when_present(runtime) -> None:
    data = runtime.execute(runtime.load(EXAMPLE), "hello", {"name": 5}).to_json()
    assert list(data) == ["ok", "package", "tool", "error", "logs", "durationMs"]
    assert data["error"] == {
        "code": "INVALID_INPUT",
        "message": "Invalid input for @splice/example.hello",
        "details": ["input.name: expected string, got number"],
    }
    missing = runtime.execute(runtime.load(EXAMPLE), "nope", {}).to_json()
    assert missing["error"] == {
        "code": "TOOL_NOT_FOUND",
        "message": 'Tool "nope" not found in @splice/example. Available: hello, stats',
    }
    # a mistyped one is named, as a mistyped package is (there was no hint)
    mistyped = runtime.execute(runtime.load(EXAMPLE), "helo", {}).to_json()
    assert mistyped["error"]["hint"] == "Did you mean @splice/example.hello?"


@pytest.mark.parametrize(
    ("value", "code"),
    [
        (json.loads("[" * 300 + "]" * 300), ErrorCode.INPUT_TOO_LARGE),
        ({"a": "x" * (4 * 1024 * 1024)}, ErrorCode.INPUT_TOO_LARGE),
        ({"a": float("nan")}, ErrorCode.INVALID_INPUT),
        ({"a": object()}, ErrorCode.INVALID_INPUT),
        # JSON.parse reads it as Infinity (integers of 310 digits and more)
        ({"a": 10**400}, ErrorCode.INVALID_INPUT),
    ],
    ids=["depth", "bytes", "nan", "object", "beyond-double"],
)
def test_input_limits_stop_before_any_process(run_tool, project: Path, value, code) -> None:
    # The tool would leave a marker if it ever ran.
    body = "import fs from 'node:fs'; export default (i, ctx) => fs.writeFileSync(ctx.paths.project + '/out/ran', '1');"
    result = run_tool(body, input={"v": value}, permissions={"fs": {"read": [], "write": ["out"]}})
    assert result.error is not None and result.error.code == code
    assert not (project / "out" / "ran").exists()


def test_runtime_unsupported(run_tool) -> None:
    result = run_tool(
        "export default () => 1;", runtime={"type": "node", "minNodeVersion": "99.0.0"}
    )
    assert result.error is not None and result.error.code == ErrorCode.RUNTIME_UNSUPPORTED


def test_context_is_frozen_and_complete(run_tool, project: Path, tmp_path: Path) -> None:
    body = (
        "export default (input, ctx) => ({ frozen: Object.isFrozen(ctx) && Object.isFrozen(ctx.paths)"
        " && Object.isFrozen(ctx.permissions), keys: Object.keys(ctx).sort(), pkg: ctx.package,"
        " tool: ctx.tool, paths: ctx.paths, perms: ctx.permissions, input });"
    )
    result = run_tool(body, input={"x": 1})
    assert result.ok, result.to_json()
    out = result.output
    assert out["frozen"] is True
    assert out["keys"] == ["capability", "log", "package", "paths", "permissions", "tool"]
    assert out["pkg"] == {"id": "@test/p0", "version": "1.0.0"}
    assert out["tool"] == "t"
    assert out["paths"]["project"] == str(project.resolve())
    assert out["paths"]["package"] == str((tmp_path / "packages" / "p0").resolve())
    assert out["perms"] == {"fs": {"read": [], "write": []}, "network": [], "env": []}
    assert out["input"] == {"x": 1}


def test_environment_is_empty_but_declared(run_tool) -> None:
    body = "export default () => ({ ...process.env });"
    env = {"TOOL_TEST_VALUE": "declared-value", "OTHER_SECRET_VAR": "nope", "PATH": "/usr/bin"}
    result = run_tool(body, env=env, permissions={"env": ["TOOL_TEST_VALUE", "NOT_SET"]})
    assert result.ok and result.output == {"TOOL_TEST_VALUE": "declared-value"}
    plain = run_tool(body, env=env)
    assert plain.ok and plain.output == {}


def test_declared_node_options_never_reach_node(run_tool) -> None:
    result = run_tool(
        "export default () => process.env.NODE_OPTIONS;",
        env={"NODE_OPTIONS": "--require=/nonexistent/preload.js"},
        permissions={"env": ["NODE_OPTIONS"]},
    )
    assert result.ok, result.to_json()
    assert result.output == "--require=/nonexistent/preload.js"


def test_declared_read_and_write_paths(run_tool, project: Path) -> None:
    (project / "data").mkdir()
    (project / "data" / "in.txt").write_text("hello")
    (project / "secret.txt").write_text("no")
    body = (
        "import fs from 'node:fs'; export default (i, ctx) => {"
        " const text = fs.readFileSync(ctx.paths.project + '/data/in.txt', 'utf8');"
        " fs.writeFileSync(ctx.paths.project + '/out/copy.txt', text.toUpperCase());"
        " let secret = 'denied'; try { fs.readFileSync(ctx.paths.project + '/secret.txt'); secret = 'read'; } catch (e) { secret = e.code; }"
        " return { text, secret }; };"
    )
    result = run_tool(body, permissions={"fs": {"read": ["data"], "write": ["out"]}})
    assert result.ok, result.to_json()
    assert result.output == {"text": "hello", "secret": "ERR_ACCESS_DENIED"}
    assert (project / "out" / "copy.txt").read_text() == "HELLO"


@pytest.mark.parametrize(
    ("entry", "body"),
    [
        (
            "tools/t.ts",
            "type In = { n: number }; export default (input: In): number => input.n * 2;",
        ),
        (
            "tools/t.mts",
            "export default function t(input: { n: number }): number { return input.n * 2; }",
        ),
        ("tools/t.js", "export default (input) => input.n * 2;"),
    ],
)
def test_module_kinds(run_tool, entry: str, body: str) -> None:
    result = run_tool(body, input={"n": 21}, entry=entry)
    assert result.ok and result.output == 42, result.to_json()


def test_relative_imports_inside_the_package(run_tool) -> None:
    result = run_tool(
        "import { twice } from '../lib/util.mjs'; export default () => twice(4);",
        extra_files={"lib/util.mjs": "export const twice = (n) => n * 2;\n"},
    )
    assert result.ok and result.output == 8


def test_logs_are_separate_from_output(run_tool) -> None:
    body = (
        "export default (i, ctx) => { console.log('to log'); console.error('err line');"
        " ctx.log('ctx', 1); process.stdout.write('raw\\n'); return { undefinedBecomesNull: undefined }; };"
    )
    result = run_tool(body)
    assert result.ok
    assert result.output == {}
    assert result.logs == "to log\nerr line\nctx 1\nraw"


def test_undefined_output_is_null(run_tool) -> None:
    result = run_tool("export default () => undefined;")
    assert result.ok and result.output is None


def test_thrown_error_message(run_tool) -> None:
    result = run_tool("export default () => { throw new Error('INVALID_URL: nope'); };")
    assert result.to_json()["error"] == {
        "code": "TOOL_ERROR",
        "message": "INVALID_URL: nope",
        "skillCode": "INVALID_URL",
    }


def test_output_schema_mismatch(run_tool) -> None:
    result = run_tool(
        "export default () => ({ n: 'x' });",
        output_schema={"type": "object", "properties": {"n": {"type": "number"}}},
    )
    assert result.to_json()["error"] == {
        "code": "INVALID_OUTPUT",
        "message": "Invalid output from @test/p0.t",
        "details": ["output.n: expected number, got string"],
    }


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing_dir", "Package directory not found"),
        ("no_manifest", "manifest.json is missing"),
        ("no_skill_md", "SKILL.md is missing"),
        ("entry_symlink_out", "Invalid package"),
        ("missing_entry", "Invalid package"),
    ],
)
def test_loader_rejects(tmp_path: Path, runtime: SpliceRuntime, setup: str, message: str) -> None:
    pkg = write_package(tmp_path, "export default () => 1;")
    if setup == "missing_dir":
        pkg = tmp_path / "nothing"
    elif setup == "no_manifest":
        (pkg / "manifest.json").unlink()
    elif setup == "no_skill_md":
        (pkg / "SKILL.md").unlink()
    elif setup == "entry_symlink_out":
        outside = tmp_path / "outside.mjs"
        outside.write_text("export default () => 1;")
        (pkg / "tools" / "t.mjs").unlink()
        (pkg / "tools" / "t.mjs").symlink_to(outside)
    elif setup == "missing_entry":
        (pkg / "tools" / "t.mjs").unlink()
    with pytest.raises(SandboxError) as info:
        runtime.load(pkg)
    assert info.value.code == ErrorCode.INVALID_PACKAGE
    assert info.value.message == message
    if setup == "entry_symlink_out":
        assert info.value.details == (
            "tools/t.mjs: a package holds only directories and regular files (at most 500), "
            "no symbolic link or special file",
        )


def _place(kind: str, at: Path, outside: Path, inside: Path) -> None:
    """One entry a packed package cannot hold, at ``at`` (``outside``: a secret file,
    ``inside``: a file of the package)."""
    import os

    if kind == "link to a file outside":
        at.symlink_to(outside)
    elif kind == "link to a directory outside":
        at.symlink_to(outside.parent, target_is_directory=True)
    elif kind == "link inside the package":
        at.symlink_to(os.path.relpath(inside, at.parent))
    elif kind == "dangling link":
        at.symlink_to(outside.parent / "nothing")
    elif kind == "fifo":
        os.mkfifo(at)
    else:
        raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind",
    [
        "link to a file outside",
        "link to a directory outside",
        "link inside the package",
        "dangling link",
        "fifo",
    ],
)
@pytest.mark.parametrize("where", ["data/entry", "entry", ".hidden", "node_modules/x/entry"])
def test_a_package_directory_holds_only_what_a_packed_one_can(
    tmp_path: Path, runtime: SpliceRuntime, kind: str, where: str
) -> None:
    """``load`` (with and without a pool) refuses a tree with any entry a packed package
    could not hold, before a process could follow it: without a file view, a link to a
    file outside is read by the tool through the package's own read grant."""
    pkg = write_package(tmp_path, "export default () => 1;")
    secret = tmp_path / "outside" / ".env"
    secret.parent.mkdir()
    secret.write_text("SECRET=1\n")
    at = pkg / where
    at.parent.mkdir(parents=True, exist_ok=True)
    _place(kind, at, secret, pkg / "SKILL.md")
    with pytest.raises(SandboxError) as info:
        runtime.load(pkg)
    assert info.value.code == ErrorCode.INVALID_PACKAGE
    assert any(detail.startswith(f"{where}: ") for detail in info.value.details), info.value


def test_hostile_schema_problems_are_bounded(run_tool, project: Path) -> None:
    """A manifest's enum of 5,000 options against 300 items of the caller, then of the tool:
    at most 100 messages (each listing at most 1,000 characters of options) and one line
    that says the rest is not listed (each message listed every option, 300 times)."""
    many = {"type": "array", "items": {"enum": [0] * 5000}}
    schema = {"type": "object", "properties": {"xs": many}}
    body = (
        "import fs from 'node:fs';"
        "export default (i, ctx) => { fs.writeFileSync(ctx.paths.project + '/out/ran', '1');"
        " return { xs: Array(300).fill(1) }; };"
    )
    options = {"permissions": {"fs": {"read": [], "write": ["out"]}}, "input_schema": schema}
    refused = run_tool(body, input={"xs": [1] * 300}, **options)
    assert refused.error is not None and refused.error.code == ErrorCode.INVALID_INPUT
    assert len(refused.error.details) == 101 and not (project / "out" / "ran").exists()
    assert refused.error.details[100] == "input: more than 100 problems; the rest are not listed"
    output = run_tool(body, input={"xs": []}, output_schema=schema, **options)
    assert output.error is not None and output.error.code == ErrorCode.INVALID_OUTPUT
    assert len(output.error.details) == 101
    assert max(map(len, output.error.details)) < 1100


def test_input_is_checked_as_the_tool_receives_it(run_tool, project: Path) -> None:
    """A Python key ``1`` (or ``None``) is the JSON key ``"1"`` (``"null"``): the last of two
    wins in the tool's ``JSON.parse``, so the check must read the JSON, not the dict (the
    tool received an object where the schema allows a string of at most 3 characters)."""
    text = {"type": "string", "maxLength": 3}
    schema = {"type": "object", "properties": {"1": text, "null": text}}
    body = (
        "import fs from 'node:fs';"
        "export default (i, ctx) => { fs.writeFileSync(ctx.paths.project + '/out/ran', '1');"
        " return i; };"
    )
    options = {"permissions": {"fs": {"read": [], "write": ["out"]}}, "input_schema": schema}
    refused = run_tool(body, input={"1": "ok", 1: {"x": 1}, "null": "ok", None: 1}, **options)
    assert refused.error is not None and refused.error.code == ErrorCode.INVALID_INPUT
    assert refused.error.details == (
        "input.1: expected string, got object",
        "input.null: expected string, got number",
    )
    assert not (project / "out" / "ran").exists()
    sent = run_tool(body, input={"1": "ok", "t": (1, 2)}, **options)
    assert sent.ok and sent.output == {"1": "ok", "t": [1, 2]}, sent.to_json()
