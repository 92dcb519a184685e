"""The one ``argparse`` parser of ``splice`` (cli/main.py builds it; ``splice help`` too).

Global options (``--json``, ``--registry``, ``--no-color``, ``--verbose``) may appear before
or after the command word.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import IO, Any

from splice_build.cli import arg_types
from splice_build.cli.main import PROG
from splice_build.cli.operands import options_first, unknown_options
from splice_build.cli.plain import VALUELESS_GLOBAL_FLAGS
from splice_build.cli.registry_of_commands import COMMAND_MODULES
from splice_build.errors import SpecError, UsageError


class Shown(Exception):
    """``--help`` or ``--version`` under ``--json``: the document main prints on stdout
    (``{"command", "help"}`` as ``splice help --json`` gives it, or ``{"version"}``) instead
    of argparse's text."""

    def __init__(self, document: dict[str, Any]) -> None:
        super().__init__(document)
        self.document = document


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of printing and exiting.

    ``json``: ``--help`` raises ``Shown`` instead of printing text. ``command``: the command
    a subparser reads (None for ``splice`` itself); its options may stand anywhere on the
    line (cli/operands.py).
    """

    json = False
    command: str | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # No abbreviated long options (argparse's default took ``--acc`` for
        # ``--accept-permissions``): a script's abbreviation could come to mean another
        # option once one sharing its start is added, and the TypeScript CLI has none. A
        # mistyped or shortened option is reported with the closest one (``unrecognized``).
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message, hint=f"run `{self.prog} --help` for usage")

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """argparse's, but words no option reads are reported against the command that was
        given (its ``--help``, and the closest of its options to a mistyped one)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            raise self._command_parser(getattr(parsed, "command", None)).unrecognized(extras)
        return parsed

    def unrecognized(self, extras: Sequence[str]) -> UsageError:
        """The usage error of words this parser's command reads no option or operand from,
        naming the closest of its options to the first."""
        options = self._option_string_actions if extras[0].startswith("-") else ()
        # ``--name=value``'s value is not shown: a mistyped ``--token=…`` is a secret.
        words = [w.split("=")[0] + "=…" if w.startswith("--") and "=" in w else w for w in extras]
        return UsageError(
            f"unrecognized arguments: {' '.join(words)}{_did_you_mean(extras[0], options)}",
            hint=f"run `{self.prog} --help` for usage",
        )

    def _command_parser(self, name: str | None) -> _Parser:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and name in action.choices:
                return action.choices[name]  # type: ignore[no-any-return]
        return self

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """A word that is none of the choices names the closest one: a mistyped command is
        ``unknown command 'instal' (did you mean 'install'?)``, not a list of thirty."""
        choices = action.choices
        if choices is None or value in choices:
            return
        if isinstance(action, argparse._SubParsersAction):
            raise argparse.ArgumentError(None, unknown_command(value, choices))
        listed = ", ".join(map(repr, choices))
        message = f"invalid choice: {value!r} (choose from {listed}){_did_you_mean(value, choices)}"
        raise argparse.ArgumentError(action, message)

    def print_help(self, file: IO[str] | None = None) -> None:
        if self.json:
            raise Shown({"command": self.command, "help": self.format_help()})
        super().print_help(file)

    def _print_message(self, message: str, file: IO[str] | None = None) -> None:
        """argparse's, without its silence on a failed write: ``splice --help`` into a closed
        pipe ended 0 with nothing shown; it ends 1 as every command (cli/errors.py)."""
        if message:
            (file or sys.stderr).write(message)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """argparse fills positionals from the first run of operands only, so a command's
        options are moved in front of its operands first (cli/operands.py).

        A mistyped option is named before a missing or refused operand: `splice add
        --acept-permissions` said "the following arguments are required: pkg[@range]" alone,
        as if the option had been read, `splice registry --prot 8000` "invalid choice:
        '8000'" of the option's value, taken for the action, and `splice add --regsitry
        local @a/b` 'Invalid package name "local"' of the value, taken for a package."""
        if self.command is None or args is None:
            return super().parse_known_args(args, namespace)
        args = options_first(args, self._option_string_actions)
        try:
            return super().parse_known_args(args, namespace)
        except (UsageError, SpecError) as exc:
            unknown = unknown_options(args, self._option_string_actions)
            if unknown and _of_an_operand(exc):
                raise self.unrecognized(unknown) from None
            raise


# The starts of argparse's errors of a command's operands, which an option it does not take
# may have caused (its value read as an operand) or hidden (the operand left out).
_OPERAND_ERRORS = ("the following arguments are required", "argument action: invalid choice")


def _of_an_operand(exc: UsageError | SpecError) -> bool:
    """argparse's error of a missing or refused operand, or a reference's ``type=`` check
    (cli/arg_types.py: ``INVALID_NAME``, ``INVALID_REF``, ``INVALID_RANGE``, raised as they
    are, not through argparse), which a mistyped option's value read as an operand meets."""
    return isinstance(exc, SpecError) or exc.message.startswith(_OPERAND_ERRORS)


def unknown_command(word: str, commands: Iterable[str]) -> str:
    """The usage error of a command word that names no command (also ``splice help WORD``)."""
    return f"unknown command {word!r}{_did_you_mean(word, commands)}"


def _did_you_mean(word: str, choices: Iterable[Any]) -> str:
    import difflib  # only on a usage error: the parse of a good command line never needs it

    names = [choice for choice in choices if isinstance(choice, str)]
    if not isinstance(word, str):
        return ""
    # A shortened long option (no abbreviation is taken) names the one option it starts.
    started = [n for n in names if word.startswith("--") and n.startswith(word.split("=")[0])]
    close = started if len(started) == 1 else difflib.get_close_matches(word, names, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class _ShowVersion(argparse._VersionAction):
    """``-v``/``--version``: the text, or under ``--json`` the document ``{"version"}``."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        if getattr(parser, "json", False):
            from splice_build import __version__

            raise Shown({"version": __version__})
        super().__call__(parser, *args, **kwargs)  # type: ignore[arg-type]


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


def build_parser(commands: dict[str, ModuleType], *, json: bool = False) -> argparse.ArgumentParser:
    """The parser of ``splice`` with ``commands``; ``json``: ``--help`` and ``--version``
    raise ``Shown`` (the command line holds ``--json`` before any ``--``)."""
    from splice_build import __version__

    parser = _Parser(
        prog=PROG,
        description="Install, verify and run sandboxed agent skills.",
        parents=[_global_options(suppress=False)],
    )
    parser.json = json
    parser.add_argument("-v", "--version", action=_ShowVersion, version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="<command>", parser_class=_Parser)
    inherited = _global_options(suppress=True)
    for name, module in commands.items():
        command_parser = sub.add_parser(
            name, help=module.HELP, description=module.HELP, parents=[inherited]
        )
        command_parser.json, command_parser.command = json, name
        module.add_arguments(command_parser)
        _text_by_default(command_parser)
        _operand_lists_optional(command_parser)
    return parser


def _text_by_default(parser: argparse.ArgumentParser) -> None:
    """Every string argument without a type of its own must be UTF-8 text (``arg_types``)."""
    for action in parser._actions:
        if action.type is None and action.nargs != 0:
            action.type = arg_types.text


def _operand_lists_optional(parser: argparse.ArgumentParser) -> None:
    """argparse marks a ``nargs="*"`` positional without a default as required, so a missing
    ``action`` was reported as ``required: action, arg`` (``splice keys``), as if the
    operands every verb may leave out were needed too."""
    for action in parser._actions:
        if not action.option_strings and action.nargs == "*":
            action.required = False
