"""Numbers written as text by people or by a remote party: settings, flags and headers.

Python's ``int()`` and ``float()`` read far more than a person means by a number: digits of
any script (``١٢``), ``_`` between digits (``1_0``), a sign, surrounding whitespace, ``nan``,
``inf`` and exponents (``1e3``), and ``int()`` raises on 4,300 digits or more; ``str.isdigit()``
also takes ``²``, which ``int()`` refuses. Every number Splice reads from an environment
variable, a command-line flag or a remote header is therefore first checked here: ASCII
digits only, of a bounded length. Each caller keeps its own range and its own refusal code.
"""

from __future__ import annotations


def is_ascii_digits(text: str) -> bool:
    """``text`` is one or more ASCII digits and nothing else."""
    return text != "" and text.isascii() and text.isdigit()


def whole_number(text: str, max_digits: int) -> int | None:
    """``text`` as an integer when it is 1 to ``max_digits`` ASCII digits, else None."""
    if len(text) > max_digits or not is_ascii_digits(text):
        return None
    return int(text)


def decimal_number(text: str, max_digits: int) -> float | None:
    """``text`` as a number when it is ``DIGITS`` or ``DIGITS.DIGITS``, each part 1 to
    ``max_digits`` ASCII digits (no sign, exponent or whitespace), else None."""
    whole, dot, fraction = text.partition(".")
    if whole_number(whole, max_digits) is None:
        return None
    if dot and whole_number(fraction, max_digits) is None:
        return None
    return float(text)


def capped_count(text: str, cap: int) -> int | None:
    """``text`` as a count of at most ``cap + 1`` (any larger count is just over the cap),
    when it is ASCII digits of any length (leading zeros allowed, as in a ``content-length``);
    None otherwise. The length is checked before ``int()`` reads the digits."""
    if not is_ascii_digits(text):
        return None
    digits = text.lstrip("0") or "0"
    return cap + 1 if len(digits) > len(str(cap)) else min(int(digits), cap + 1)
