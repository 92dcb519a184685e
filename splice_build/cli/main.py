"""`splice` entry point: one parser (cli/parser.py), a flat dispatch, one error handler.

Exit codes: 0 ok, 1 failed, 2 usage, 130 interrupted. ``splice --version``, ``splice sync``
and ``splice sync --check`` (with value-less global flags), ``splice run <pkg>.<tool>
[key=value…]`` and ``splice install`` with its value-less options skip the parser:
argparse and the command's parser cost more than a no-op sync's own work, and a sixth of a
bare Node start next to a run (issue #22, cli/plain.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from splice_build.errors import EXIT_FAILED, EXIT_USAGE, UsageError

if TYPE_CHECKING:
    from types import ModuleType, SimpleNamespace

    from splice_build.cli.context import CommandContext
    from splice_build.cli.output import Output

PROG = "splice"


def _fast_version(argv: Sequence[str]) -> int | None:
    """`splice --version` without building the parser (it is on hot paths in scripts): its
    exit code, or None for any other command line."""
    if list(argv) not in (["--version"], ["-v"]):
        return None
    from splice_build import __version__

    try:
        sys.stdout.write(f"{PROG} {__version__}\n")
        sys.stdout.flush()
    except BrokenPipeError:  # nobody reads stdout: exit 1 as every command (cli/errors.py)
        return EXIT_FAILED
    return 0


# Allocations between two young-generation collections for the one-shot commands below
# (CPython's default is 700): importing their modules triggers some thirty collections,
# ~2 ms of a cold ``splice run``. Collections still run, so cyclic garbage stays bounded.
_ONE_SHOT_GC_THRESHOLD = 20_000
_ONE_SHOT_COMMANDS = frozenset({"run", "sync"})


def _command_word(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names when only value-less global flags come before it (so no
    option can be taking it as its value); else None (cli/plain.py)."""
    from splice_build.cli.plain import split_command

    split = split_command(argv)
    return None if split is None else split[1]


def _service(command: str | None, argv: Sequence[str]) -> bool:
    """Whether ``argv`` runs a server (``splice mcp``, ``splice registry serve``), before
    the parser says so (cli/errors.py ``Handling``)."""
    if command == "mcp":
        return True
    return command == "registry" and argv[argv.index("registry") + 1 :][:1] == ["serve"]


def _fewer_collections(command: str | None) -> None:
    """Collect less often in a ``run`` or ``sync`` process; long-running commands (``mcp``,
    ``registry serve``) keep the interpreter's thresholds."""
    if command in _ONE_SHOT_COMMANDS:
        import gc

        gc.set_threshold(_ONE_SHOT_GC_THRESHOLD, *gc.get_threshold()[1:])


