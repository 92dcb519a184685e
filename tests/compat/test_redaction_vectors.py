"""Secret redaction as the TypeScript Splice's trust tests state it (tests/compat/redaction.json),
against ``security.redact.redact``."""

from __future__ import annotations

from typing import Any

import pytest

from splice_build.security.redact import REDACTED, redact
from testing.compat import load, params

VECTORS = load("redaction")


@pytest.mark.parametrize("case", params(VECTORS["removed"], label="text"))
def test_removed(case: dict[str, Any]) -> None:
    out = redact(case["text"])
    assert case["secret"] not in out
    assert REDACTED in out


@pytest.mark.parametrize("case", params(VECTORS["unchanged"], label="text"))
def test_unchanged(case: dict[str, Any]) -> None:
    assert redact(case["text"]) == case["text"]


@pytest.mark.parametrize("case", params(VECTORS["exact"], label="text"))
def test_exact_values(case: dict[str, Any]) -> None:
    assert redact(case["text"], case["values"]) == case["expected"]
