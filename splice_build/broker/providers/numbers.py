"""Market numbers as providers send them: JSON numbers or decimal strings (``"1.25"``)."""

from __future__ import annotations

import math
from typing import Any


def finite_number(value: Any) -> float | None:
    """``value`` as a finite float, or None: ``float()`` also reads ``"NaN"``, ``"inf"`` and
    ``"1e999"``, which have no JSON form and could not be sent back to the tool."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None
