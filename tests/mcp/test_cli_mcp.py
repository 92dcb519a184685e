"""`splice mcp` command-line checks (the real console script)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testing.cli import run_splice
from testing.mcp_clients import DEMO_TOKEN


@pytest.mark.parametrize(
    "args", [["--host", "0.0.0.0"], ["--port", "9000"], ["--http", "--port", "70000"]]
)
def test_host_and_port_need_http(tmp_path: Path, args: list[str]) -> None:
    completed = run_splice("mcp", *args, cwd=tmp_path, env={"SPLICE_MCP_TOKEN": DEMO_TOKEN})
    assert completed.code == 2
    assert "error:" in completed.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--trusted-proxy", "127.0.0.1"], "--trusted-proxy needs --http"),
        (["--http", "--port", "0", "--trusted-proxy", "10.0.0.0/33"], "--trusted-proxy"),
    ],
)
def test_trusted_proxy_needs_http_and_an_address(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    completed = run_splice("mcp", *args, cwd=tmp_path, env={"SPLICE_MCP_TOKEN": DEMO_TOKEN})
    assert completed.code == 2
    assert expected in completed.stderr
    assert completed.stdout == ""


@pytest.mark.parametrize("token", [None, "", "short-token"])
def test_http_needs_a_long_token(tmp_path: Path, token: str | None) -> None:
    env = {} if token is None else {"SPLICE_MCP_TOKEN": token}
    completed = run_splice("mcp", "--http", "--port", "0", cwd=tmp_path, env=env)
    assert completed.code == 2
    assert "SPLICE_MCP_TOKEN" in completed.stderr
    assert completed.stdout == ""


def test_http_refuses_a_token_easy_to_guess_before_it_listens(tmp_path: Path) -> None:
    """24 times ``a`` was served (and guessed online at 680 tokens a second)."""
    env = {"SPLICE_MCP_TOKEN": "a" * 24}
    completed = run_splice(
        "mcp", "--http", "--port", "0", "--json", cwd=tmp_path, env=env, timeout=30
    )
    assert completed.code == 2
    error = json.loads(completed.stdout)["error"]
    assert error["code"] == "USAGE"
    assert error["message"].startswith("SPLICE_MCP_TOKEN is too easy to guess: 4 bits")
    assert "secrets.token_urlsafe(32)" in error["hint"]
    assert "a" * 24 not in completed.stdout + completed.stderr


def test_http_refuses_a_token_no_client_can_send(tmp_path: Path) -> None:
    env = {"SPLICE_MCP_TOKEN": "é" * 24}
    completed = run_splice("mcp", "--http", "--port", "0", cwd=tmp_path, env=env)
    assert completed.code == 2
    assert "SPLICE_MCP_TOKEN must hold only visible ASCII characters" in completed.stderr
    assert completed.stdout == ""


def test_outside_a_project(tmp_path: Path) -> None:
    completed = run_splice("mcp", cwd=tmp_path)
    assert completed.code == 1
    assert "splice.json" in completed.stderr


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--max-calls", "0"], {}, "--max-calls"),
        ([], {"SPLICE_MCP_MAX_CALLS": "many"}, "SPLICE_MCP_MAX_CALLS"),
        ([], {"SPLICE_MCP_MAX_CALLS": "0"}, "SPLICE_MCP_MAX_CALLS"),
        ([], {"SPLICE_MCP_MAX_CALLS": "\u00b2"}, "SPLICE_MCP_MAX_CALLS"),
    ],
)
def test_max_calls_must_be_positive(
    tmp_path: Path, args: list[str], env: dict[str, str], named: str
) -> None:
    completed = run_splice("mcp", *args, cwd=tmp_path, env=env)
    assert completed.code == 2
    assert named in completed.stderr


def test_max_calls_from_the_environment_is_ascii_digits_or_usage(tmp_path: Path) -> None:
    """``str.isdigit()`` took "²" and 5,000 digits, which ``int()`` refuses: an internal error
    (exit 1) in ``splice mcp``, and a 500 on every ``/mcp`` request of a registry server,
    which now refuses the setting when its app is made."""
    from splice_build.errors import ErrorCode, SpliceError
    from splice_build.mcp.admission import MAX_CALLS_ENV, default_max_calls
    from splice_build.registry.http.app import create_app
    from splice_build.registry.storage import open_service

    assert default_max_calls({MAX_CALLS_ENV: "12"}) == 12
    for raw in ["\u00b2", "1" * 5000, "1" * 10, "\u0661", " 4", "+4", "4\n", "0", "-1"]:
        with pytest.raises(SpliceError) as caught:
            default_max_calls({MAX_CALLS_ENV: raw})
        assert caught.value.code == ErrorCode.USAGE, raw
    service = open_service(tmp_path / "registry")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(MAX_CALLS_ENV, "\u00b2")
        with pytest.raises(SpliceError) as caught:
            create_app(service)
    assert caught.value.code == ErrorCode.USAGE


def test_a_bad_server_variable_is_hinted_what_to_do_not_the_help(tmp_path: Path) -> None:
    """A bad SPLICE_MCP_STOP_GRACE or SPLICE_MCP_MAX_CALLS was hinted "run `splice mcp
    --help`" (or `splice registry --help`), a help that never names the variable: the hint
    now says what unsetting it gives, and where the page is."""
    assert run_splice("init", cwd=tmp_path).code == 0
    for argv, env, hint in (
        (
            ["mcp"],
            {"SPLICE_MCP_STOP_GRACE": "-1"},
            "Unset SPLICE_MCP_STOP_GRACE for the default of 5 s (docs/mcp.md#stopping).",
        ),
        (
            ["registry", "serve", "--port", "0", "--data", str(tmp_path / "data")],
            {"SPLICE_MCP_MAX_CALLS": "0"},
            "Unset SPLICE_MCP_MAX_CALLS to run as many calls at once as there are cores "
            "(docs/mcp.md#admission-control).",
        ),
    ):
        done = run_splice("--json", *argv, cwd=tmp_path, env=env)
        assert done.code == 2, (argv, done.stderr)
        assert done.json()["error"]["hint"] == hint, argv


def test_a_broken_lock_is_answered_with_its_code_not_as_an_internal_error(
    tmp_path: Path,
) -> None:
    """A checkout whose splice.lock is not JSON: listing answers -32603 with the refusal's
    ``CODE: message`` and code (docs/mcp.md#what-is-served), the path of the project unsaid."""
    assert run_splice("init", cwd=tmp_path).code == 0
    (tmp_path / "splice.lock").write_text('{"lockfileVersion": 1', encoding="utf-8")
    methods = ("tools/list", "resources/list", "resources/read")
    requests = [
        json.dumps({"jsonrpc": "2.0", "id": index, "method": method, "params": {"uri": "x"}})
        for index, method in enumerate(methods)
    ]
    completed = run_splice("mcp", cwd=tmp_path, input="\n".join(requests) + "\n")
    assert completed.code == 0, completed.stderr
    answers = sorted(
        (json.loads(line) for line in completed.stdout.splitlines()), key=lambda a: a["id"]
    )
    assert [answer["id"] for answer in answers] == [0, 1, 2]
    for answer in answers:
        error = answer["error"]
        assert error["code"] == -32603
        assert error["message"].startswith("INVALID_PROJECT: splice.lock is invalid")
        assert error["data"] == {"io.spliceloom/error": {"code": "INVALID_PROJECT"}}
        assert str(tmp_path) not in error["message"]
    assert "internal error" not in completed.stderr


@pytest.mark.parametrize(
    ("project", "first"),
    [
        # "resue": true served one fresh process per call and said nothing
        (
            '{"specVersion": 1, "packages": {}, "resue": true}',
            'warning: splice.json: unknown key "resue" (did you mean "reuse"?): kept as written, '
            "not read by this version",
        ),
        # a client configured on the wrong (empty) project showed no tool, and the log only
        # "serving … over stdio"
        (
            '{"specVersion": 1, "packages": {}}',
            "[splice mcp] no package in this project's splice.json, so no tool: "
            "`splice add <pkg>` adds one",
        ),
    ],
    ids=["misspelt key", "no package"],
)
def test_what_the_project_does_not_serve_is_said_at_the_start(
    tmp_path: Path, project: str, first: str
) -> None:
    (tmp_path / "splice.json").write_text(project)
    completed = run_splice("mcp", cwd=tmp_path, input="")
    assert completed.code == 0, completed.stderr
    assert completed.stderr.splitlines()[0] == first
