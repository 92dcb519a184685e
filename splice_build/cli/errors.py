"""One place turns exceptions into exit codes and error output (pre-commit's error_handler)."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

from splice_build.cli.output import Output
from splice_build.errors import EXIT_FAILED, ErrorCode, SpliceError, storage_error


class Terminated(KeyboardInterrupt):
    """SIGTERM (or SIGHUP) arrived: stop the way ^C stops, so every ``finally`` runs.

    Without a handler Python dies at once; with it an install in progress rolls back or
    commits as for ^C (docs/lifecycle.md#failure-and-recovery) and the exit code is 128 + the
    signal's number.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def stop_on_termination() -> None:
    """Turn SIGTERM and SIGHUP into :class:`Terminated` in the main thread, unless the
    process was started ignoring it (``nohup splice mcp --http &``: the terminal's hangup at
    logout stopped the server nohup was there to keep; Python keeps an ignored SIGINT
    ignored the same way)."""

    def handler(signum: int, frame: object) -> None:
        raise Terminated(signum)

    # The C module: ``signal`` builds three enums when imported (~0.5 ms of every command);
    # only an interrupted command needs a signal's name.
    import _signal

    if threading.current_thread() is threading.main_thread():
        for signum in (_signal.SIGTERM, getattr(_signal, "SIGHUP", None)):
            if signum is not None and _signal.getsignal(signum) != _signal.SIG_IGN:
                _signal.signal(signum, handler)


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


# Options whose value is a credential (``splice login --token``): a report quotes argv, and
# the value has no format ``redact`` would know.
SECRET_OPTIONS = ("--token",)
_SHORTEST_ABBREVIATION = 3  # "--t": argparse takes any unique prefix of a long option


def _secret_option(arg: str) -> bool:
    """Whether ``arg`` (before any ``=``) names a secret option, in full or abbreviated."""
    name = arg.partition("=")[0]
    return len(name) >= _SHORTEST_ABBREVIATION and any(o.startswith(name) for o in SECRET_OPTIONS)


def _shown_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """``argv`` with the value of each secret option replaced, and the values replaced
    (``--token T``, ``--token=T``, ``--tok=T``…; after ``--`` nothing is an option)."""
    from splice_build.security.redact import REDACTED

    shown: list[str] = []
    secrets: list[str] = []
    expect_value = False
    for index, arg in enumerate(argv):
        if expect_value:
            secrets.append(arg)
            shown.append(REDACTED)
            expect_value = False
        elif arg == "--":
            shown.extend(argv[index:])
            break
        elif arg.startswith("--") and _secret_option(arg):
            name, equals, value = arg.partition("=")
            if equals:
                secrets.append(value)
                shown.append(f"{name}={REDACTED}")
            else:
                shown.append(arg)
                expect_value = True
        else:
            shown.append(arg)
    return shown, secrets


def _write_crash_log(home: Path, exc: BaseException) -> Path | None:
    # Only a crash needs these (lazy: every command imports this module).
    import datetime as _dt
    import platform
    import traceback

    from splice_build import __version__

    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%S")
    path = home / "logs" / f"crash-{stamp}-{os.getpid()}.log"
    from splice_build.project.home_owner import home_problem

    if home_problem(home) is not None:
        return None  # another user's home: they would choose where the report goes, and read it
    try:
        from splice_build.project.home import make_private_dirs

        make_private_dirs(path.parent)
        argv, secrets = _shown_argv(sys.argv)
        text = (
            f"splice {__version__}\npython {sys.version}\nplatform {platform.platform()}\n"
            f"argv {argv!r}\n\n" + "".join(traceback.format_exception(exc))
        )
        from splice_build.project.atomic import atomic_write_bytes
        from splice_build.security.redact import redact

        # backslashreplace: argv and messages may hold undecodable bytes (surrogates)
        data = redact(text, secrets).encode("utf-8", errors="backslashreplace")
        atomic_write_bytes(path, data, mode=0o600)
    except OSError:
        return None  # e.g. the disk is full: no report rather than an empty one
    return path


class Handling:
    """What ``error_handler`` knows of the command it runs. ``service``: a server (``splice
    mcp``, ``splice registry serve``), whose normal stop SIGTERM is whenever it comes
    (splice_build/stopping.py), its start-up included: exit 0, nothing reported."""

    service: bool = False


@contextlib.contextmanager
def error_handler(out: Output, *, home: Path | None, verbose: bool) -> Iterator[Handling]:
    """Map SpliceError → its exit code, ^C → 130, anything else → 1 with a crash log (under
    ``home``'s ``logs/``; none while ``home`` is not known yet).

    Under ``--json`` every failure, unexpected ones included, is one error document on
    stdout (docs/cli.md#exit-codes-and-errors).
    """
    handling = Handling()
    try:
        try:
            yield handling
        except SpliceError as exc:
            raise Exit(report_error(out, exc)) from exc
        except KeyboardInterrupt as exc:
            import signal

            from splice_build.stopping import signals_held

            signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
            if signum == signal.SIGTERM and handling.service:
                raise Exit(0) from exc
            stopped = SpliceError(
                ErrorCode.INTERRUPTED,
                f"interrupted by {signal.Signals(signum).name}",
                # A server stopped as it stops for SIGTERM: nothing is left to finish or undo.
                hint=None
                if handling.service
                else "run the command again: it finishes or undoes what was interrupted",
            )
            with signals_held():  # a second ^C raised into the report ended it with a traceback
                report_error(out, stopped)
            raise Exit(128 + signum) from exc
        except BrokenPipeError as exc:
            raise Exit(EXIT_FAILED) from exc
        except OSError as exc:
            coded = storage_error(exc)
            if coded is None:
                _crash(out, home, verbose, exc)
            raise Exit(report_error(out, coded)) from exc
        except Exception as exc:
            _crash(out, home, verbose, exc)
    except BrokenPipeError as exc:
        # The report itself found no reader (`splice --json list --bogus | head -0`): it was
        # a traceback; it is the exit of every command whose output nobody reads.
        raise Exit(EXIT_FAILED) from exc


def _crash(out: Output, home: Path | None, verbose: bool, exc: Exception) -> NoReturn:
    log = None if home is None else _write_crash_log(home, exc)
    hint = f"a report was written to {log}" if log else None
    message = f"unexpected failure: {type(exc).__name__}: {exc}"
    _report(out, ErrorCode.INTERNAL_ERROR, message, hint)
    if verbose:
        import traceback

        from splice_build.security.redact import redact

        out.info_lines(redact("".join(traceback.format_exception(exc))).splitlines())
    raise Exit(EXIT_FAILED) from exc


def _report(out: Output, code: ErrorCode, message: str, hint: str | None = None) -> None:
    """A failure that is not a SpliceError: its JSON document, or the human error block."""
    if out.json_mode:
        out.error_json({"code": str(code), "message": message, **({"hint": hint} if hint else {})})
    else:
        out.error(message, hint=hint)
