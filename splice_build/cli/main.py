"""`splice` entry point: one parser, a flat dispatch, one error handler.

Global options (``--json``, ``--registry``, ``--no-color``, ``--verbose``) may appear before
or after the command word. Exit codes: 0 ok, 1 failed, 2 usage, 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from splice_build.cli import arg_types
from splice_build.cli.registry_of_commands import COMMAND_MODULES
from splice_build.errors import EXIT_USAGE, UsageError

PROG = "splice"


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of printing and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message, hint=f"run `{self.prog} --help` for usage")


def _global_options(*, suppress: bool) -> argparse.ArgumentParser:
    """The global options, shared by the top parser and every subparser."""
    default = argparse.SUPPRESS if suppress else None
    flag_default = argparse.SUPPRESS if suppress else False
    parent = _Parser(add_help=False)
    group = parent.add_argument_group("global options")
    group.add_argument("--json", action="store_true", default=flag_default, help="print JSON")
    group.add_argument(
        "--registry",
        metavar="URL",
        default=default,
        type=arg_types.text,
        help="registry URL or alias (local, embedded)",
    )
    group.add_argument(
        "--no-color", action="store_true", default=flag_default, help="no colour (also NO_COLOR)"
    )
    group.add_argument(
        "--verbose", action="store_true", default=flag_default, help="tracebacks for crashes"
    )
    return parent


def load_commands() -> dict[str, ModuleType]:
    modules = (importlib.import_module(f"splice_build.cli.commands.{m}") for m in COMMAND_MODULES)
    return {module.NAME: module for module in modules}


# Options that take no value, so the word after them can be the command (``--registry`` takes
# one, and argparse accepts any unambiguous prefix of it: anything else means "not sure").
_FLAG_ONLY = frozenset({"--json", "--no-color", "--verbose"})


def _only_command(argv: Sequence[str]) -> dict[str, ModuleType] | None:
    """The one command module ``argv`` names, when that is certain (importing all of them
    for the parser costs more than a short command's own work); else None."""
    for word in argv:
        if word in _FLAG_ONLY:
            continue
        if word.startswith("-"):
            return None
        for name in (word, f"{word}_cmd"):
            if name in COMMAND_MODULES:
                module = importlib.import_module(f"splice_build.cli.commands.{name}")
                return {module.NAME: module} if word == module.NAME else None
        return None
    return None


def build_parser(commands: dict[str, ModuleType]) -> argparse.ArgumentParser:
    from splice_build import __version__

    parser = _Parser(
        prog=PROG,
        description="Install, verify and run sandboxed agent skills.",
        parents=[_global_options(suppress=False)],
    )
    parser.add_argument("-v", "--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="<command>", parser_class=_Parser)
    inherited = _global_options(suppress=True)
    for name, module in commands.items():
        command_parser = sub.add_parser(
            name, help=module.HELP, description=module.HELP, parents=[inherited]
        )
        module.add_arguments(command_parser)
        _text_by_default(command_parser)
    return parser


def _text_by_default(parser: argparse.ArgumentParser) -> None:
    """Every string argument without a type of its own must be UTF-8 text (``arg_types``)."""
    for action in parser._actions:
        if action.type is None and action.nargs != 0:
            action.type = arg_types.text


def _fast_version(argv: Sequence[str]) -> bool:
    """`splice --version` without building the parser (it is on hot paths in scripts)."""
    if list(argv) in (["--version"], ["-v"]):
        from splice_build import __version__

        sys.stdout.write(f"{PROG} {__version__}\n")
        return True
    return False


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if _fast_version(argv):
        return 0

    from splice_build.cli.context import CommandContext
    from splice_build.cli.errors import Exit, error_handler, stop_on_termination
    from splice_build.cli.output import Output

    # Undecodable bytes of file names arrive as surrogates; written with backslashreplace
    # they read as ``\udcff`` (a valid JSON escape) instead of ending the command with a
    # UnicodeEncodeError.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    env = dict(os.environ)
    json_mode = "--json" in argv
    color = sys.stderr.isatty() and "--no-color" not in argv and not env.get("NO_COLOR")
    out = Output(json_mode=json_mode, color=color)
    home = Path(env.get("SPLICE_HOME") or Path.home() / ".splice")
    stop_on_termination()
    try:
        with error_handler(out, home=home, verbose="--verbose" in argv):
            commands = _only_command(argv) or load_commands()
            parser = build_parser(commands)
            args = parser.parse_args(argv) if argv else None
            if args is None or args.command is None:
                if json_mode:
                    raise UsageError("no command given", hint=f"run `{PROG} --help` for usage")
                parser.print_help(sys.stderr)
                return EXIT_USAGE
            module = commands[args.command]
            out.json_mode = bool(args.json)
            ctx = CommandContext(
                json=bool(args.json),
                color=color and not args.no_color,
                verbose=bool(args.verbose),
                registry=args.registry,
                cwd=Path.cwd(),
                env=env,
                home=home,
                interactive=sys.stdin.isatty() and sys.stderr.isatty(),
                out=out,
                project_root=_project_root(Path.cwd()) if module.NEEDS_PROJECT else None,
            )
            code = module.run(args, ctx)
            assert isinstance(code, int), f"BUG: command {args.command} returned {code!r}"
            return code
    except Exit as exit_:
        return exit_.code
    except SystemExit as exit_:  # argparse's --help and --version
        return exit_.code if isinstance(exit_.code, int) else 0
    raise AssertionError("BUG: unreachable")


def _project_root(cwd: Path) -> Path:
    from splice_build.project.project_file import find_project_root

    return find_project_root(cwd)


if __name__ == "__main__":
    raise SystemExit(main())
