"""A logging formatter that redacts every finished line (message, arguments, traceback).

Installed by the registry server on its one stderr handler (registry/http/server.py), so no
log line of that process leaves unredacted (docs/registry.md, docs/security.md#redaction).
"""

from __future__ import annotations

import logging

from splice_build.security.redact import redact


class RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))
