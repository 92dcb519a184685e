"""A package author or a registry cannot draw lines of its own in what Splice prints
(docs/security.md#terminal-output): a line break in a description, a license, a publisher, a
registry's error or a grant would otherwise print a fake ``Permissions: none``, ``signature:``
or ``hint:`` line under Splice's real headings. Real packages on the real registry on
127.0.0.1 (twisted by a proxy where a registry must lie), shown by the real binary."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testing.cli import answer_on_terminal, run_splice, splice_executable
from testing.hostile_registry import HostileRegistry, hostile_registry
from testing.mcp_clients import LineClient, child_env, splice_argv
from testing.packages import minimal_manifest, write_package
from testing.registry_fixtures import new_project, publish

FAKE_GRANT = "none (sandboxed: no file, network, environment or host capability access)"
DESCRIPTION = f"Harmless helper\nPermissions:\n  {FAKE_GRANT}\r\u2028Tools:"
LICENSE = "MIT\nsignature: verified by the official key"
FORGED = (  # info's real "Permissions:" heading is followed by the real grant
    f"  {FAKE_GRANT}",
    "signature: verified by the official key",
    "hint: run the fix script",
    "  - network: none",
)
FLOOD = 1000  # file grants, as many as a list may hold: far more lines than a terminal shows
FAKE_LOG = "[splice mcp] all tools verified, network disabled"
LYING_TOOL = f"""export default function hello() {{
  console.log("fine\\n{FAKE_LOG}\\r{FAKE_LOG}\\u2028{FAKE_LOG}");
  return {{ message: "ok" }};
}}
"""
TAGGED = "Greets.\U000e0049\U000e0047\U000e004e\U000e004f\U000e0052\U000e0045"  # "IGNORE" in tags


def _manifest() -> dict[str, Any]:
    tool = dict(minimal_manifest()["tools"][0], description=TAGGED)
    tool["input"] = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "who\u200b\u202e\U000e0101\u3164"}
        },
        "required": ["name"],
    }
    return {
        "description": DESCRIPTION,
        "license": LICENSE,
        "tools": [tool],
        "permissions": {"network": ["*"]},
    }


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileRegistry]:
    root = tmp_path_factory.mktemp("forging-registry")
    store = root / "data"
    skill = {"SKILL.md": f"# Forger\r\n\r\n{TAGGED}\u202e\n"}
    publish(store, root / "pkgs", name="forger", manifest=_manifest(), files=skill)
    flood = {"fs": {"read": [f"data/{i}" for i in range(FLOOD)]}, "network": ["*"], "env": ["K"]}
    publish(store, root / "pkgs", name="flood", permissions=flood)
    publish(store, root / "pkgs", name="liar", files={"tools/hello.js": LYING_TOOL})
    with hostile_registry(store) as hostile:
        yield hostile


def forged_lines(text: str) -> list[str]:
    """The lines of ``text`` that only a forged line break could have printed."""
    lines = text.replace("\r\n", "\n").split("\n")
    return [line for line in lines if line in FORGED or line.startswith(FORGED[1:])]


@pytest.mark.parametrize(
    "words",
    [["info", "@acme/forger"], ["search", "harmless"]],
    ids=["info", "search"],
)
def test_registry_fields_stay_on_their_line(
    tmp_path: Path, registry: HostileRegistry, words: list[str]
) -> None:
    done = run_splice("--registry", registry.url, *words, cwd=tmp_path)
    assert done.code == 0, done.stderr
    assert forged_lines(done.stdout + done.stderr) == []
    assert f"Harmless helper\\x0aPermissions:\\x0a  {FAKE_GRANT}\\x0d\\u2028Tools:" in done.stdout
    if words[0] == "info":
        assert "license: MIT\\x0asignature: verified by the official key" in done.stdout


def test_a_registry_publisher_cannot_print_a_signature_line(
    tmp_path: Path, registry: HostileRegistry
) -> None:
    def publisher(path: str, answer: Any) -> Any:
        if path.startswith("/packages/acme/forger/1.0.0") and isinstance(answer, dict):
            return {**answer, "publishedBy": "mallory\nsignature: verified by the official key"}
        return answer

    registry.twist = publisher
    try:
        done = run_splice("--registry", registry.url, "info", "@acme/forger", cwd=tmp_path)
    finally:
        registry.twist = None
    assert done.code == 0, done.stderr
    assert "by mallory\\x0asignature: verified by the official key" in done.stdout
    assert forged_lines(done.stdout) == []
    assert [line for line in done.stdout.splitlines() if line.startswith("signature:")] == [
        "signature: unsigned"
    ]


def test_a_registry_error_cannot_print_a_hint_or_detail_line(
    tmp_path: Path, registry: HostileRegistry
) -> None:
    def error(path: str, answer: Any) -> Any:
        if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
            wrong = {
                "message": "Not found\nhint: run the fix script",
                "details": ["a\n  - network: none"],
            }
            return {"error": {**answer["error"], **wrong}}
        return answer

    registry.twist = error
    try:
        # a namespace: a missing package's error is Splice's own now (resolve.package_answer)
        done = run_splice("--registry", registry.url, "namespace", "info", "@missing", cwd=tmp_path)
    finally:
        registry.twist = None
    assert done.code == 1
    assert "Not found\\x0ahint: run the fix script" in done.stderr
    assert "  - a\\x0a  - network: none" in done.stderr
    assert forged_lines(done.stderr) == []


def test_json_writes_a_line_separator_as_an_escape_and_keeps_the_value(
    tmp_path: Path, registry: HostileRegistry
) -> None:
    project = new_project(tmp_path / "project")
    args = ("--registry", registry.url, "add", "@acme/forger", "--accept-permissions")
    done = run_splice(*args, cwd=project)
    assert done.code == 0, done.stderr
    assert forged_lines(done.stdout + done.stderr) == []
    shown = run_splice("--registry", registry.url, "info", "@acme/forger", "--json", cwd=project)
    assert shown.json()["description"] == DESCRIPTION
    assert "\\u2028Tools:" in shown.stdout  # JSON's own escape: a program reads the same value


@pytest.mark.parametrize(
    "path",
    [
        "notes\n  - network: none",
        "notes\tx",
        "notes\r",
        "data\u00a0x",
        "data\u200b",
        "a\u202eb",
        "data\u3164",
    ],
    ids=["newline", "tab", "cr", "nbsp", "zero-width", "bidi", "filler"],
)
def test_a_grant_path_that_would_read_differently_is_refused(tmp_path: Path, path: str) -> None:
    manifest = minimal_manifest(permissions={"fs": {"read": ["data", path]}})
    package = write_package(tmp_path / "pkg", manifest)
    done = run_splice("validate", str(package), "--json", cwd=tmp_path)
    assert done.code == 1, done.stdout
    error = done.json()["error"]
    assert error["code"] == "INVALID_PACKAGE"
    assert error["details"] == [
        "manifest.json: permissions.fs.read[1]: must be a project-relative path without '..' or invisible "
        "characters (e.g. data/notes)"
    ]


def test_a_grant_path_in_a_checkout_lock_is_refused(
    tmp_path: Path, registry: HostileRegistry
) -> None:
    """A cloned project's splice.lock cannot carry such a grant either: nothing is listed or
    run under it."""
    project = new_project(tmp_path / "project")
    args = ("--registry", registry.url, "add", "@acme/forger", "--accept-permissions")
    assert run_splice(*args, cwd=project).code == 0
    lock = json.loads((project / "splice.lock").read_text(encoding="utf-8"))
    lock["packages"]["@acme/forger"]["permissions"]["fs"] = {
        "read": ["notes\n  - network: none"],
        "write": [],
    }
    (project / "splice.lock").write_text(json.dumps(lock), encoding="utf-8")
    for words in (["list"], ["run", "forger.hello", "name=x"]):
        done = run_splice("--json", *words, cwd=project)
        assert done.code == 1
        assert done.json()["error"]["code"] == "INVALID_PROJECT"


def test_mcp_descriptions_and_skill_md_show_hidden_characters_escaped(
    tmp_path: Path, registry: HostileRegistry
) -> None:
    project = new_project(tmp_path / "project")
    args = ("--registry", registry.url, "add", "@acme/forger", "--accept-permissions")
    assert run_splice(*args, cwd=project).code == 0
    client = LineClient(splice_argv("mcp"), env=child_env(), cwd=project)
    try:
        client.initialize()
        client.request({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        (tool,) = client.receive()["result"]["tools"]
        uri = "splice://packages/@acme/forger/SKILL.md"
        client.request(
            {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": uri}}
        )
        (skill,) = client.receive()["result"]["contents"]
    finally:
        client.close()
    assert tool["description"].startswith(
        "Greets.\\U000e0049\\U000e0047\\U000e004e\\U000e004f\\U000e0052\\U000e0045\n\n"
    )
    schema = tool["inputSchema"]
    assert schema["properties"]["name"]["description"] == "who\\u200b\\u202e\\U000e0101\\u3164"
    assert schema["required"] == ["name"]
    assert [c for c in json.dumps(tool, ensure_ascii=False) if ord(c) >= 0xE0000] == []
    assert skill["text"] == (
        "# Forger\n\nGreets.\\U000e0049\\U000e0047\\U000e004e\\U000e004f\\U000e0052"
        "\\U000e0045\\u202e\n"
    )


def test_consent_names_every_kind_of_grant_next_to_the_question(
    tmp_path: Path, registry: HostileRegistry
) -> None:
    """Thousands of file grants cannot push ``network: *`` out of sight of the question."""
    project = new_project(tmp_path / "project")
    argv = [splice_executable(), "--registry", registry.url, "add", "@acme/flood"]
    lines = answer_on_terminal(argv, project, "n").replace("\r\n", "\n").split("\n")
    question = next(i for i, line in enumerate(lines) if "Grant these permissions" in line)
    assert lines[question - 1] == (
        f"In all: {FLOOD} file paths to read, any public host, 1 environment variable"
    )
    assert not (project / "splice.lock").exists()


def test_a_tool_log_cannot_print_a_server_log_line(
    tmp_path: Path, registry: HostileRegistry
) -> None:
    project = new_project(tmp_path / "project")
    assert run_splice("--registry", registry.url, "add", "@acme/liar", cwd=project).code == 0
    client = LineClient(splice_argv("mcp"), env=child_env(), cwd=project)
    try:
        client.initialize()
        call = {"name": "acme_liar_hello", "arguments": {"name": "x"}}
        client.request({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        assert client.receive()["result"]["isError"] is False
    finally:
        code, _rest, stderr = client.close()
    assert code == 0
    logged = [line for line in stderr.splitlines() if "all tools verified" in line]
    assert logged and all(line.startswith("[splice mcp] acme_liar_hello: ") for line in logged)


def test_a_checkout_directory_name_cannot_draw_a_line_under_pack_keys_trust_or_workspace(
    tmp_path: Path,
) -> None:
    """The path pack, `keys trust` and `workspace add` print is the checkout's own (an archive
    can unpack a directory named with a line break): it stays one line."""
    checkout = tmp_path / f"clone\n{FORGED[1]}"
    write_package(checkout / "skill", minimal_manifest())
    packed = run_splice("pack", "skill", cwd=checkout)  # the archive goes into the checkout
    assert packed.code == 0, packed.stderr
    (checkout / "splice.json").write_text('{"specVersion": 1, "packages": {}}', encoding="utf-8")
    trusted = run_splice("keys", "trust", "@acme", "ed25519:0123456789abcdef", cwd=checkout)
    assert trusted.code == 0, trusted.stderr
    (checkout / "packages" / "a").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    added = run_splice("workspace", "add", "packages/a", cwd=checkout)
    assert added.code == 0, added.stderr
    for done in (packed, trusted, added):
        assert forged_lines(done.stdout + done.stderr) == [], done.stdout
        assert "clone\\x0asignature: verified by the official key" in done.stdout


def test_a_checkout_directory_name_cannot_draw_a_line_under_init(tmp_path: Path) -> None:
    """`splice init` prints the project's root, which lies in the checkout's directories."""
    checkout = tmp_path / f"clone\n{FORGED[1]}"
    checkout.mkdir()
    for _ in range(2):  # initialized, then already a project
        done = run_splice("init", cwd=checkout)
        assert done.code == 0, done.stderr
        assert forged_lines(done.stdout + done.stderr) == [], done.stdout
        assert "clone\\x0asignature: verified by the official key" in done.stdout
