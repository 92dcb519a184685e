"""A logging formatter that redacts every finished line (message, arguments, traceback) and
shows it as the CLI shows someone else's text (docs/security.md#terminal-output).

Installed by the registry server on its one stderr handler (registry/http/server.py), so no
log line of that process leaves unredacted (docs/registry.md, docs/security.md#redaction).
A record can quote what a client sent (the path of a request that failed unexpectedly), so
the message is one line (``one_line``: a newline in it cannot draw a log line of its own)
and a traceback is ``terminal_safe``: no ``ESC``, ``CSI``, bidi override or carriage return
reaches the operator's terminal raw.
"""

from __future__ import annotations

import logging
from types import TracebackType

from splice_build.security.redact import redact
from splice_build.security.terminal import one_line, terminal_safe

_ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None]


class RedactingFormatter(logging.Formatter):
    def formatMessage(self, record: logging.LogRecord) -> str:
        return one_line(super().formatMessage(record))

    def formatException(self, ei: _ExcInfo | tuple[None, None, None]) -> str:
        return terminal_safe(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        return terminal_safe(super().formatStack(stack_info))

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))
