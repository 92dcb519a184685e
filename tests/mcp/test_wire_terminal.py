"""What `splice mcp` writes on its protocol channel can be shown on a terminal
(docs/security.md#terminal-output): a person who runs the server by hand, or ``curl``s the
HTTP transport, reads its JSON there. JSON escapes only the C0 controls; every other code
point a terminal would act on or hide (DEL, the C1 controls such as ``CSI`` U+009B, bidi
overrides, zero-width and tag characters, U+2028/U+2029) leaves as its JSON escape, and a
client parses exactly the value the tool returned.

The whole space is walked: every code point of the categories Cc, Cf, Zl and Zp (the C1
range is in Cc), in a value, a key and a log line of a tool run in the real sandbox.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from pathlib import Path

import pytest

from splice_build.mcp.protocol import encode
from testing.cli import run_splice
from testing.mcp_clients import LineClient, child_env, splice_argv
from testing.registry_fixtures import embedded_store, new_project, publish

_WALKED = frozenset({"Cc", "Cf", "Zl", "Zp"})
_RAW = _WALKED | {"Cs", "Co", "Cn"}
EVERY = "".join(
    chr(point) for point in range(sys.maxunicode + 1) if unicodedata.category(chr(point)) in _WALKED
)
TOOL = f"""const P = {json.dumps(EVERY)};
export default function hello(input) {{
  console.log("log " + P);
  return {{ message: P, [P]: [P] }};
}}
"""


def raw_code_points(text: str) -> list[str]:
    """Code points of the escaped categories in ``text`` (a line's own newline aside)."""
    return [f"U+{ord(c):04X}" for c in text if c != "\n" and unicodedata.category(c) in _RAW]


def test_the_c1_range_is_walked() -> None:
    assert set(range(0x80, 0xA0)) <= {ord(c) for c in EVERY}
    assert {"\x1b", "\x9b", "\u202e", "\u2066", "\u200b", "\u2028", "\u2029", "\U000e0041"} <= set(
        EVERY
    )


def test_every_message_is_written_without_a_raw_control_or_format_character() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "result": {EVERY: [EVERY, "\udcff"], "ok": "é 漢 🙂"}}
    line = encode(message).decode("utf-8")
    assert raw_code_points(line) == []
    assert json.loads(line) == message


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    base = tmp_path_factory.mktemp("wire")
    home = base / "home" / ".splice"
    env = {"HOME": str(base / "home"), "SPLICE_HOME": str(home)}
    publish(embedded_store(home), base / "work", files={"tools/hello.js": TOOL})
    directory = new_project(base / "project")
    added = run_splice("add", "@acme/greeter", cwd=directory, env=env, timeout=300)
    assert added.code == 0, added.stderr
    return directory, child_env(env)


def test_a_tool_result_holding_every_control_and_format_character_reaches_the_client_exact(
    project: tuple[Path, dict[str, str]],
) -> None:
    directory, env = project
    client = LineClient(splice_argv("mcp"), env=env, cwd=directory)
    assert client.process.stdout is not None
    try:
        init = {"protocolVersion": "2025-11-25", "capabilities": {}}
        client.request({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        assert "result" in client.receive()
        params = {"name": "acme_greeter_hello", "arguments": {"name": "x"}}
        client.request({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})
        line = client.process.stdout.readline().decode("utf-8")
    finally:
        code, _rest, stderr = client.close()
    assert code == 0
    assert raw_code_points(line) == []
    result = json.loads(line)["result"]
    assert result["isError"] is False
    assert result["structuredContent"] == {"message": EVERY, EVERY: [EVERY]}
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    # The server's log on stderr: the tool's line, labelled and escaped.
    assert "[splice mcp] acme_greeter_hello: log \\x00\\x01" in stderr
    assert raw_code_points(stderr) == []
