"""JavaScript's ``Number(text)`` for strings: what the TypeScript Splice does with query
parameters (``GET /packages/search?limit=``) and with ``splice run key=value`` numbers.

ECMAScript's StringToNumber: JavaScript whitespace and line terminators around the text are
ignored; nothing left is 0; ``0x``/``0o``/``0b`` integers (no sign) are read in their base;
otherwise an optional sign and either ``Infinity`` or ASCII decimal digits with an optional
fraction and exponent (``5.``, ``.5``, ``1e2``); anything else is NaN. Numeric separators
(``1_000``), ``inf``, ``nan`` and non-ASCII digits are NaN, unlike Python's ``float()``.
"""

from __future__ import annotations

import re

from splice_build.spec.js_text import js_trim

# Possessive: no run of digits is ever given back. (The former ``[0-9]+\.?[0-9]*`` could split
# one run of digits between its two parts in every way, each tried again when the text did not
# end there: ``GET /packages/search?limit=`` with 60,000 digits and a "!" took the registry
# 75 s of CPU.)
_DECIMAL = re.compile(r"[+-]?(?:Infinity|(?:[0-9]++(?:\.[0-9]*+)?|\.[0-9]++)(?:[eE][+-]?[0-9]++)?)")
_PREFIXED = re.compile(r"0(?:[xX](?P<x>[0-9a-fA-F]+)|[oO](?P<o>[0-7]+)|[bB](?P<b>[01]+))")
_BASES = {"x": 16, "o": 8, "b": 2}


def js_number(text: str) -> float:
    """``Number(text)`` as a float (NaN, infinities and -0.0 included)."""
    stripped = js_trim(text)
    if stripped == "":
        return 0.0
    prefixed = _PREFIXED.fullmatch(stripped)
    if prefixed is not None:
        base = next(name for name, digits in prefixed.groupdict().items() if digits)
        try:
            return float(int(prefixed[base], _BASES[base]))
        except OverflowError:  # more than a double holds: JavaScript rounds it to Infinity
            return float("inf")
    if _DECIMAL.fullmatch(stripped) is None:
        return float("nan")
    # float() reads every form the pattern admits ("5.", ".5", "+Infinity") as JavaScript does.
    return float(stripped)