def _open_standard_descriptors() -> None:
    """Give each closed descriptor 0–2 ``/dev/null`` (and Python a stream on it).

    A process started with, say, stdout closed would otherwise hand that number to the next
    pipe or socket it opens, and a sandbox child would find its job channel where its stdout
    should be. Three ``fstat`` calls when nothing is closed.
    """
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            if null != fd:  # the lowest free number is ``fd`` unless a lower one was closed too
                os.dup2(null, fd)
                os.close(null)
            if getattr(sys, name) is None:
                setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))  # noqa: SIM115


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _open_standard_descriptors()
    version = _fast_version(argv)
    if version is not None:
        return version
    command = _command_word(argv)
    _fewer_collections(command)

    from splice_build.cli.errors import Exit, error_handler, stop_on_termination
    from splice_build.cli.output import Output

    # Undecodable bytes of file names arrive as surrogates; written with backslashreplace
    # they read as ``\udcff`` (a valid JSON escape) instead of ending the command with a
    # UnicodeEncodeError.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    env = dict(os.environ)
    # What the parser will say of the global flags, for what it reports while it reads the
    # line (usage errors, --help, --version): a flag counts before ``--``, not as an operand.
    options = argv[: argv.index("--")] if "--" in argv else argv
    json_mode = "--json" in options
    # A terminal that acts on escape sequences: TERM=dumb (an editor's shell buffer) showed
    # the status line's redraw and the colours as raw ``^[[2K`` and ``^[[31m``.
    terminal = sys.stderr.isatty() and env.get("TERM") != "dumb"
    color = terminal and "--no-color" not in options and not env.get("NO_COLOR")
    out = Output(json_mode=json_mode, color=color, live=terminal)
    verbose = "--verbose" in options
    stop_on_termination()
    try:
        with error_handler(out, home=None, verbose=verbose) as handling:
            handling.service = _service(command, argv)
            from splice_build.project.home import SpliceHome

            # One reading of SPLICE_HOME for every command (``~`` expanded, made absolute).
            home = SpliceHome.from_env(env).path
        with error_handler(out, home=home, verbose=verbose) as handling:
            handling.service = _service(command, argv)
            # Only a sync command line imports the sync command.
            code = _plain_sync(argv, out, env=env, home=home) if command == "sync" else None
            if code is not None:
                return code
            plain = _plain_command(argv, command)
            if plain is not None:
                module, args = plain
            else:
                from splice_build.cli.parser import Shown, build_parser, load_commands, only_command

                commands = only_command(argv) or load_commands()
                parser = build_parser(commands, json=json_mode)
                try:
                    args = parser.parse_args(argv) if argv else None
                except Shown as shown:  # --help or --version under --json
                    out.result(shown.document)
                    return 0
                if args is None or args.command is None:
                    if json_mode:
                        raise UsageError("no command given", hint=f"run `{PROG} --help` for usage")
                    parser.print_help(sys.stderr)
                    return EXIT_USAGE
                module = commands[args.command]
                handling.service = args.command == "mcp" or (
                    args.command == "registry" and args.action == "serve"
                )
            from splice_build.cli.context import CommandContext

            cwd = _working_directory()  # after the parser: --help and its errors need none
            out.json_mode = bool(args.json)
            ctx = CommandContext(
                json=bool(args.json),
                color=color and not args.no_color,
                verbose=bool(args.verbose),
                registry=args.registry,
                cwd=cwd,
                env=env,
                home=home,
                interactive=sys.stdin.isatty() and sys.stderr.isatty(),
                out=out,
                project_root=_project_root(cwd) if module.NEEDS_PROJECT else None,
            )
            code = _run(module, args, ctx)
            assert isinstance(code, int), f"BUG: command {args.command} returned {code!r}"
            return code
    except Exit as exit_:
        return exit_.code
    except SystemExit as exit_:  # argparse's --help and --version
        return exit_.code if isinstance(exit_.code, int) else 0
    raise AssertionError("BUG: unreachable")


def _run(module: ModuleType, args: Any, ctx: CommandContext) -> int:
    """``module.run``, whose ``USAGE`` errors without a hint of their own point to the
    command's help: `splice registry admin create-user` said only "wrong number of
    arguments", `splice keys trust` its usage line, as the parser's own errors never do."""
    from splice_build.errors import ErrorCode, SpliceError

    try:
        return module.run(args, ctx)
    except SpliceError as exc:
        if exc.code is ErrorCode.USAGE and not exc.hint:
            exc.hint = f"run `{PROG} {module.NAME} --help` for usage"
        raise


def _working_directory() -> Path:
    """The directory the command runs in, read once a command line is known to run a
    command; ``USAGE`` when it was removed (``os.getcwd`` fails), which every relative path
    and the project search need. Read before the parser, it made ``splice --help`` and the
    parser's own usage errors say the directory no longer exists."""
    try:
        return Path.cwd()
    except FileNotFoundError:
        raise UsageError(
            "the current directory no longer exists",
            hint="change to an existing directory and run the command again",
        ) from None


