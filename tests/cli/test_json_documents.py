"""docs/cli.md's table of JSON documents names what `--json` prints: a row for every command,
and in it each member the command's document has. The documents of `add`, `verify`,
`validate`, `pack`, `doctor`, `workspace list`, `whoami` and a dozen more were named nowhere
(docs/lifecycle.md sent the reader to a section of compatibility.md that gives none)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.test_doc_links import REPO

EXAMPLE = REPO / "splice_build" / "skills" / "example"


def documents_table(page: Path) -> dict[str, str]:
    """Each command word of the table's first column (`workspace list` gives `workspace`),
    mapped to the text of its row."""
    text = page.read_text(encoding="utf-8").split("## JSON documents", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in text.splitlines():
        if not line.startswith("| `"):
            continue
        first = line.split(" | ", 1)[0]
        for command in re.findall(r"`(?:--)?([\w-]+)", first):
            rows[command] = rows.get(command, "") + line
    return rows


def unnamed_members(document: Any, row: str) -> list[str]:
    """The members of ``document`` (of its first row, for a list) the row does not name."""
    first = document[0] if isinstance(document, list) and document else document
    members = first if isinstance(first, dict) else {}
    return [name for name in members if not re.search(rf"\b{re.escape(name)}\b", row)]


def _commands() -> list[str]:
    from splice_build.cli.parser import build_parser, load_commands

    parser = build_parser(load_commands())
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(commands.choices)


def test_every_command_has_a_row() -> None:
    rows = documents_table(REPO / "docs" / "cli.md")
    assert sorted(set(_commands()) - set(rows)) == []


def test_each_member_of_a_document_is_named_in_its_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from splice_build.cli.main import main

    rows = documents_table(REPO / "docs" / "cli.md")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("nothing\n", encoding="utf-8")
    commands = [
        ["init"],
        ["add", "@splice/example"],
        ["install"],
        ["list"],
        ["outdated"],
        ["update"],
        ["verify", "@splice/example"],
        ["run", "example.hello", "name=Ada"],
        ["search", "example"],
        ["validate", str(EXAMPLE)],
        ["pack", str(EXAMPLE), "--out", str(tmp_path / "example.tgz")],
        ["config", "list"],
        ["doctor"],
        ["workspace", "list"],
        ["secret-scan", "notes.txt"],
        ["remove", "@splice/example"],
    ]
    unnamed = {}
    for argv in commands:
        assert main(["--json", *argv]) == 0, (argv, capsys.readouterr().err)
        document = json.loads(capsys.readouterr().out)
        unnamed[argv[0]] = unnamed_members(document, rows[argv[0]])
    assert {command: names for command, names in unnamed.items() if names} == {}


def test_a_member_the_row_does_not_name_is_found(tmp_path: Path) -> None:
    page = tmp_path / "cli.md"
    page.write_text(
        "## JSON documents\n\n| Command | Document |\n|---|---|\n"
        "| `init` | `{root, created}` |\n| `keys`, `sign` | `{name, keyId}` |\n\n## Next\n"
        "| `other` | `{x}` |\n",
        encoding="utf-8",
    )
    rows = documents_table(page)
    assert sorted(rows) == ["init", "keys", "sign"]
    assert unnamed_members({"root": 1, "created": True, "path": "/"}, rows["init"]) == ["path"]
    assert unnamed_members([{"name": 1, "keyIds": 2}], rows["sign"]) == ["keyIds"]
    assert unnamed_members([], rows["sign"]) == []
