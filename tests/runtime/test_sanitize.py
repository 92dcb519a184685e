"""Messages, details and logs leave the runtime with secrets redacted and absolute paths
replaced by <package>/<project> (docs/compatibility.md#runtime, docs/compatibility.md#redaction) — golden tests through real Node."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

pytestmark = pytest.mark.node

SECRET = "s3cr3t-value-of-the-declared-variable"
TOKEN = "ghp_" + "Z" * 36
OUT_WRITE = {"fs": {"read": [], "write": ["out"]}}  # a tool may write project/out


def test_error_message_golden(run_tool, project: Path) -> None:
    body = (
        "export default (i, ctx) => { throw new Error("
        "`read ${ctx.paths.package}/tools/t.mjs and ${ctx.paths.project}/data.txt "
        "(url ${new URL('file://' + ctx.paths.package + '/x.mjs').href}) "
        f"with {TOKEN} and ${{process.env.API_SECRET}}`); }};"
    )
    result = run_tool(body, env={"API_SECRET": SECRET}, permissions={"env": ["API_SECRET"]})
    assert result.to_json()["error"] == {
        "code": "TOOL_ERROR",
        "message": "read <package>/tools/t.mjs and <project>/data.txt (url <package>/x.mjs) "
        "with [REDACTED] and [REDACTED]",
    }


def test_logs_golden(run_tool) -> None:
    body = (
        "export default (i, ctx) => { console.log('pkg', ctx.paths.package);"
        " console.error('Authorization: Bearer abcdefghijkl');"
        " console.log(process.env.API_SECRET); return 1; };"
    )
    result = run_tool(body, env={"API_SECRET": SECRET}, permissions={"env": ["API_SECRET"]})
    assert result.ok
    assert result.logs == "pkg <package>\nAuthorization: [REDACTED]\n[REDACTED]"


def test_encoded_forms_of_a_declared_secret_are_redacted(run_tool) -> None:
    """A tool that builds a URL, logs a config or an auth header writes its secret encoded:
    percent-encoded, JSON-escaped, base64. Each form is redacted like the value itself."""
    secret = 'Qk9+zz/Pq1=x"Y \u00e4'
    body = (
        "export default () => { const s = process.env.API_SECRET;"
        " for (const b of [Buffer.from(s).toString('base64'), Buffer.from(s).toString('base64url')])"
        " console.log('auth ' + b);"
        " throw new Error(`GET https://api.example.com/v1?k=${encodeURIComponent(s)}"
        " (${encodeURI(s)}) failed; config ${JSON.stringify({ k: s })}`); };"
    )
    result = run_tool(body, env={"API_SECRET": secret}, permissions={"env": ["API_SECRET"]})
    assert result.to_json()["error"] == {
        "code": "TOOL_ERROR",
        "message": "GET https://api.example.com/v1?k=[REDACTED] ([REDACTED]) failed; "
        'config {"k":"[REDACTED]"}',
    }
    assert result.logs == "auth [REDACTED]\nauth [REDACTED]"


class _RefreshedEnvironment(Mapping[str, str]):
    """The environment of an application that refreshes API_SECRET while calls run: every
    read gives the next value."""

    def __init__(self) -> None:
        self._reads = itertools.count()

    def __getitem__(self, name: str) -> str:
        if name != "API_SECRET":
            raise KeyError(name)
        return f"{SECRET}-{next(self._reads):04d}"

    def __iter__(self) -> Iterator[str]:
        return iter(["API_SECRET"])

    def __len__(self) -> int:
        return 1


def test_the_values_redacted_are_the_values_the_tool_was_given(run_tool) -> None:
    """The environment is read once per call: the runtime redacted the values it read first
    and sent the tool values it read again later, so a value refreshed in between reached
    the logs and the message in clear."""
    body = (
        "export default () => { console.log(process.env.API_SECRET);"
        " throw new Error(`with ${process.env.API_SECRET}`); };"
    )
    result = run_tool(body, env=_RefreshedEnvironment(), permissions={"env": ["API_SECRET"]})
    assert result.error is not None and result.error.code == "TOOL_ERROR"
    assert result.error.message == "with [REDACTED]"
    assert result.logs == "[REDACTED]"


def test_load_failure_paths_are_replaced(run_tool) -> None:
    result = run_tool("import './missing.mjs'; export default () => 1;")
    assert result.error is not None and result.error.code == "TOOL_LOAD_FAILED"
    assert "<package>/tools/missing.mjs" in result.error.message
    assert "/packages/" not in result.error.message


def test_crafted_error_and_logs_are_redacted_in_linear_time(run_tool) -> None:
    """A tool's error made of a 100 KB run of one keyword (it cost a backtracking engine ~19 s
    after the deadline) and 64 KiB of crafted logs come back redacted, the secrets inside gone."""
    body = (
        "export default () => {"
        " console.log('eyJ-'.repeat(4000) + ' API_TOKEN=\"p@ss w\" ' + 'a.'.repeat(8000));"
        f" throw new Error('TOKEN'.repeat(20000) + ' {TOKEN} MY_SECRET=abc&def'); }};"
    )
    result = run_tool(body)
    assert result.error is not None and result.error.code == "TOOL_ERROR"
    assert result.error.message == "TOKEN" * 20000 + " [REDACTED] MY_SECRET=[REDACTED]"
    assert result.logs == "eyJ-" * 4000 + ' API_TOKEN="[REDACTED]" ' + "a." * 8000


def test_a_timed_out_call_still_gets_its_logs_redacted(run_tool, project: Path) -> None:
    """Redaction counts against the call's deadline with a grace (REDACTION_GRACE_S): a tool
    that used all its time gets its logs back redacted, not replaced by the marker. The tool
    must have logged before its deadline: a loaded machine took more than 300 ms to get Node
    that far, so the deadline grows until the tool's file says it logged (console.log to a
    pipe is a synchronous write)."""
    body = (
        "import fs from 'node:fs'; export default (i, ctx) => {"
        " console.log('TOKEN'.repeat(13000) + ' GITHUB_TOKEN=abc');"
        " fs.writeFileSync(ctx.paths.project + '/out/logged', '1');"
        " return new Promise(() => setInterval(() => {}, 1000)); };"
    )
    (project / "out").mkdir()
    for timeout_ms in (300, 3000, 30_000):
        result = run_tool(body, timeout_ms=timeout_ms, permissions=OUT_WRITE)
        if (project / "out" / "logged").exists():
            break
    assert result.error is not None and result.error.code == "TIMEOUT"
    assert result.logs == "TOKEN" * 13000 + " GITHUB_TOKEN=[REDACTED]"
