"""The only code that writes to stdout or stderr.

Results go to stdout (one JSON document under ``--json``); progress, warnings and errors go
to stderr. Error text is redacted before it is written. Every human line passes through
``_shown`` (terminal_safe, docs/security.md#terminal-output) before Splice adds its own colour
codes, so no tool-, manifest- or registry-controlled text reaches the terminal raw; a result's
text is rendered from its data with every string made one line, and an error's message,
details and hint, an info, progress or warning message, are one line each, so such text
cannot forge a line either. JSON documents keep every value exactly, but a code point a
terminal would act on or hide is written as a JSON escape such as ``\\u202e`` (JSON itself escapes
only the C0 controls).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from typing import Any, TextIO

# The install pipeline's steps per package (docs/compatibility.md#install-pipeline), in order.
PROGRESS_STEPS = ("resolving", "downloading", "verifying", "installing")


def _redact(text: str) -> str:
    from splice_build.security.redact import redact

    return redact(text)


def _redacted(value: Any) -> Any:
    """``value`` with every string in it redacted: a JSON document is redacted before it is
    serialised, never as text (a pattern ending at an escaped quote would take the backslash
    of ``\\"`` and leave text that does not parse)."""
    if isinstance(value, str):
        return _redact(value)
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_redacted(item) for item in value]
    return value


def _shown(text: str) -> str:
    from splice_build.security.terminal import terminal_safe

    return terminal_safe(text)


def _json_shown(document: str) -> str:
    from splice_build.security.terminal import json_terminal_safe

    return json_terminal_safe(document)


def json_for_people(value: Any) -> str:
    """``value`` as indented JSON a command prints for people (``splice run``'s output): it
    parses back to ``value``, and ``Output`` then finds nothing left to escape in it, because
    every code point a terminal would act on or hide is already its JSON escape (``\\u009b``),
    not the ``\\x9b`` of text, which no JSON parser reads."""
    import json

    return _json_shown(json.dumps(value, indent=2, ensure_ascii=False))


def _line(text: str) -> str:
    """``text`` shown on one line (security/terminal.py ``one_line``)."""
    from splice_build.security.terminal import one_line

    return one_line(text)


class Output:
    def __init__(
        self,
        *,
        json_mode: bool = False,
        color: bool = False,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        live: bool | None = None,
    ) -> None:
        self.json_mode = json_mode
        self.color = color
        self._stdout = stdout or sys.stdout
        self._stderr = stderr or sys.stderr
        # On a terminal, progress redraws one status line (a bar per package step) instead of
        # scrolling; anywhere else (pipes, CI logs) every step is its own line.
        self.live = self._stderr.isatty() if live is None else live
        self._status_shown = False
        # Under --json stdout holds one document: once the result is written, a later
        # failure (a server stopped by a signal after printing its address) is text on stderr.
        self._answered = False

    # results -----------------------------------------------------------------------------
    def result(self, data: Any, text: str | Callable[[Any], str] | None = None) -> None:
        """Print the command's result: JSON under ``--json`` (or without a text form; for people
        too that is JSON that parses to ``data``, each hidden code point as its JSON escape).

        A callable ``text`` renders the lines people read from ``data`` as given to it: a
        copy in which every string is one line (``one_line_fields``), so a registry's or a
        manifest's field (a description, a publisher, a license) can never draw a line of
        its own, such as a fake ``permissions: none`` under the real heading. Command text
        built from anything but Splice's own words goes through such a callable.
        """
        if self.json_mode or text is None:
            from splice_build.spec.json_text import dumps

            # Exact, and JSON for people too: a hidden code point is its JSON escape.
            shown = _json_shown(dumps(data, indent=2))
            self._answered = self.json_mode  # first: a signal may end the write's last call
            self._write(self._stdout, shown)
            return
        if callable(text):
            from splice_build.security.terminal import one_line_fields

            rendered = text(one_line_fields(data))
        else:
            rendered = text
        if rendered:
            self._write(self._stdout, _shown(rendered))

    # human lines on stderr -------------------------------------------------------------------
    def info(self, message: str) -> None:
        """One line on stderr (``one_line``), whatever the message quotes."""
        self._write(self._stderr, _line(message))

    def info_lines(self, lines: Iterable[str]) -> None:
        """Several lines on stderr, each shown as one line (a tool's logs, a traceback)."""
        self._write(self._stderr, "\n".join(_line(line) for line in lines))

    def progress(self, message: str, *, step: str | None = None) -> None:
        """A progress line; ``step`` (resolving … installing) draws a bar on a terminal.
        None under ``--json``: a program reads the document, and the lines only filled its
        stderr (a CI log); the TypeScript CLI prints none there either. Warnings still go.

        One line (``one_line``): it may quote a registry's answer before it is checked (the
        integrity being verified), and a status line is redrawn in place."""
        if self.json_mode:
            return
        message = _line(message)
        if not self.live:
            self._write(self._stderr, message)
            return
        bar = ""
        if step in PROGRESS_STEPS:
            done = PROGRESS_STEPS.index(step) + 1
            bar = "[" + "#" * done + "." * (len(PROGRESS_STEPS) - done) + "] "
        self._stderr.write(f"\r\x1b[2K{bar}{message}")
        self._stderr.flush()
        self._status_shown = True

    def warn(self, message: str) -> None:
        """One ``warning:`` line (``one_line``), whatever the message quotes."""
        self._write(self._stderr, f"{self._paint('warning:', '33')} {_line(message)}")

    def error(
        self,
        message: str,
        details: Iterable[str] = (),
        hint: str | None = None,
        code: str | None = None,
    ) -> None:
        """The error block: ``error: …`` / ``  - detail`` / ``hint: …`` (redacted).

        Message, details and hint may carry a registry's or a tool's words, so each is shown
        as one line (``one_line``): a line break in a detail cannot draw a ``hint:`` of its own.
        """
        head = _line(_redact(message))
        head = f"{head} ({code})" if code else head
        lines = [head, *(f"  - {_line(_redact(detail))}" for detail in details)]
        if hint:
            lines.append(f"hint: {_line(_redact(hint))}")
        text = "\n".join(lines)
        self._write(self._stderr, f"{self._paint('error:', '31')} {text}")

    def error_json(self, error: dict[str, Any]) -> None:
        """The ``--json`` failure document ``{"ok": false, "error": {...}}`` on stdout, each
        string of ``error`` redacted; after the command's result document, the error block with
        its code on stderr (stdout already holds its one document)."""
        if self._answered:
            details = error.get("details", ())
            self.error(error["message"], details, error.get("hint"), code=error["code"])
            return
        document = {"ok": False, "error": _redacted(error)}
        self._write(self._stdout, _json_shown(json.dumps(document, indent=2, ensure_ascii=False)))

    # plumbing ------------------------------------------------------------------------------
    def _paint(self, text: str, color: str) -> str:
        return f"\x1b[{color}m{text}\x1b[0m" if self.color else text

    def _write(self, stream: TextIO, text: str) -> None:
        if self._status_shown:  # a finished line replaces the status line
            self._stderr.write("\r\x1b[2K")
            self._stderr.flush()
            self._status_shown = False
        stream.write(text if text.endswith("\n") else text + "\n")
        stream.flush()
