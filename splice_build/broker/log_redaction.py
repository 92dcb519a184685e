"""Keep provider keys out of third-party log records.

urllib3 logs request URLs, whose path and query may hold a key (``ROBINHOOD_RPC_URL``): every
request line at DEBUG (``"POST /v2/<key>?apikey=<key> HTTP/1.1"``), and at WARNING, which an
application that configures logging shows, a response head it cannot parse (``Failed to
parse headers (url=https://<host>/v2/<key>...)``, with a traceback) or a certificate that does
not match the host (whose labels may be a key). One process-wide filter, on every logger of
urllib3 (a logger's filters see only its own records, not those of the loggers below it),
redacts the exact values of every broker's keys from the message and the traceback.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from splice_build.security.redact import redact

_PACKAGE = "urllib3"


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
            if record.exc_info and not record.exc_text:
                # The traceback quotes the exception (a head urllib3 could not parse: the
                # server's header lines, which may echo the key). Formatters print exc_text
                # instead when it is set, so it is set only when something was redacted.
                text = logging.Formatter().formatException(record.exc_info)
                redacted = redact(text, values)
                if redacted != text:
                    record.exc_text = redacted
        return True


_FILTER = _RedactingFilter()
_install_lock = threading.Lock()


def _package_loggers() -> list[logging.Logger]:
    """Every logger of urllib3: each of its modules makes its own when it is imported, and
    importing urllib3 imports all those a request goes through (``requests`` adds none)."""
    import urllib3  # noqa: F401  (its import creates the loggers)

    found = logging.Logger.manager.loggerDict
    return [
        logger
        for name, logger in list(found.items())
        if (name == _PACKAGE or name.startswith(_PACKAGE + "."))
        and isinstance(logger, logging.Logger)
    ]


def protect(values: Iterable[str]) -> None:
    """Redact ``values`` from urllib3's log records from now on."""
    _FILTER.add(values)
    with _install_lock:
        for logger in _package_loggers():
            logger.addFilter(_FILTER)  # once: a logger keeps a filter it already has
