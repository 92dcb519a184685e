"""Consent text stays readable for every official skill: each line the prompt shows, and each
line `splice add` prints, is bounded in length and never repeats a parenthetical note."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from splice_build.install.consent import ungranted_lines
from splice_build.registry.official import OfficialSkill, official_skills
from splice_build.spec.manifest import Manifest
from testing.cli import run_splice

LINE_LIMIT = 200  # characters; @splice/web's used to be 455
SKILLS = official_skills()


def _problems(lines: list[str]) -> list[str]:
    """Lines that are too long, and parentheticals said more than once across ``lines``."""
    too_long = [f"{len(line)} characters: {line}" for line in lines if len(line) > LINE_LIMIT]
    notes = [note for line in lines for note in re.findall(r"\([^()]*\)", line)]
    repeated = sorted({f"said {notes.count(n)} times: {n}" for n in notes if notes.count(n) > 1})
    return too_long + repeated


def test_the_check_catches_the_old_composition() -> None:
    note = "(run by Splice with the host's provider keys; the tool gets results, never keys)"
    old = "; ".join(f"host capability: web.{n} {note}" for n in ("search", "extract", "answer"))
    assert len(_problems([old])) == 2  # too long, and the note three times


@pytest.mark.parametrize("skill", SKILLS, ids=[s.package_id for s in SKILLS])
def test_the_consent_prompt_of_each_official_skill_is_readable(skill: OfficialSkill) -> None:
    manifest = Manifest.from_dict(
        json.loads((skill.directory / "manifest.json").read_text("utf-8"))
    )
    lines = ungranted_lines(manifest.permissions, None)
    assert _problems(lines) == []


@pytest.mark.node
def test_splice_add_prints_readable_lines_for_every_official_skill(tmp_path: Path) -> None:
    assert run_splice("init", cwd=tmp_path).code == 0
    ids = [skill.package_id for skill in SKILLS]
    done = run_splice("add", *ids, "--accept-permissions", cwd=tmp_path, timeout=300)
    assert done.code == 0, done.stderr
    # A granted path is the user's: its length is not the text's (pytest's own temporary
    # directories are longer under a parallel run), so it counts as one short word.
    lines = done.stdout.replace(str(tmp_path), "PROJECT").splitlines()
    assert sum(line.startswith("Installed @splice/") for line in lines) == len(ids)
    for line in lines:
        assert _problems([line]) == []


def test_a_declared_host_no_connection_may_use_is_not_asked_as_a_grant() -> None:
    # 0.0.0.0 grants no connection (security/addresses.py is_grantable_literal), yet the
    # prompt listed it as "network: 0.0.0.0" and counted it as a named host.
    from splice_build.spec.permissions import Permissions, summary

    requested = Permissions.from_json({"network": ["0.0.0.0", "0.1.2.3", "127.0.0.1", "a.example"]})
    lines = ungranted_lines(requested, None)
    assert lines == [
        "network (grants no connection: never a connection's peer): 0.0.0.0",
        "network (grants no connection: never a connection's peer): 0.1.2.3",
        "network: 127.0.0.1",
        "network: a.example",
    ]
    assert summary(lines) == "2 named hosts"
