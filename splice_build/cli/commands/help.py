"""`splice help [command]`: the same text as `splice --help` or `splice <command> --help`."""

from __future__ import annotations

import argparse

from splice_build.cli.context import CommandContext

NAME = "help"
HELP = "show help for splice or for one command"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topic", nargs="?", metavar="command", help="a command name")


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.cli.main import build_parser, load_commands

    # argparse prints the help on stdout and exits 0; an unknown command is a usage error.
    build_parser(load_commands()).parse_args([*([args.topic] if args.topic else []), "--help"])
    raise AssertionError("BUG: --help did not exit")
