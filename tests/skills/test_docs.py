"""docs/skills.md lists exactly the skills this build ships (``official_skills()``, what the
embedded registry publishes): each with its manifest's version, tools and permissions, and a
section that documents every tool; none is called "reserved"."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from splice_build.registry.official import OfficialSkill, official_skills
from splice_build.spec.manifest import Manifest

DOC = Path(__file__).resolve().parents[2] / "docs" / "skills.md"
ROW = re.compile(r"\| `(@splice/[a-z0-9-]+)` \| ([^|]+) \| ([^|]+) \| ([^|]+) \|")
SKILLS = official_skills()


def _table() -> dict[str, tuple[str, str, list[str]]]:
    """package id -> (version, declares, tools) from the table of docs/skills.md."""
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        found = ROW.fullmatch(line.strip())
        if found:
            package, version, declares, tools = (part.strip() for part in found.groups())
            rows[package] = (version, declares, [t.strip("` ") for t in tools.split(",")])
    return rows


def _manifest(skill: OfficialSkill) -> Manifest:
    return Manifest.from_dict(json.loads((skill.directory / "manifest.json").read_text("utf-8")))


def _declared(manifest: Manifest) -> list[str]:
    """Every name a manifest's permissions declare: paths, hosts, variables, capabilities."""
    raw: dict[str, Any] = manifest.to_json().get("permissions") or {}
    fs = raw.get("fs") or {}
    return [
        *fs.get("read", []),
        *fs.get("write", []),
        *raw.get("network", []),
        *raw.get("env", []),
        *raw.get("capabilities", []),
    ]


def test_the_table_lists_every_shipped_skill_and_nothing_else() -> None:
    assert len(SKILLS) >= 8
    assert sorted(_table()) == sorted(skill.package_id for skill in SKILLS)


@pytest.mark.parametrize("skill", SKILLS, ids=[s.package_id for s in SKILLS])
def test_each_row_matches_its_manifest(skill: OfficialSkill) -> None:
    manifest = _manifest(skill)
    version, declares, tools = _table()[skill.package_id]
    assert version == skill.version
    assert tools == [tool.name for tool in manifest.tools]
    names = _declared(manifest)
    if not names:
        assert declares == "nothing"
    for name in names:
        assert name in declares, f"{skill.package_id} declares {name}; the table says {declares}"


@pytest.mark.parametrize("skill", SKILLS, ids=[s.package_id for s in SKILLS])
def test_each_skill_has_a_section_documenting_every_tool(skill: OfficialSkill) -> None:
    text = DOC.read_text(encoding="utf-8")
    assert re.search(rf"^##+ .*{re.escape(skill.package_id)}\b", text, flags=re.M)
    short = skill.package_id.rsplit("/", 1)[1]
    for tool in _manifest(skill).tools:
        assert f"`{short}.{tool.name}`" in text, f"{short}.{tool.name} is not documented"


def test_no_skill_is_called_reserved() -> None:
    assert "not part of this build" not in DOC.read_text(encoding="utf-8")
