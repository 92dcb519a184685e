"""Nothing a tool, a manifest or a registry controls reaches the terminal raw
(docs/security.md#terminal-output): a package whose manifest carries escape sequences and a
bidi override, served by the real registry on 127.0.0.1 and shown by `info`, `search`,
`list` and the consent prompt of the real binary; a tool that logs and throws them. Only
Splice's own status-line and colour sequences may remain."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from testing.cli import answer_on_terminal, run_splice, splice_executable
from testing.mcp_clients import LineClient, child_env, splice_argv
from testing.packages import minimal_manifest, write_package
from testing.registry_fixtures import new_project, publish
from testing.registry_server import RunningRegistry, registry_server

OSC52 = "\x1b]52;c;cHduZWQ=\x07"  # write "pwned" to the clipboard
CSI = "\x9b2J"  # clear the screen, in one C1 code point
HOSTILE = f"Greets {OSC52}{CSI} \u202etxt.exe\u2066\u200b\r\x1b[2Kok"
SHOWN_HOSTILE = "Greets \\x1b]52;c;cHduZWQ=\\x07\\x9b2J \\u202etxt.exe\\u2066\\u200b\\x0d\\x1b[2Kok"

_ESCAPED = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_OURS = re.compile(r"\r\x1b\[2K")  # the progress line redraw (terminal only)


def raw_controls(text: str) -> list[str]:
    """Code points of the escaped categories in ``text``, apart from Splice's own."""
    text = _OURS.sub("", text).replace("\r\n", "\n")
    return [
        f"U+{ord(c):04X}" for c in text if c not in "\n\t" and unicodedata.category(c) in _ESCAPED
    ]


HOSTILE_TOOL = r"""export default function hello(input) {
  console.log("log \u001b]52;c;cHduZWQ=\u0007 and \u009b2J");
  if (input.name === "fail") throw new Error("boom \u001b[2J\u202e");
  return { message: "out \u001b[31m\u202e" };
}
"""


def _hostile_manifest() -> dict:
    tool = dict(minimal_manifest()["tools"][0], description=f"Say {OSC52} hello")
    return {
        "description": HOSTILE,
        "tools": [tool],
        "permissions": {"fs": {"read": ["data"]}},
    }


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningRegistry]:
    root = tmp_path_factory.mktemp("hostile-registry")
    store = root / "data"
    publish(store, root / "pkgs", name="hostile", manifest=_hostile_manifest())
    publish(store, root / "pkgs", name="logger", files={"tools/hello.js": HOSTILE_TOOL})
    with registry_server(store, admin=False) as server:
        yield server


def _installed_project(tmp_path: Path, registry: RunningRegistry) -> Path:
    project = new_project(tmp_path / "project")
    done = run_splice(
        "--registry", registry.url, "add", "@acme/hostile", "--accept-permissions", cwd=project
    )
    assert done.code == 0, done.stderr
    assert raw_controls(done.stdout + done.stderr) == []
    return project


@pytest.mark.parametrize(
    "words",
    [["info", "@acme/hostile"], ["search", "greets"]],
    ids=["info", "search"],
)
def test_registry_strings_are_escaped(
    tmp_path: Path, registry: RunningRegistry, words: list[str]
) -> None:
    done = run_splice("--registry", registry.url, *words, cwd=tmp_path)
    assert done.code == 0, done.stderr
    assert raw_controls(done.stdout + done.stderr) == []
    assert SHOWN_HOSTILE in done.stdout
    if words[0] == "info":
        assert "Say \\x1b]52;c;cHduZWQ=\\x07 hello" in done.stdout


def test_json_output_stays_exact(tmp_path: Path, registry: RunningRegistry) -> None:
    done = run_splice("--registry", registry.url, "info", "@acme/hostile", "--json", cwd=tmp_path)
    assert done.code == 0, done.stderr
    assert done.json()["description"] == HOSTILE
    assert raw_controls(done.stdout) == []  # C1 and format characters as JSON \u escapes
    assert "\\u009b2J" in done.stdout and "\\u202etxt.exe" in done.stdout


def test_installed_hostile_package_is_listed_escaped(
    tmp_path: Path, registry: RunningRegistry
) -> None:
    project = _installed_project(tmp_path, registry)
    for words in (["list"], ["info", "@acme/hostile"]):
        done = run_splice("--registry", registry.url, *words, cwd=project)
        assert done.code == 0, done.stderr
        assert raw_controls(done.stdout + done.stderr) == []


def test_consent_prompt_of_a_hostile_package_has_no_raw_controls(
    tmp_path: Path, registry: RunningRegistry
) -> None:
    project = new_project(tmp_path / "project")
    argv = [splice_executable(), "--registry", registry.url, "add", "@acme/hostile"]
    shown = answer_on_terminal(argv, project, "n")
    assert f"read files: {project.resolve() / 'data'}" in shown
    assert raw_controls(shown.replace("\r\n", "\n")) == []


