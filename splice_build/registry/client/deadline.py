"""The deadline of one registry request: connect, headers and body together.

A socket timeout bounds each read, not the request: a registry that sends one byte every few
seconds never trips it. Every HTTP request therefore has a budget measured from its start
(``SPLICE_REGISTRY_DEADLINE`` seconds, default 60); a download gets that plus its size over a
minimum rate (``SPLICE_REGISTRY_MIN_RATE`` bytes per second, default 64 KiB/s), the size being
the declared length when the registry gives one within the cap, the cap otherwise; an upload
(``publish``) gets the same for the size of its body (docs/registry.md#deadlines).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping

from splice_build.errors import ErrorCode, ProjectError
from splice_build.records import dataclass
from splice_build.spec.number_text import decimal_number, whole_number

DEADLINE_ENV = "SPLICE_REGISTRY_DEADLINE"
MIN_RATE_ENV = "SPLICE_REGISTRY_MIN_RATE"
DEFAULT_DEADLINE = 60.0
DEFAULT_MIN_RATE = 64 * 1024
MAX_DEADLINE = 24 * 3600.0
MAX_MIN_RATE = 1024**3
MAX_DIGITS = 12  # of each part of a value: room for leading zeros, never thousands of digits


@dataclass(frozen=True)
class Deadlines:
    """``request``: seconds for one request; ``min_rate``: bytes/s a download must keep up."""

    request: float = DEFAULT_DEADLINE
    min_rate: int = DEFAULT_MIN_RATE

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Deadlines:
        """The configured deadlines; a malformed value is ``INVALID_CONFIG`` (never ignored)."""
        request = _seconds(env.get(DEADLINE_ENV, ""))
        rate = _rate(env.get(MIN_RATE_ENV, ""))
        return cls(request, rate)

    def for_download(self, size: int) -> float:
        """The deadline of a request moving ``size`` bytes of artifact, either way."""
        return self.request + size / self.min_rate


def _seconds(text: str) -> float:
    """``SPLICE_REGISTRY_DEADLINE``: ``DIGITS[.DIGITS]`` in ASCII (spec/number_text.py), above 0
    and at most a day; unset or empty is the default."""
    if text == "":
        return DEFAULT_DEADLINE
    value = decimal_number(text, MAX_DIGITS)
    if value is None or not 0 < value <= MAX_DEADLINE:
        raise _invalid(
            DEADLINE_ENV,
            text,
            f"seconds as N or N.N in ASCII digits, above 0 and up to {MAX_DEADLINE:.0f}",
        )
    return value


def _rate(text: str) -> int:
    """``SPLICE_REGISTRY_MIN_RATE``: ASCII digits, a whole number of bytes per second, from 1
    to 1 GiB/s; unset or empty is the default."""
    if text == "":
        return DEFAULT_MIN_RATE
    value = whole_number(text, MAX_DIGITS)
    if value is None or not 0 < value <= MAX_MIN_RATE:
        raise _invalid(
            MIN_RATE_ENV, text, f"whole bytes per second in ASCII digits, from 1 to {MAX_MIN_RATE}"
        )
    return value


def _invalid(name: str, text: str, wanted: str) -> ProjectError:
    return ProjectError(
        ErrorCode.INVALID_CONFIG,
        f"{name} must be {wanted}, not {text[:40]!r}",
        hint="See docs/registry.md#deadlines.",
    )


class Budget:
    """The running deadline of one request; the reading thread may extend it once the size of
    a download is known (up to ``ceiling``, the most it can ever be), the waiting thread reads it."""

    def __init__(self, seconds: float, *, ceiling: float | None = None) -> None:
        self.start = time.monotonic()
        self.seconds = seconds
        self.ceiling = max(seconds, ceiling if ceiling is not None else seconds)
        self._lock = threading.Lock()

    def extend_to(self, seconds: float) -> None:
        with self._lock:
            self.seconds = min(max(self.seconds, seconds), self.ceiling)

    def remaining(self) -> float:
        with self._lock:
            return self.start + self.seconds - time.monotonic()

    def until_ceiling(self) -> float:
        """The longest one socket read may wait: a read that stalls is then always ended by the
        deadline (``REGISTRY_UNAVAILABLE``) and never first by the socket timeout, whatever the
        deadline is extended to later."""
        return self.start + self.ceiling - time.monotonic()

    def expired(self) -> bool:
        return self.remaining() <= 0
