"""``Splice.init``: the SDK makes a project as ``splice init`` does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpliceError
from splice_build.sdk import Splice


def test_init_creates_only_splice_json_and_opens_the_project(tmp_path: Path) -> None:
    splice = Splice.init(tmp_path / "new" / "project", registry="local")
    root = tmp_path / "new" / "project"
    assert splice.project_root == root
    assert [p.name for p in root.iterdir()] == ["splice.json"]
    saved = json.loads((root / "splice.json").read_text(encoding="utf-8"))
    assert saved == {"specVersion": 1, "registry": "local", "packages": {}}
    assert splice.registry_url == "http://127.0.0.1:8787"
    assert splice.list() == []


def test_init_leaves_an_existing_project_alone(tmp_path: Path) -> None:
    existing = '{"specVersion": 1, "packages": {"@acme/x": "^1.0.0"}}\n'
    (tmp_path / "splice.json").write_text(existing, encoding="utf-8")
    splice = Splice.init(tmp_path, registry="local")
    assert (tmp_path / "splice.json").read_text(encoding="utf-8") == existing
    assert splice.project_root == tmp_path


@pytest.mark.parametrize("registry", ["ftp://example.invalid", 1, ["http://127.0.0.1:1"]])
def test_init_refuses_a_bad_registry_and_writes_nothing(tmp_path: Path, registry: object) -> None:
    with pytest.raises(SpliceError) as caught:
        Splice.init(tmp_path / "p", registry=registry)  # type: ignore[arg-type]
    assert caught.value.code is ErrorCode.INVALID_CONFIG
    assert not (tmp_path / "p").exists()


@pytest.mark.node
def test_run_refuses_an_input_that_is_not_an_object_as_a_result(tmp_path: Path) -> None:
    """A caller's input goes to the tool's schema as it is: a list of pairs is not turned into
    an object, and a string, None or a number is an INVALID_INPUT result, not a TypeError."""
    splice = Splice.init(tmp_path / "project")
    splice.add(["@splice/example"])
    for given, kind in (
        ([["name", "Ada"]], "array"),
        ("ab", "string"),
        (None, "null"),
        (5, "number"),
    ):
        result = splice.run("example.hello", given)  # type: ignore[arg-type]
        assert not result.ok
        assert result.error is not None
        assert result.error.code is ErrorCode.INVALID_INPUT
        assert result.error.details == (f"input: expected object, got {kind}",)
    assert splice.run("example.hello", {"name": "Ada"}).output == {"message": "Hello, Ada."}