@pytest.mark.parametrize("name", ["ok", "fail"])
def test_tool_logs_errors_and_output_are_escaped(tmp_path: Path, name: str) -> None:
    package = write_package(tmp_path / "pkg", files={"tools/hello.js": HOSTILE_TOOL})
    done = run_splice("run", "greeter.hello", f"name={name}", "--dir", str(package), cwd=tmp_path)
    assert done.code == (0 if name == "ok" else 1), done.stderr
    assert raw_controls(done.stdout + done.stderr) == []
    assert "log \\x1b]52;c;cHduZWQ=\\x07 and \\x9b2J" in done.stderr
    if name == "ok":
        assert "out \\u001b[31m\\u202e" in done.stdout  # JSON text (C0 escaped), then escaped
    else:
        assert "boom \\x1b[2J\\u202e" in done.stderr


@pytest.mark.parametrize("command", [["validate"], ["publish", "--dry-run"]])
def test_validate_and_publish_refuse_control_characters_naming_the_field(
    tmp_path: Path, command: list[str]
) -> None:
    manifest = minimal_manifest(**_hostile_manifest())
    manifest["tools"][0]["input"]["properties"] = {"na\u202eme": {"type": "string"}}
    manifest["tools"][0]["input"]["required"] = []
    package = write_package(tmp_path / "pkg", manifest)
    done = run_splice(*command, str(package), "--json", cwd=tmp_path)
    assert done.code == 1, done.stderr
    error = done.json()["error"]
    assert error["code"] == "INVALID_MANIFEST"
    assert error["details"] == [
        "description: must not contain control or invisible format characters "
        "(found \\x1b, \\x07, \\x9b, \\u202e, \\u2066, \\u200b, \\x0d)",
        "tools[0].description: must not contain control or invisible format characters "
        "(found \\x1b, \\x07)",
        "tools[0].input.properties.na\\u202eme (key): must not contain control or invisible "
        "format characters (found \\u202e)",
    ]
    human = run_splice(*command, str(package), cwd=tmp_path)
    assert human.code == 1
    assert raw_controls(human.stdout + human.stderr) == []
    assert "tools[0].description: must not contain" in human.stderr


def test_newlines_and_tabs_in_a_description_stay_valid(tmp_path: Path) -> None:
    package = write_package(tmp_path / "pkg", minimal_manifest(description="Two\tcolumns\nok"))
    assert run_splice("validate", str(package), cwd=tmp_path).code == 0


def test_mcp_server_stderr_shows_tool_logs_escaped(
    tmp_path: Path, registry: RunningRegistry
) -> None:
    project = new_project(tmp_path / "project")
    added = run_splice("--registry", registry.url, "add", "@acme/logger", cwd=project)
    assert added.code == 0, added.stderr
    client = LineClient(splice_argv("mcp"), env=child_env(), cwd=project)
    try:
        client.initialize()
        client.request({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        (tool,) = client.receive()["result"]["tools"]
        call = {"name": tool["name"], "arguments": {"name": "ok"}}
        client.request({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
        assert client.receive()["result"]["isError"] is False
    finally:
        code, _rest, stderr = client.close()
    assert code == 0
    assert "log \\x1b]52;c;cHduZWQ=\\x07 and \\x9b2J" in stderr
    assert raw_controls(stderr) == []


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("notes\nsignature.md", "\\x0a"),
        ("data/a\x1b]52;c;AAAA\x07.txt", "\\x1b, \\x07"),
        ("read\u202eme.txt", "\\u202e"),
        ("\u200b.js", "\\u200b"),
        ("col\tumn.txt", "\\x09"),
    ],
)
def test_validate_and_publish_refuse_file_names_that_read_as_another(
    tmp_path: Path, name: str, found: str
) -> None:
    """A name that shows as another one, or as none, in the author's listing of the checkout
    is refused before it reaches a registry; pack still writes what the format allows."""
    package = write_package(tmp_path / "pkg", minimal_manifest(), {name: "x"})
    packed = run_splice("pack", str(package), "--out", "pkg.tgz", cwd=tmp_path)
    assert packed.code == 0, packed.stderr
    for command in (["validate", "pkg"], ["validate", "pkg.tgz"], ["publish", "--dry-run", "pkg"]):
        done = run_splice("--json", *command, cwd=tmp_path)
        assert done.code == 1, (command, done.stdout, done.stderr)
        error = done.json()["error"]
        assert error["code"] == "INVALID_PACKAGE", error
        assert error["message"] == "Package file names must read as themselves"
        [detail] = error["details"]
        assert detail.endswith(
            f"must not contain control or invisible format characters (found {found})"
        )
        human = run_splice(*command, cwd=tmp_path)
        assert raw_controls(human.stdout + human.stderr) == []


def test_file_names_in_any_script_or_with_spaces_stay_valid(tmp_path: Path) -> None:
    files = {"docs/café au lait.md": "x", "docs/\u65e5\u672c.md": "x", "docs/a\u00a0b.md": "x"}
    package = write_package(tmp_path / "pkg", minimal_manifest(), files)
    assert run_splice("validate", str(package), cwd=tmp_path).code == 0
