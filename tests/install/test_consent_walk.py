"""Consent compares every permission of the schema: walked from permissions.schema.json.

For each list the schema holds, a request of one item that every other list already grants
is refused (``PERMISSIONS_NOT_ACCEPTED``, the item's line in the details) and accepted once
granted; ``common`` keeps it only when granted. A list added to the schema without a sample
here fails this test, and one without its ``Permissions`` field fails ``schema_leaves``."""

from __future__ import annotations

import pytest

from splice_build.errors import ErrorCode, InstallError
from splice_build.install.consent import require_consent
from splice_build.spec.permissions import Permissions, common, schema_leaves, ungranted

SAMPLES = {
    ("fs", "read"): "data",
    ("fs", "write"): "out",
    ("network",): "api.example.com",
    ("env",): "API_KEY",
    ("capabilities",): "ai.generate",
}


def _with(leaves: list[tuple[str, ...]]) -> Permissions:
    obj: dict = {}
    for leaf in leaves:
        node = obj
        for key in leaf[:-1]:
            node = node.setdefault(key, {})
        node.setdefault(leaf[-1], []).append(SAMPLES[leaf])
    return Permissions.from_json(obj)


def test_every_list_of_the_schema_has_a_sample() -> None:
    assert set(schema_leaves()) == set(SAMPLES)


@pytest.mark.parametrize("leaf", schema_leaves(), ids=".".join)
def test_a_new_item_of_any_list_needs_consent(leaf: tuple[str, ...]) -> None:
    requested = _with([leaf])
    others = _with([other for other in schema_leaves() if other != leaf and other[0] != "fs"])
    with pytest.raises(InstallError) as info:
        require_consent(requested, others, False, "@acme/tool@2.0.0")
    assert info.value.code is ErrorCode.PERMISSIONS_NOT_ACCEPTED
    assert info.value.details and all(SAMPLES[leaf] in line for line in info.value.details)
    require_consent(requested, requested, False, "@acme/tool@2.0.0")  # granted: no question
    assert ungranted(requested, others) == requested
    assert common(requested, others).is_empty
    assert common(requested, requested) == requested
