"""Keep provider keys out of third-party log records.

urllib3 logs every request line at DEBUG (``"POST /v2/<key>?apikey=<key> HTTP/1.1"``), so a
key carried in an RPC URL would reach any DEBUG log handler. One process-wide filter on
urllib3's connection-pool logger redacts the exact values of every broker's keys.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from splice_build.security.redact import redact

_LOGGERS = ("urllib3.connectionpool",)


class _RedactingFilter(logging.Filter):
    def __init__(self) -> None:
        super().__init__()
        self._values: set[str] = set()
        self._lock = threading.Lock()

    def add(self, values: Iterable[str]) -> None:
        with self._lock:
            self._values.update(values)

    def filter(self, record: logging.LogRecord) -> bool:
        with self._lock:
            values = tuple(self._values)
        if values:
            record.msg = redact(record.getMessage(), values)
            record.args = None
        return True


_FILTER = _RedactingFilter()
_installed = False
_install_lock = threading.Lock()


def protect(values: Iterable[str]) -> None:
    """Redact ``values`` from urllib3's log records from now on (installs the filter once)."""
    global _installed
    _FILTER.add(values)
    with _install_lock:
        if not _installed:
            for name in _LOGGERS:
                logging.getLogger(name).addFilter(_FILTER)
            _installed = True
