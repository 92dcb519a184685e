"""`splice help [command]`: the same text as `splice --help` or `splice <command> --help`."""

from __future__ import annotations

import argparse

from splice_build.cli.context import CommandContext
from splice_build.errors import UsageError

NAME = "help"
HELP = "show help for splice or for one command"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topic", nargs="?", metavar="command", help="a command name")


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.cli.parser import build_parser, load_commands, unknown_command

    parser = build_parser(load_commands())
    if ctx.json:  # one document, like every other command: {"command", "help"}
        target = parser
        if args.topic:
            (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
            if args.topic not in sub.choices:
                message = unknown_command(args.topic, sub.choices)
                raise UsageError(message, hint="run `splice --help` for usage")
            target = sub.choices[args.topic]
        ctx.out.result({"command": args.topic, "help": target.format_help()})
        return 0
    # argparse prints the help on stdout and exits 0; an unknown command is a usage error.
    parser.parse_args([*([args.topic] if args.topic else []), "--help"])
    raise AssertionError("BUG: --help did not exit")
