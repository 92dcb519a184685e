"""A skill's own refusal code as a structured field: ``error.skillCode`` next to ``TOOL_ERROR``.

The tool signals it the way the official skills always have, ``throw new Error("CODE: …")``;
the parent reads it from the sanitized message. Walked here: every character in every position
of the code, the length bounds, what redaction and path replacement do to a prefix, hostile
tools in the real sandbox, and the two places a client sees it (``splice run --json`` and the
MCP result's ``_meta["io.spliceloom/error"]``).
"""

from __future__ import annotations

import json
import os
import string
from pathlib import Path

import anyio
import pytest

from splice_build.errors import ErrorCode
from splice_build.mcp.mapping import error_meta
from splice_build.runtime.result import ToolError, is_skill_code, skill_code_of
from splice_build.skills import skills_root
from testing.cli import run_splice
from testing.hostile_packages import write_package
from testing.mcp_clients import child_env, installed_project, sdk_stdio, splice_argv

FIRST = set(string.ascii_uppercase)
REST = FIRST | set(string.digits) | {"_"}


@pytest.mark.parametrize("position", ["first", "middle", "last"])
def test_every_character_in_every_position(position: str) -> None:
    """All 256 Latin-1 characters (and a few beyond) at each place of a 3-letter code."""
    allowed = FIRST if position == "first" else REST
    for point in [*range(256), 0x130, 0x212A, 0xFF21]:
        char = chr(point)
        code = {"first": char + "BC", "middle": "A" + char + "C", "last": "AB" + char}[position]
        expected = code if char in allowed else None
        assert skill_code_of(f"{code}: message") == expected, (position, point)


def test_length_bounds() -> None:
    assert skill_code_of("A: x") is None  # one character is not a code
    assert skill_code_of("AB: x") == "AB"
    assert skill_code_of("A" * 64 + ": x") == "A" * 64
    assert skill_code_of("A" * 65 + ": x") is None
    assert skill_code_of("A" * 100_000 + ": x") is None


@pytest.mark.parametrize(
    "message",
    [
        "HARD_LINK:x",  # no space after the colon
        "HARD_LINK :x",
        " HARD_LINK: x",
        "HARD_LINK",
        "HARD_LINK - x",
        "hard_link: x",
        "Hard_Link: x",
        "[REDACTED]: x",
        "<package>: x",
        "TypeError: x is not a function",
        "_HARD: x",
        "9LIVES: x",
        "",
    ],
)
def test_not_a_code(message: str) -> None:
    assert skill_code_of(message) is None


def test_only_a_tool_error_has_a_skill_code() -> None:
    for code in ErrorCode:
        error = ToolError(code, "PATH_OUTSIDE_SANDBOX: ../x is outside workspace/")
        expected = "PATH_OUTSIDE_SANDBOX" if code == ErrorCode.TOOL_ERROR else None
        assert error.skill_code == expected, code
        assert error.to_json().get("skillCode") == expected, code
    assert ToolError(ErrorCode.TOOL_ERROR, "m", ("d",)).to_json() == {
        "code": "TOOL_ERROR",
        "message": "m",
        "details": ["d"],
    }


# --- hostile tools in the real sandbox ------------------------------------------------------

SECRET = "SECRETVALUE_XY"  # a declared variable's value that looks like a code


@pytest.mark.node
@pytest.mark.parametrize(
    ("body", "code", "skill"),
    [
        ("throw new Error('ALREADY_EXISTS: a.txt exists');", "TOOL_ERROR", "ALREADY_EXISTS"),
        ("throw 'HARD_LINK: thrown as a string';", "TOOL_ERROR", "HARD_LINK"),
        ("throw { message: 'NOT_FOUND: a plain object' };", "TOOL_ERROR", "NOT_FOUND"),
        (
            "await Promise.reject(new Error('RATE_LIMITED: async'));",
            "TOOL_ERROR",
            "RATE_LIMITED",
        ),
        (
            "setTimeout(() => { throw new Error('LATE_FAILURE: after return'); }, 0);"
            " await new Promise(() => {});",
            "TOOL_ERROR",
            "LATE_FAILURE",
        ),
        # The error's own ``code`` property is not the signal: only the message prefix counts.
        ("const e = new Error('plain'); e.code = 'HARD_LINK'; throw e;", "TOOL_ERROR", None),
        ("throw new Error('lower_case: x');", "TOOL_ERROR", None),
        ("throw new Error('X'.repeat(65) + ': too long');", "TOOL_ERROR", None),
        # A prefix the sanitizer changes is not reported: a declared secret, an absolute path.
        ("throw new Error(process.env.LOOKS_LIKE_A_CODE + ': x');", "TOOL_ERROR", None),
        ("throw new Error(ctx.paths.package + ': x');", "TOOL_ERROR", None),
        # The runtime's own verdicts never carry one, whatever the message says.
        ("await fetch('https://evil.example/');", "PERMISSION_DENIED", None),
        (
            "throw Object.assign(new Error('PATH_OUTSIDE_SANDBOX: x'), { code: 'ERR_ACCESS_DENIED' });",
            "PERMISSION_DENIED",
            None,
        ),
    ],
)
def test_hostile_tools(run_tool, body: str, code: str, skill: str | None) -> None:
    result = run_tool(
        f"export default async (input, ctx) => {{ {body} }};",
        env={"LOOKS_LIKE_A_CODE": SECRET},
        permissions={"env": ["LOOKS_LIKE_A_CODE"]},
    )
    error = result.to_json()["error"]
    assert error["code"] == code, error
    assert error.get("skillCode") == skill, error
    assert SECRET not in str(error)
    if skill is not None:
        assert error["message"].startswith(f"{skill}: ")


