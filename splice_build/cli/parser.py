"""The one ``argparse`` parser of ``splice`` (cli/main.py builds it; ``splice help`` too).

Global options (``--json``, ``--registry``, ``--no-color``, ``--verbose``) may appear before
or after the command word.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from types import ModuleType

from splice_build.cli import arg_types
from splice_build.cli.main import PROG
from splice_build.cli.plain import VALUELESS_GLOBAL_FLAGS
from splice_build.cli.registry_of_commands import COMMAND_MODULES
from splice_build.errors import UsageError


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


def only_command(argv: Sequence[str]) -> dict[str, ModuleType] | None:
    """The one command module ``argv`` names, when that is certain (importing all of them
    for the parser costs more than a short command's own work); else None."""
    for word in argv:
        if word in VALUELESS_GLOBAL_FLAGS:
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
