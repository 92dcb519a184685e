"""The README's Python example, taken from README.md and run as written by a fresh Python in
an empty directory (the embedded registry): what a new user pastes first must work, and the
result shown in its comment must be what it returns."""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def python_example() -> tuple[str, dict]:
    """The README's ```python block, and the result its last comment shows (``...`` dropped)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    [block] = re.findall(r"^```python\n(.*?)^```$", text, flags=re.M | re.S)
    shown = block.rstrip().splitlines()[-1]
    assert shown.startswith("# {") and shown.endswith(", ...}"), shown
    return block, ast.literal_eval(shown.removeprefix("# ").replace(", ...}", "}"))


def _captured(block: str) -> str:
    """The block with its last expression's value printed as JSON."""
    tree = ast.parse(block)
    last = tree.body[-1]
    assert isinstance(last, ast.Expr), "the example ends with the expression it shows"
    tree.body[-1] = ast.parse(f"print(__import__('json').dumps({ast.unparse(last.value)}))").body[0]
    return ast.unparse(tree)


def test_the_readme_python_example_runs_in_an_empty_directory(tmp_path: Path) -> None:
    block, shown = python_example()
    done = subprocess.run(
        [sys.executable, "-c", _captured(block)],
        cwd=tmp_path,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert {key: result.get(key) for key in shown} == shown
    assert sorted(p.name for p in (tmp_path / "path/to/project").iterdir()) == [
        ".splice",
        "splice.json",
        "splice.lock",
    ]


def test_the_readme_quick_start_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's ```sh block of `splice` commands, each line as a user types it (the
    servers, `splice mcp`, left out), in an empty directory: every one exits 0, and the file
    the `run` line's comment names holds what it wrote."""
    from splice_build.cli.main import main

    text = (REPO / "README.md").read_text(encoding="utf-8")
    [block] = [
        b for b in re.findall(r"^```sh\n(.*?)^```$", text, flags=re.M | re.S) if "splice init" in b
    ]
    lines = [shlex.split(line, comments=True) for line in block.splitlines()]
    commands = [argv for argv in lines if argv and argv[:2] != ["splice", "mcp"]]
    assert [argv[1] for argv in commands] == ["init", "search", "add", "run", "list"]
    monkeypatch.chdir(tmp_path)
    for argv in commands:
        assert main(argv[1:]) == 0, (argv, capsys.readouterr().err)
    assert "workspace/notes.md" in block
    assert (tmp_path / "workspace/notes.md").read_text(encoding="utf-8") == "# Notes"