# --- where clients see it -------------------------------------------------------------------


@pytest.mark.node
def test_splice_run_json_carries_the_skill_code(tmp_path: Path) -> None:
    json_skill = str(skills_root() / "json")
    done = run_splice("--json", "run", "--dir", json_skill, "json.parse", "text={", cwd=tmp_path)
    assert done.code == 1, done.stderr
    error = done.json()["error"]
    assert (error["code"], error["skillCode"]) == ("TOOL_ERROR", "INVALID_JSON")
    assert error["message"].startswith("INVALID_JSON: ")


@pytest.mark.node
def test_mcp_result_meta_carries_the_skill_code(tmp_path: Path) -> None:
    project, env = installed_project(tmp_path)

    async def scenario() -> None:
        async with sdk_stdio(splice_argv("mcp"), env=env, cwd=project) as session:
            refused = await session.call_tool("splice_json_parse", {"text": "{"})
            assert refused.is_error is True
            assert refused.content[0].text.startswith("TOOL_ERROR: INVALID_JSON: ")
            assert refused.meta["io.spliceloom/error"] == {
                "code": "TOOL_ERROR",
                "skillCode": "INVALID_JSON",
            }
            invalid = await session.call_tool("splice_json_parse", {"text": 5})
            assert invalid.is_error is True
            assert invalid.meta["io.spliceloom/error"] == {"code": "INVALID_INPUT"}
            fine = await session.call_tool("splice_json_parse", {"text": "[1]"})
            assert fine.is_error is False
            assert "io.spliceloom/error" not in (fine.meta or {})

    anyio.run(scenario)


# --- @splice/files refusing, as each client sees it -----------------------------------------

# (tool, input, the files skill's own code): a path that leaves workspace/, a hard link to a
# file outside it, and a create over an existing file.
FILES_REFUSALS = [
    ("read", {"path": "../splice.json"}, "PATH_OUTSIDE_SANDBOX"),
    ("read", {"path": "alias.txt"}, "HARD_LINK"),
    ("write", {"path": "taken.txt", "content": "x"}, "ALREADY_EXISTS"),
]


