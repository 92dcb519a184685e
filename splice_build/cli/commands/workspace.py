"""`splice workspace list|add|remove`: the projects `splice sync` covers (pyproject.toml)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from splice_build.cli.commands.sync import workspace_root
from splice_build.cli.context import CommandContext
from splice_build.errors import UsageError

NAME = "workspace"
HELP = "list the workspace's projects, or add/remove one in pyproject.toml"
NEEDS_PROJECT = False
ACTIONS = ("list", "add", "remove")
# The outcomes for people ("absent" alone read as if the directory were missing); --json
# keeps remove_member's words.
_SAID = {"absent": "not a member, nothing changed"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # One flat parser (no nested sub-parsers) so the global options work after any word.
    parser.add_argument(
        "action",
        choices=ACTIONS,
        help="list: the member projects; add: a directory to [tool.splice.workspace] "
        "members; remove: a directory from members (or exclude it)",
    )
    parser.add_argument("directory", nargs="?", type=Path, help="add/remove: the directory")
    parser.add_argument("--root", type=Path, help="the workspace root (default: found upwards)")


def _root(args: argparse.Namespace, ctx: CommandContext) -> Path:
    """``--root``, else the root of a configured workspace above, else the git or current dir."""
    from splice_build.project.workspace import configured_root, find_workspace

    root = workspace_root(args, ctx)
    if root is not None:
        return root.resolve()
    configured = configured_root(ctx.cwd)
    if configured is not None:
        return configured
    try:
        return find_workspace(ctx.cwd).root
    except Exception:  # no member yet: the first `add` creates the workspace here
        return ctx.cwd


def _none(root: str) -> str:
    """``workspace list`` of a workspace without members: said, where ``sync`` fails."""
    return (
        f"No project (splice.json) in the workspace at {root}: `splice init` makes one, "
        "`splice workspace add <dir>` names one."
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.project.workspace import (
        PYPROJECT,
        add_member,
        find_workspace,
        read_config,
        remove_member,
    )
    from splice_build.spec.project_state import PROJECT_FILE

    if (args.action == "list") != (args.directory is None):
        wanted = "takes no directory" if args.action == "list" else "needs a directory"
        raise UsageError(f"workspace {args.action} {wanted}")
    if args.action == "list":
        root = workspace_root(args, ctx)
        workspace = find_workspace(ctx.cwd, root=root, home=ctx.home, may_be_empty=True)
        for line in workspace.dropped_lines():
            ctx.out.warn(line)
        labels = [workspace.label(m) for m in workspace.members]
        data = {"root": str(workspace.root), "source": workspace.source, "members": labels}
        # a member's name is the checkout's: one line each (Output.result, one_line_fields)
        ctx.out.result(data, lambda shown: "\n".join(shown["members"]) or _none(shown["root"]))
        return 0
    root = _root(args, ctx)
    directory = (ctx.cwd / args.directory).resolve()

    def blocked() -> None:  # a sync of a workspace whose root is a member holds its lock
        from splice_build.project.locking import WAITING

        ctx.out.progress(WAITING)

    if args.action == "add":
        changed = add_member(root, directory, home=ctx.home, on_blocked=blocked)
        outcome = "added" if changed else "already a member"
    else:
        outcome = remove_member(root, directory, home=ctx.home, on_blocked=blocked)
    path = (
        directory.relative_to(root).as_posix() if directory.is_relative_to(root) else str(directory)
    )
    # Where the answer came from: the table, else the walk (add and remove write none when
    # nothing changes, and naming a pyproject.toml that does not exist sent people to look).
    source = (
        f"/{PYPROJECT}"
        if read_config(root / PYPROJECT) is not None
        else f": no [tool.splice.workspace] table in {PYPROJECT}, every project found is a member"
    )
    if outcome == "added" and not os.path.lexists(directory / PROJECT_FILE):
        # A member is a directory holding a splice.json: named alone, sync still found none
        # (and said "No project …", hinting this very command).
        ctx.out.warn(
            f"{path} holds no {PROJECT_FILE}: it is synced once `splice init {path}` makes it "
            "a project"
        )
    # the root and the member are the checkout's directories: one line each (one_line_fields)
    ctx.out.result(
        {"root": str(root), "directory": path, "outcome": outcome},
        lambda shown: (
            f"{shown['directory']}: {_SAID.get(outcome, outcome)} ({shown['root']}{source})"
        ),
    )
    return 0
