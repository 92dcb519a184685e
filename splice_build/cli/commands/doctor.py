"""`splice doctor`: which isolation layers a tool gets on this machine, and why one is not."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from splice_build.cli.context import CommandContext

NAME = "doctor"
HELP = "which isolation layers are active on this machine, and why one is not"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options: the global --json gives the report as JSON."""


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.runtime.isolation.doctor import machine_report, render_text
    from splice_build.runtime.isolation.plan import configured_mode

    report = machine_report(ctx.env, configured_mode(ctx.env))
    ctx.out.result(report, render_text)
    return 0
