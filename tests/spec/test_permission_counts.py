"""What a hostile manifest's permission lists cost every reader (docs/compatibility.md#permissions).

A manifest is read from outside by ``splice validate``/``pack``, by a client adding it from a
registry and by a registry it is published to: each entry was checked against the project's
state, so 200,000 ``fs.read`` entries (1.7 MB) cost 4 s of CPU there, and 7,900 entries of
128 names (a 2 MiB manifest) 9.8 s to validate, 13 s of a served registry's publish and 77 s
of a client's ``splice add``.
"""

from __future__ import annotations

import json
import time

import pytest

from splice_build.errors import ErrorCode, SpecError
from splice_build.spec.manifest import Manifest
from splice_build.spec.permissions import Permissions
from testing.manifests import MOST_ENTRIES as MOST
from testing.manifests import deep_grants, manifest_dict

# One list at a time, as a manifest names it, with an entry maker.
LISTS = {
    "fs.read": lambda i: f"d{i}",
    "fs.write": lambda i: f"d{i}",
    "network": lambda i: f"h{i}.example.com",
    "env": lambda i: f"V{i}",
    "capabilities": lambda i: "web.search",
}


def _permissions(where: str, count: int) -> dict[str, object]:
    entries = [LISTS[where](i) for i in range(count)]
    if where.startswith("fs."):
        return {"fs": {where.removeprefix("fs."): entries}}
    return {where: entries}


@pytest.mark.parametrize("where", LISTS)
def test_each_list_holds_at_most_1000_entries(where: str) -> None:
    Permissions.from_json(_permissions(where, MOST))
    with pytest.raises(SpecError) as caught:
        Permissions.from_json(_permissions(where, MOST + 1))
    assert caught.value.code == ErrorCode.INVALID_MANIFEST
    assert caught.value.details == (f"permissions.{where}: at most 1000 entries",)


def test_200000_read_grants_are_refused_before_any_is_checked() -> None:
    """main: valid, after 4 s of CPU (each entry judged against the project's state)."""
    grants = [f"{i:x}" for i in range(200_000)]
    text = json.dumps(manifest_dict(permissions={"fs": {"read": grants}}))
    started = time.process_time()
    with pytest.raises(SpecError) as caught:
        Manifest.from_json(text)
    assert time.process_time() - started < 1.0
    assert caught.value.code == ErrorCode.INVALID_MANIFEST
    assert caught.value.details == ("permissions.fs.read: at most 1000 entries",)


def test_deep_grants_cost_their_length_not_its_square() -> None:
    """1,000 grants of 128 names each: every name of a grant was folded once per directory
    above it (project_state.RunMemo.fold made each parent path), 1.1 s of CPU on main."""
    grants = deep_grants()
    raw = manifest_dict(permissions={"fs": {"read": grants}})
    started = time.process_time()
    manifest = Manifest.from_dict(raw)
    assert time.process_time() - started < 0.5
    assert manifest.permissions.fs_read == tuple(grants)