def _plain_sync(argv: Sequence[str], out: Output, *, env: dict[str, str], home: Path) -> int | None:
    """``splice sync [--check]`` without the parser, when ``argv`` says nothing else."""
    from splice_build.cli.commands import sync

    check = sync.plain_check(argv)
    if check is None:
        return None
    from splice_build.tasks.sync import SyncOptions

    options = SyncOptions(check=check)
    cwd = _working_directory()
    return sync.sync(out, cwd=cwd, env=env, home=home, registry=None, root=None, options=options)


# Commands that read some command lines without the parser (their ``plain_args``).
_PLAIN_COMMANDS = frozenset({"run", "install"})


def _plain_command(
    argv: Sequence[str], command: str | None
) -> tuple[ModuleType, SimpleNamespace] | None:
    """The command and its arguments without the parser, when the parse is certain (the
    command's ``plain_args``, cli/plain.py); else None."""
    if command not in _PLAIN_COMMANDS:
        return None
    import importlib

    module = importlib.import_module(f"splice_build.cli.commands.{command}")
    args = module.plain_args(argv)
    return None if args is None else (module, args)


def _project_root(cwd: Path) -> Path:
    from splice_build.project.project_file import find_project_root

    return find_project_root(cwd)


def entry() -> NoReturn:
    """The console script: ``main()``, then the end of a normal exit without its teardown.

    What a normal exit does for the program still happens, in its order: non-daemon threads
    are joined, ``atexit`` handlers run (the sandbox's reaper, ``weakref.finalize`` clean-ups)
    and the standard streams are flushed. What is skipped is the interpreter's own
    finalisation (clearing every module, collecting every object), which costs a cold
    ``splice run`` several milliseconds and writes nothing: files are written through
    context managers and atomic renames (issue #22 item 3).
    """
    import atexit
    import contextlib
    import threading

    try:
        code = main()
    except KeyboardInterrupt:
        # ^C in the command's first milliseconds, before its error handler began (the
        # standard streams, the command word): nothing was done yet. It was a traceback and
        # exit 1; it is the exit of an interrupted command, without a report of work undone.
        code = 130
    # ^C, SIGTERM or SIGHUP (cli/errors.py ``Terminated``) while a thread of the command keeps
    # it from ending: the command has finished and said so, and its exit code stands (a
    # server's SIGTERM stays 0); the thread ends with the process. It was a traceback, and
    # death by the signal.
    with contextlib.suppress(KeyboardInterrupt):
        threading._shutdown()  # type: ignore[attr-defined]  # what Py_FinalizeEx does first
    # The answer goes out before the clean-ups; from then on a stop signal ends the process at
    # once with the command's code. It was raised into the ``atexit`` handler it landed in
    # (closing a warm pool, bounded only by a 10 s join): "Exception ignored in atexit
    # callback" and a traceback after the command had answered, the handler half done.
    with contextlib.suppress(KeyboardInterrupt):  # a signal cuts a stuck write short
        code = _flushed(code)
    _stop_signals_exit(code)
    atexit._run_exitfuncs()
    os._exit(_flushed(code))


def _flushed(code: int) -> int:
    """``code`` once the standard streams are flushed; ``EXIT_FAILED`` for a success whose
    output could not be written (closed or broken pipe, as the error handler's: Python's own
    exit says 120, which docs/cli.md has not)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None when the descriptor was closed at start-up
                stream.flush()
        except (OSError, ValueError):
            code = code or EXIT_FAILED
    return code


def _stop_signals_exit(code: int) -> None:
    """SIGINT, SIGTERM and SIGHUP end the process with ``code``, each unless ignored
    (a ``nohup``'s SIGHUP stays ignored, as ``stop_on_termination`` leaves it)."""
    import _signal  # the C module, as cli/errors.py: ``signal`` builds three enums

    def end(signum: int, frame: object) -> None:
        os._exit(code)

    for signum in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP):
        if _signal.getsignal(signum) not in (_signal.SIG_IGN, None):
            _signal.signal(signum, end)


if __name__ == "__main__":
    entry()
