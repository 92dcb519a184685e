"""``splice workspace add`` and ``remove`` edit a checkout's ``pyproject.toml`` with tomlkit
only when it holds at most ``MAX_EDITED_ENTRIES`` keys and array items (project/workspace.py
``_check_editable``): tomlkit's parse costs each dotted key under one table the keys before
it, and 40,000 of them (509 KB) held ``workspace remove`` more than 120 s."""

from __future__ import annotations

from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, ProjectError
from splice_build.project import workspace
from testing.registry_fixtures import new_project


@pytest.mark.parametrize("edit", [workspace.add_member, workspace.remove_member])
def test_a_pyproject_past_the_edit_bound_is_invalid_config_unparsed(
    tmp_path: Path, edit: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tomlkit

    def refuse(*args: object) -> None:
        raise AssertionError("tomlkit parsed a pyproject.toml past the edit bound")

    monkeypatch.setattr(tomlkit, "parse", refuse)
    new_project(tmp_path / "a")
    dotted = "".join(f"k.n{i} = 1\n" for i in range(5_001))
    text = '[tool.splice.workspace]\nmembers = ["a"]\n[x]\n' + dotted
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(ProjectError) as caught:
        edit(tmp_path, tmp_path / "a")  # type: ignore[operator]
    assert caught.value.code is ErrorCode.INVALID_CONFIG
    assert "more than 5000 keys and array items" in caught.value.message
    assert (tmp_path / "pyproject.toml").read_text() == text
