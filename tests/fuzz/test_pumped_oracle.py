"""The pumped timing oracle of the redact and secret_scan targets (fuzz/targets.py).

It must flag a quadratic scan, the kind #8-#10 were (fuzz/README.md), and pass a linear one;
the quick look that lets most inputs skip the slow measurement must not hide the first.
"""

from __future__ import annotations

import re

import pytest

from fuzz.targets import Finding, _timed

# Finding #8's former pattern (class 12, credentials in URLs) on the standard library's
# backtracking engine: from every word start it scans the run of scheme characters, then
# backtracks, so "x-" repeated takes quadratic time.
_BACKTRACKING = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://)")


def test_a_quadratic_scan_is_a_finding() -> None:
    check = _timed("backtracking", _BACKTRACKING.findall)
    with pytest.raises(Finding, match="backtracking: "):
        check(b"x-")


def test_a_linear_scan_is_not() -> None:
    check = _timed("linear", lambda text: text.count("://"))
    check(b"x-")
    check(b"-----\nMII----\nMIIB\n--")
