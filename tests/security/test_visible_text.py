"""``require_visible_text`` (splice validate / publish) over a hostile manifest: a default
nested deep and thousands of hidden characters cost linear time and a bounded message."""

from __future__ import annotations

import json

import pytest

from splice_build.errors import ErrorCode, SpecError
from splice_build.security.terminal import MAX_TEXT_PROBLEMS, require_visible_text
from splice_build.spec.manifest import Manifest
from testing.manifests import manifest_dict, tool_dict


def _refused(manifest: Manifest) -> list[str]:
    with pytest.raises(SpecError) as caught:
        require_visible_text(manifest)
    assert caught.value.code == ErrorCode.INVALID_MANIFEST
    return list(caught.value.details)


def test_a_deep_default_is_walked_without_copying_its_path() -> None:
    """Each value's path was a tuple copied from its parent's: 20,000 levels took 0.9 s, and
    the million a 2 MB manifest holds more than an hour; the path of a problem is cut."""
    levels = 30_000
    tool = tool_dict(input={"type": "object", "properties": {"a": {"default": 0}}})
    text = json.dumps(manifest_dict(tools=[tool])).replace(
        '"default": 0', '"default": ' + "[" * levels + '"\\u202e"' + "]" * levels
    )
    [problem] = _refused(Manifest.from_json(text))
    path = "tools[0].input.properties.a.default" + "[0]" * levels
    assert problem == (
        f"{path[:500]}…{path[-500:]}: must not contain control or invisible format "
        "characters (found \\u202e)"
    )


def test_problems_stop_at_the_limit() -> None:
    names = {f"p{i}\u200b": {} for i in range(150)}
    manifest = Manifest.from_dict(
        manifest_dict(tools=[tool_dict(input={"type": "object", "properties": names})])
    )
    problems = _refused(manifest)
    assert len(problems) == MAX_TEXT_PROBLEMS + 1 == 101
    assert problems[0] == (
        "tools[0].input.properties.p0\\u200b (key): must not contain control or invisible "
        "format characters (found \\u200b)"
    )
    assert problems[-1] == "further problems are not listed"
