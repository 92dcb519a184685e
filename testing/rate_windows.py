"""The registry's rate limits count in fixed windows (``floor(now / period)``,
splice_build/registry/service/ratelimit.py): a test that expects a limit to bite waits out a
window's last seconds before it starts counting, so its requests fall in one window."""

from __future__ import annotations

import time


def away_from_window_ends(period: int, margin: float = 8) -> None:
    """Return when at least ``margin`` seconds are left in the current ``period`` window."""
    left = period - time.time() % period
    if left < margin:
        time.sleep(left + 0.5)
