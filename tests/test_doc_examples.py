"""The code blocks of README.md and docs/*.md that a user copies are what Splice accepts: every
```json block is JSON (a `{…}` standing for elided members read as `{}`, a block of
members read as an object, a block of one document per line read line by line), and the ones that are a manifest or a `splice.json`
pass Splice's own reading of those files; every ```toml block is TOML, and a
`[tool.splice.workspace]` table in one is a workspace Splice reads; every ```python block
is Python. Then the examples whose output a page shows: packages.md's invalid manifest gives
the lines its `splice validate` example prints, and runtime.md's `"reuse": true` is the
limits the same page spells out, and sdk.md's Python example prints what its comments show.
One walk in this process, no subprocess."""

from __future__ import annotations

import ast
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from splice_build.errors import SpliceError
from splice_build.project.project_file import load_project_file
from splice_build.project.workspace import read_config
from splice_build.spec.manifest import Manifest

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

_BLOCK = re.compile(r"^[ \t]*```(\w+)[ \t]*\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S)


def blocks(language: str) -> list[tuple[str, str]]:
    """Each ```language block of the pages, as (where, text), its indentation removed."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in _BLOCK.finditer(text):
            if match.group(1) == language:
                line = text.count("\n", 0, match.start()) + 1
                body = match.group(2)
                indent = min(
                    (len(x) - len(x.lstrip()) for x in body.splitlines() if x.strip()), default=0
                )
                body = "\n".join(x[indent:] for x in body.splitlines())
                found.append((f"{page.relative_to(REPO)}:{line}", body))
    return found


def json_documents(body: str) -> list[Any]:
    """The block as one JSON document, else as an object's members (`"permissions": {…}`),
    else one document per line (`{…}` elides members)."""
    body = body.replace("{…}", "{}")
    for text in (body, "{" + body + "}"):
        try:
            return [json.loads(text)]
        except json.JSONDecodeError:
            pass
    return [json.loads(line) for line in body.splitlines() if line.strip()]


def _is_manifest(doc: object) -> bool:
    return isinstance(doc, dict) and "namespace" in doc and "tools" in doc


def _is_project_file(doc: object) -> bool:
    return isinstance(doc, dict) and "specVersion" in doc and "packages" in doc


def test_every_example_block_is_what_splice_reads(tmp_path: Path) -> None:
    counts = {"json": 0, "manifest": 0, "project": 0, "toml": 0, "workspace": 0, "python": 0}
    for where, body in blocks("json"):
        try:
            documents = json_documents(body)
        except json.JSONDecodeError as exc:
            pytest.fail(f"{where}: not JSON ({exc})")
        counts["json"] += 1
        for doc in documents:
            if _is_manifest(doc):
                counts["manifest"] += 1
                try:
                    Manifest.from_dict(doc)
                except SpliceError as exc:
                    pytest.fail(f"{where}: the manifest is refused: {exc} {exc.details}")
            elif _is_project_file(doc):
                counts["project"] += 1
                project = tmp_path / f"project{counts['project']}"
                project.mkdir()
                (project / "splice.json").write_text(json.dumps(doc), encoding="utf-8")
                try:
                    load_project_file(project)
                except SpliceError as exc:
                    pytest.fail(f"{where}: the splice.json is refused: {exc} {exc.details}")
    for where, body in blocks("toml"):
        counts["toml"] += 1
        data = tomllib.loads(body)
        if "workspace" in data.get("tool", {}).get("splice", {}):
            counts["workspace"] += 1
            (tmp_path / "pyproject.toml").write_text(body, encoding="utf-8")
            assert read_config(tmp_path / "pyproject.toml") is not None, where
    for where, body in blocks("python"):
        counts["python"] += 1
        try:
            ast.parse(body)
        except SyntaxError as exc:
            pytest.fail(f"{where}: not Python ({exc})")
    # the walk found the examples it is about (a changed fence would otherwise pass silently)
    assert min(counts.values()) >= 1 and counts["project"] >= 4, counts


def test_the_validate_example_prints_what_packages_md_shows() -> None:
    page = (REPO / "docs" / "packages.md").read_text(encoding="utf-8")
    [(_, body)] = [b for b in blocks("json") if b[0].startswith("docs/packages.md")]
    manifest = json.loads(body)
    manifest.update(namespace="Acme", version="one")
    del manifest["description"]
    shown = re.search(r"^\$ splice validate my-skill\n(.*?)^```", page, re.M | re.S)
    assert shown, "packages.md shows `splice validate my-skill`"
    lines = shown.group(1).splitlines()
    assert lines[0] == "error: Package is invalid"
    with pytest.raises(SpliceError) as refused:
        Manifest.from_dict(manifest)
    assert [f"  - manifest.json: {d}" for d in refused.value.details] == lines[1:]


def test_reuse_true_is_the_limits_runtime_md_spells_out(tmp_path: Path) -> None:
    [(_, body)] = [b for b in blocks("json") if '"reuse": true' in b[1]]
    plain, spelled = json_documents(body)
    policies = []
    for doc in (plain, spelled):
        (tmp_path / "splice.json").write_text(json.dumps(doc), encoding="utf-8")
        policies.append(load_project_file(tmp_path).reuse_policy())
    assert policies[0] == policies[1] and policies[0] is not None


@pytest.mark.node
def test_the_sdk_example_prints_what_sdk_md_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/sdk.md's example, run as written in an empty directory (the embedded registry):
    each print prints what its comment shows (up to a closing '…')."""
    [(where, body)] = [b for b in blocks("python") if b[0].startswith("docs/sdk.md")]
    shown = [line.split("  # ", 1)[1] for line in body.splitlines() if "print(" in line]
    monkeypatch.chdir(tmp_path)
    exec(compile(body, where, "exec"), {})  # the page's own example
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == len(shown) == 3
    for line, comment in zip(printed, shown, strict=True):
        assert line.startswith(comment.removesuffix(" …")), (line, comment)
