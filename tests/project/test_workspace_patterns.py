"""A checkout's ``[tool.splice.workspace]`` patterns are compiled by pathspec: whatever they
are, a workspace command either matches with RE2 or refuses them ``INVALID_CONFIG``
(project/workspace.py ``_patterns``, ``_spec``), never a crash or a backtracking matcher."""

from __future__ import annotations

import itertools
import json
import warnings
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, ProjectError
from splice_build.project import workspace
from testing.cli import run_splice
from testing.registry_fixtures import new_project

# Every pattern of up to three characters over the characters pathspec gives a meaning
# (and one it does not), then the ones each library refuses in its own way.
_ALPHABET = "*?[]!-\\/a:^"
_REFUSED = {
    "[z-a]": "bad character range",  # Python's re.error
    "!": "Invalid git pattern",  # pathspec's ValueError
    "[[:alpha:]]": "to Set",  # RE2's own error type
}


def _write(root: Path, members: list[str]) -> Path:
    pyproject = root / "pyproject.toml"
    pyproject.write_text("[tool.splice.workspace]\nmembers = " + json.dumps(members) + "\n")
    return pyproject


def test_every_short_pattern_is_read_or_invalid_config(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    refused: dict[str, str] = {}
    patterns = ["".join(p) for n in range(1, 4) for p in itertools.product(_ALPHABET, repeat=n)]
    with warnings.catch_warnings(record=True) as warned:  # a library's warning reaches stderr
        warnings.simplefilter("always")
        for pattern in [*patterns, *_REFUSED]:
            try:
                workspace._config_of(pyproject, _toml([pattern]))
            except ProjectError as exc:
                assert exc.code is ErrorCode.INVALID_CONFIG, (pattern, exc)
                refused[pattern] = str(exc)
    assert [str(w.message) for w in warned] == []
    for pattern, reason in _REFUSED.items():
        assert reason in refused[pattern], refused[pattern]


def _toml(members: list[str]) -> bytes:
    return ("[tool.splice.workspace]\nmembers = " + json.dumps(members) + "\n").encode()


# workspace.MAX_PATTERNS and MAX_PATTERN_CHARS are 256.
@pytest.mark.parametrize(
    "members",
    [
        [f"p{i}" for i in range(257)],
        ["a" * 257],
        # Within both limits, past RE2's memory budget for one set.
        [f"{i:03}" + "*a" * 126 for i in range(256)],
    ],
    ids=["too-many", "too-long", "too-large-a-set"],
)
def test_pattern_lists_past_the_limits_are_invalid_config(
    tmp_path: Path, members: list[str]
) -> None:
    with pytest.raises(ProjectError) as caught:
        workspace._config_of(tmp_path / "pyproject.toml", _toml(members))
    assert caught.value.code is ErrorCode.INVALID_CONFIG


def test_workspace_remove_refuses_bad_patterns(tmp_path: Path) -> None:
    new_project(tmp_path / "a")
    _write(tmp_path, ["[z-a]"])
    with pytest.raises(ProjectError) as caught:
        workspace.remove_member(tmp_path, tmp_path / "a")
    assert caught.value.code is ErrorCode.INVALID_CONFIG


def test_members_are_matched_by_re2_whatever_pathspec_would_pick(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pathspec's default engine is the best it finds, and Python's ``re`` when it finds no
    other (pathspec before 1.0 had only that): ``*a*a*a*a*a*a*a*a*b`` against one name of
    60 letters took it a minute. Here pathspec's default is Python's, which must not run."""
    from pathspec._backends import agg

    class PythonRe:
        def __init__(self, *args: object) -> None:
            raise AssertionError("workspace patterns matched by Python's backtracking re")

    monkeypatch.setattr(agg, "_BEST_BACKEND", "simple")
    monkeypatch.setattr(agg, "SimpleGiBackend", PythonRe)
    new_project(tmp_path / ("a" * 60))
    new_project(tmp_path / ("a" * 8 + "b"))
    _write(tmp_path, ["*a" * 8 + "*b"])
    found = workspace.find_workspace(tmp_path, root=tmp_path)
    assert [m.name for m in found.members] == ["aaaaaaaab"]


def test_sync_names_the_refused_pattern(tmp_path: Path) -> None:
    """The real command: an invalid range used to end ``INTERNAL_ERROR`` (``re.error``)."""
    new_project(tmp_path / "a")
    _write(tmp_path, ["a", "[z-a]"])
    done = run_splice("--json", "sync", cwd=tmp_path)
    assert done.code == 2, (done.stdout, done.stderr)
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "INVALID_CONFIG", error
    assert "members: a pattern cannot be compiled" in error["message"]


def test_a_member_pattern_no_walk_reaches_is_refused(tmp_path: Path) -> None:
    """``members`` naming a hidden directory, ``node_modules`` or ``..`` matched nothing:
    sync said ``1 project(s): 0 failed`` and those projects were never synced."""
    for rel in ("packages/a", ".tools/x"):
        new_project(tmp_path / rel)
    _write(tmp_path, ["packages/*", ".tools/x"])
    done = run_splice("--json", "sync", cwd=tmp_path)  # the real command
    assert done.code == 2, (done.stdout, done.stderr)
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "INVALID_CONFIG", error
    assert "members: '.tools/x' names '.tools', never entered" in error["message"], error
    pyproject = tmp_path / "pyproject.toml"
    for pattern, named in [
        ("vendor/node_modules/*", "node_modules"),
        ("packages/.*", ".*"),
        ("packages/\\.cache", "\\.cache"),
        ("../shared", ".."),
    ]:
        with pytest.raises(ProjectError) as refused:
            workspace._config_of(pyproject, _toml(["packages/*", pattern]))
        assert refused.value.code is ErrorCode.INVALID_CONFIG
        assert f"members: {pattern!r} names {named!r}" in refused.value.message
    read = workspace._config_of(pyproject, _toml(["!packages/.cache", "./packages/a", "."]))
    assert read is not None and read.members == ("!packages/.cache", "./packages/a", ".")
