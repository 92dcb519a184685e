"""`splice workspace list|add|remove`: the projects `splice sync` covers (pyproject.toml)."""

from __future__ import annotations

import argparse
from pathlib import Path

from splice_build.cli.context import CommandContext

NAME = "workspace"
HELP = "list the workspace's projects, or add/remove one in pyproject.toml"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", type=Path, help="the workspace root (default: found upwards)")
    actions = parser.add_subparsers(dest="action", metavar="list|add|remove", required=True)
    actions.add_parser("list", help="the member projects")
    for name, text in (
        ("add", "add a directory to [tool.splice.workspace] members"),
        ("remove", "remove a directory from members (or exclude it)"),
    ):
        sub = actions.add_parser(name, help=text)
        sub.add_argument("directory", type=Path)


def _root(args: argparse.Namespace, ctx: CommandContext) -> Path:
    """``--root``, else the root of a configured workspace above, else the git or current dir."""
    from splice_build.project.workspace import find_workspace, read_config

    if args.root is not None:
        return Path(args.root).resolve()
    for directory in (ctx.cwd, *ctx.cwd.parents):
        if read_config(directory / "pyproject.toml") is not None:
            return directory
    try:
        return find_workspace(ctx.cwd).root
    except Exception:  # no member yet: the first `add` creates the workspace here
        return ctx.cwd


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.project.workspace import add_member, find_workspace, remove_member

    if args.action == "list":
        workspace = find_workspace(ctx.cwd, root=args.root)
        labels = [workspace.label(m) for m in workspace.members]
        data = {"root": str(workspace.root), "source": workspace.source, "members": labels}
        ctx.out.result(data, "\n".join(labels))
        return 0
    root = _root(args, ctx)
    directory = (ctx.cwd / args.directory).resolve()
    if args.action == "add":
        changed = add_member(root, directory)
        outcome = "added" if changed else "already a member"
    else:
        outcome = remove_member(root, directory)
    path = (
        directory.relative_to(root).as_posix() if directory.is_relative_to(root) else str(directory)
    )
    ctx.out.result(
        {"root": str(root), "directory": path, "outcome": outcome},
        f"{path}: {outcome} ({root / 'pyproject.toml'})",
    )
    return 0
