"""Time as the registry records it: ISO 8601 UTC with milliseconds, like JavaScript's toISOString."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], float]  # seconds since the epoch; tests pass a fixed or stepping clock


def system_clock() -> float:
    return time.time()


def iso(ts: float) -> str:
    moment = datetime.fromtimestamp(ts, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
