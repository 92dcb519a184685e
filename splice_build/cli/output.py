"""The only code that writes to stdout or stderr.

Results go to stdout (one JSON document under ``--json``); progress, warnings and errors go
to stderr. Error text is redacted before it is written.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from typing import Any, TextIO


def _redact(text: str) -> str:
    from splice_build.security.redact import redact

    return redact(text)


class Output:
    def __init__(
        self,
        *,
        json_mode: bool = False,
        color: bool = False,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        self.json_mode = json_mode
        self.color = color
        self._stdout = stdout or sys.stdout
        self._stderr = stderr or sys.stderr

    # results -----------------------------------------------------------------------------
    def result(self, data: Any, text: str | Callable[[], str] | None = None) -> None:
        """Print the command's result: JSON under ``--json`` (or without a text form)."""
        if self.json_mode or text is None:
            self._write(self._stdout, json.dumps(data, indent=2, ensure_ascii=False))
            return
        rendered = text() if callable(text) else text
        if rendered:
            self._write(self._stdout, rendered)

    # human lines on stderr -------------------------------------------------------------------
    def info(self, message: str) -> None:
        self._write(self._stderr, message)

    def progress(self, message: str) -> None:
        self._write(self._stderr, message)

    def warn(self, message: str) -> None:
        self._write(self._stderr, f"{self._paint('warning:', '33')} {message}")

    def error(
        self,
        message: str,
        details: Iterable[str] = (),
        hint: str | None = None,
        code: str | None = None,
    ) -> None:
        """The error block: ``error: …`` / ``  - detail`` / ``hint: …`` (redacted)."""
        head = f"{message} ({code})" if code else message
        lines = [f"{self._paint('error:', '31')} {head}"]
        lines += [f"  - {detail}" for detail in details]
        if hint:
            lines.append(f"hint: {hint}")
        self._write(self._stderr, _redact("\n".join(lines)))

    def error_json(self, error: dict[str, Any]) -> None:
        """The ``--json`` failure document ``{"ok": false, "error": {...}}`` on stdout."""
        text = json.dumps({"ok": False, "error": error}, indent=2, ensure_ascii=False)
        self._write(self._stdout, _redact(text))

    # plumbing ------------------------------------------------------------------------------
    def _paint(self, text: str, color: str) -> str:
        return f"\x1b[{color}m{text}\x1b[0m" if self.color else text

    @staticmethod
    def _write(stream: TextIO, text: str) -> None:
        stream.write(text if text.endswith("\n") else text + "\n")
        stream.flush()
