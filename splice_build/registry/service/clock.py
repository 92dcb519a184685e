"""The registry's clock; it records times as JavaScript's toISOString writes them
(splice_build/spec/js_date.py)."""

from __future__ import annotations

import time
from collections.abc import Callable

Clock = Callable[[], float]  # seconds since the epoch; tests pass a fixed or stepping clock


def system_clock() -> float:
    return time.time()
