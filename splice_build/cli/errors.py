"""One place turns exceptions into exit codes and error output (pre-commit's error_handler)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from splice_build.cli.output import Output
from splice_build.errors import EXIT_FAILED, ErrorCode, SpliceError

EXIT_INTERRUPTED = 130


class Exit(Exception):
    """Carries the exit code out of the ``error_handler`` block."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def report_error(out: Output, exc: SpliceError) -> int:
    """Print a SpliceError the way every command does and return its exit code."""
    if out.json_mode:
        out.error_json(exc.to_dict())
    else:
        out.error(exc.message, exc.details, exc.hint)
    return exc.exit_code


def _write_crash_log(home: Path, exc: BaseException) -> Path | None:
    # Only a crash needs these (lazy: every command imports this module).
    import datetime as _dt
    import platform
    import traceback

    from splice_build import __version__

    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S")
    path = home / "logs" / f"crash-{stamp}-{os.getpid()}.log"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = (
            f"splice {__version__}\npython {sys.version}\nplatform {platform.platform()}\n"
            f"argv {sys.argv!r}\n\n" + "".join(traceback.format_exception(exc))
        )
        from splice_build.security.redact import redact

        # backslashreplace: argv and messages may hold undecodable bytes (surrogates)
        path.write_text(redact(text), encoding="utf-8", errors="backslashreplace")
    except OSError:
        return None
    return path


@contextlib.contextmanager
def error_handler(out: Output, *, home: Path, verbose: bool) -> Iterator[None]:
    """Map SpliceError → its exit code, ^C → 130, anything else → 1 with a crash log.

    Under ``--json`` every failure, unexpected ones included, is one error document on
    stdout (docs/cli.md#exit-codes-and-errors).
    """
    try:
        yield
    except SpliceError as exc:
        raise Exit(report_error(out, exc)) from exc
    except KeyboardInterrupt as exc:
        _report(out, ErrorCode.INTERRUPTED, "interrupted")
        raise Exit(EXIT_INTERRUPTED) from exc
    except BrokenPipeError as exc:
        raise Exit(EXIT_FAILED) from exc
    except Exception as exc:
        log = _write_crash_log(home, exc)
        hint = f"a report was written to {log}" if log else None
        message = f"unexpected failure: {type(exc).__name__}: {exc}"
        _report(out, ErrorCode.INTERNAL_ERROR, message, hint)
        if verbose:
            import traceback

            from splice_build.security.redact import redact

            out.info(redact("".join(traceback.format_exception(exc))))
        raise Exit(EXIT_FAILED) from exc


def _report(out: Output, code: ErrorCode, message: str, hint: str | None = None) -> None:
    """A failure that is not a SpliceError: its JSON document, or the human error block."""
    if out.json_mode:
        out.error_json({"code": str(code), "message": message, **({"hint": hint} if hint else {})})
    else:
        out.error(message, hint=hint)