@pytest.fixture(scope="module")
def files_project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A project with @splice/files added from the embedded registry, and a workspace holding
    a hard link to a file outside it and a file a ``create`` would overwrite."""
    base = tmp_path_factory.mktemp("files-skill-code")
    home = base / "home"
    env = {"HOME": str(home), "SPLICE_HOME": str(home / ".splice")}
    project = base / "project"
    project.mkdir()
    for args in (("init",), ("add", "@splice/files", "--accept-permissions")):
        done = run_splice(*args, cwd=project, env=env, timeout=300)
        assert done.code == 0, done.stderr
    workspace = project / "workspace"
    workspace.mkdir(exist_ok=True)
    outside = base / "outside.txt"
    outside.write_text("not for the tool\n", encoding="utf-8")
    os.link(outside, workspace / "alias.txt")
    (workspace / "taken.txt").write_text("keep me\n", encoding="utf-8")
    return project, child_env(env)


def _assert_refused(error: dict[str, object], skill: str) -> None:
    assert error["code"] == "TOOL_ERROR", error
    assert error["skillCode"] == skill, error
    assert str(error["message"]).startswith(f"{skill}: "), error


@pytest.mark.node
def test_files_skill_codes_in_splice_run_json(files_project: tuple[Path, dict[str, str]]) -> None:
    project, env = files_project
    for tool, tool_input, skill in FILES_REFUSALS:
        done = run_splice(
            "--json",
            "run",
            f"files.{tool}",
            "--input",
            json.dumps(tool_input),
            cwd=project,
            env=env,
        )
        assert done.code == 1, (tool, done.stdout, done.stderr)
        _assert_refused(done.json()["error"], skill)
    assert (project / "workspace" / "taken.txt").read_text(encoding="utf-8") == "keep me\n"


@pytest.mark.node
def test_files_skill_codes_in_the_sdk(files_project: tuple[Path, dict[str, str]]) -> None:
    from splice_build.sdk import Splice

    project, env = files_project
    with Splice(project, home=Path(env["SPLICE_HOME"]), broker=False) as splice:
        for tool, tool_input, skill in FILES_REFUSALS:
            result = splice.run(f"files.{tool}", tool_input)
            assert result.error is not None, result
            assert (result.error.code, result.error.skill_code) == (ErrorCode.TOOL_ERROR, skill)
            _assert_refused(result.to_json()["error"], skill)


@pytest.mark.node
def test_files_skill_codes_over_mcp(files_project: tuple[Path, dict[str, str]]) -> None:
    project, env = files_project

    async def scenario() -> None:
        async with sdk_stdio(splice_argv("mcp"), env=env, cwd=project) as session:
            for tool, tool_input, skill in FILES_REFUSALS:
                refused = await session.call_tool(f"splice_files_{tool}", tool_input)
                assert refused.is_error is True, refused
                assert refused.content[0].text.startswith(f"TOOL_ERROR: {skill}: "), refused
                assert refused.meta["io.spliceloom/error"] == {
                    "code": "TOOL_ERROR",
                    "skillCode": skill,
                }

    anyio.run(scenario)


# --- hostile codes: too long, control characters, not a string ------------------------------

HOSTILE_CODES = [
    # On the error's ``code`` property (never read: no skillCode, whatever its shape).
    "const e = new Error('plain'); e.code = 'A'.repeat(10240); throw e;",
    "const e = new Error('plain'); e.code = 'HARD\\u001b[2J_LINK\\u0000'; throw e;",
    "const e = new Error('plain'); e.code = { skillCode: 'X', nested: [1, 2] }; throw e;",
    "throw { message: 'plain', code: { toString() { return 'HARD_LINK'; } } };",
    # In the message prefix, the signal that is read.
    "throw new Error('A'.repeat(10240) + ': ten kilobytes of code');",
    "throw new Error('HARD\\u001b[31mLINK: an escape inside');",
    "throw new Error('HARD_LINK\\u0000: a NUL before the colon');",
    "throw new Error('\\u0007HARD_LINK: a bell first');",
    "throw new Error('HARD_LINK\\r\\nX-Injected: yes');",
    "throw { message: { code: 'HARD_LINK' } };",
]


@pytest.mark.node
@pytest.mark.parametrize("body", HOSTILE_CODES)
def test_a_hostile_code_gets_no_skill_code_and_a_proper_tool_error(run_tool, body: str) -> None:
    result = run_tool(f"export default async () => {{ {body} }};")
    error = result.to_json()["error"]
    assert error["code"] == "TOOL_ERROR", error
    assert "skillCode" not in error, error
    assert isinstance(error["message"], str) and error["message"], error
    assert set(error) == {"code", "message"}, error  # nothing the tool shaped is added


@pytest.mark.node
def test_a_hostile_code_through_splice_run_json(tmp_path: Path) -> None:
    """A prefix full of terminal escapes is no code: ``splice run --json`` reports a plain
    ``TOOL_ERROR`` (the message JSON-escaped, as every string) and no ``skillCode``."""
    body = "throw new Error('HARD\\u001b]0;pwned\\u0007\\u001b[2J_LINK: x');"
    package = write_package(tmp_path / "pkgs", f"export default async () => {{ {body} }};")
    done = run_splice("--json", "run", "--dir", str(package), "hostile.t", cwd=tmp_path)
    assert done.code == 1, done.stderr
    assert "\x1b" not in done.stdout  # the JSON document escapes it
    error = done.json()["error"]
    assert set(error) == {"code", "message"} and error["code"] == "TOOL_ERROR", error
    assert error["message"].startswith("HARD\x1b]0;pwned"), error


@pytest.mark.parametrize(
    "value",
    [
        "A" * 10240,
        "HARD\x1b[2J_LINK",
        "HARD_LINK\n",
        "HARD_LINK\x00",
        "hard_link",
        "",
        {"code": "HARD_LINK"},
        ["HARD_LINK"],
        42,
        None,
    ],
)
def test_the_mcp_mapping_passes_on_only_an_allow_listed_skill_code(value: object) -> None:
    """The MCP layer re-checks the shape of what it is handed, so an error dict from any
    backend cannot put a structure, 10 KB or an escape sequence into ``_meta``."""
    meta = error_meta({"code": "TOOL_ERROR", "message": "m", "skillCode": value})
    assert meta == {"io.spliceloom/error": {"code": "TOOL_ERROR"}}
    assert not is_skill_code(value)


def test_the_mcp_mapping_passes_on_a_skill_code() -> None:
    meta = error_meta({"code": "TOOL_ERROR", "message": "m", "skillCode": "HARD_LINK"})
    assert meta == {"io.spliceloom/error": {"code": "TOOL_ERROR", "skillCode": "HARD_LINK"}}
    # Every code skill_code_of reads is one the mapping passes on, and the other way round.
    for message in ("AB: x", "A" * 64 + ": x", "PATH_OUTSIDE_SANDBOX: x", "ENOENT: x"):
        code = skill_code_of(message)
        assert code is not None and is_skill_code(code), message
    assert not is_skill_code("A") and not is_skill_code("A" * 65)
