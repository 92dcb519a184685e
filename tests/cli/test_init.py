"""`splice init`: creates only splice.json, idempotent, validates --registry."""

from __future__ import annotations

import json
from pathlib import Path

from testing.cli import run_splice


def test_init_creates_only_splice_json(tmp_path: Path) -> None:
    result = run_splice("init", str(tmp_path))
    assert result.code == 0
    assert result.stdout.strip() == f"Initialized Splice project in {tmp_path.resolve()}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["splice.json"]
    text = (tmp_path / "splice.json").read_text()
    assert json.loads(text) == {"specVersion": 1, "packages": {}}
    assert text.endswith("\n")


def test_init_twice_is_a_no_op(tmp_path: Path) -> None:
    run_splice("init", str(tmp_path))
    before = (tmp_path / "splice.json").read_bytes()
    again = run_splice("init", str(tmp_path), "--json")
    assert again.code == 0
    assert again.json() == {"root": str(tmp_path.resolve()), "created": False}
    assert (tmp_path / "splice.json").read_bytes() == before


def test_init_records_a_valid_registry(tmp_path: Path) -> None:
    result = run_splice("init", str(tmp_path), "--registry", "local")
    assert result.code == 0
    assert json.loads((tmp_path / "splice.json").read_text())["registry"] == "local"


def test_init_refuses_a_bad_registry_url(tmp_path: Path) -> None:
    result = run_splice("init", str(tmp_path), "--registry", "ftp://example.test", "--json")
    assert result.code == 2
    assert result.json()["error"]["code"] == "INVALID_CONFIG"
    assert not (tmp_path / "splice.json").exists()


def test_init_of_a_name_too_long_is_a_usage_error(tmp_path: Path) -> None:
    """A directory name the file system cannot look up is refused (exit 2, USAGE), not an
    ``unexpected failure`` crash report."""
    result = run_splice("init", str(tmp_path / ("x" * 300)), "--json")
    assert result.code == 2
    assert result.json()["error"]["code"] == "USAGE"
    assert list(tmp_path.iterdir()) == []
