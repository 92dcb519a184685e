"""`splice mcp [--project DIR] [--data] [--max-calls N] [--reuse] [--http [--host H] [--port P]
[--trusted-proxy ADDR]]`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from splice_build.cli import arg_types
from splice_build.errors import UsageError

if TYPE_CHECKING:
    from splice_build.cli.context import CommandContext
    from splice_build.mcp.data_backend import DataBackend
    from splice_build.mcp.interface import Backend
    from splice_build.mcp.protocol import Log, Server
    from splice_build.project.project_file import ProjectFile
    from splice_build.sdk import Splice
    from splice_build.spec.reuse import ReusePolicy

NAME = "mcp"
HELP = "serve the project's installed tools to agents over MCP (stdio, or --http)"
NEEDS_PROJECT = False  # --project picks the project; found here, not by main
_PORT = arg_types.numeric("--port", 0, 65535)
_MAX_CALLS = arg_types.numeric("--max-calls", 1, 999_999_999)  # SPLICE_MCP_MAX_CALLS' range


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--project",
        metavar="DIR",
        type=arg_types.path,
        help="project directory (default: found from .)",
    )
    parser.add_argument("--data", action="store_true", help="add read-only live-data tools")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="let a process serve successive calls of one package under one grant"
        ' (limits from splice.json "reuse", else the defaults; docs/runtime.md)',
    )
    parser.add_argument("--http", action="store_true", help="Streamable HTTP instead of stdio")
    parser.add_argument("--host", help="HTTP listen address (default 127.0.0.1; needs --http)")
    parser.add_argument("--port", type=_PORT, help="HTTP port (default 8788; needs --http)")
    parser.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        type=arg_types.trusted_proxy,
        metavar="ADDR[/BITS]",
        help="a reverse proxy whose X-Forwarded-For names the client (repeatable; needs --http)",
    )
    parser.add_argument(
        "--max-calls",
        type=_MAX_CALLS,
        metavar="N",
        help="tool calls run at once; more wait (default $SPLICE_MCP_MAX_CALLS or the cores)",
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    if not args.http and (args.host is not None or args.port is not None):
        raise UsageError("--host and --port need --http")
    if not args.http and args.trusted_proxy:
        raise UsageError("--trusted-proxy needs --http")
    from splice_build.mcp.admission import default_max_calls
    from splice_build.stopping import mcp_grace

    max_calls = args.max_calls or default_max_calls(ctx.env)
    grace = mcp_grace(ctx.env)  # SPLICE_MCP_STOP_GRACE: USAGE (exit 2) before serving
    digest = b""
    if args.http:
        from splice_build.mcp.transport.http import TOKEN_ENV, token_digest

        digest = token_digest(ctx.env.get(TOKEN_ENV))  # exit 2 before anything else happens

    from splice_build.project.project_file import find_project_root

    given = args.project
    root = find_project_root(ctx.cwd if given is None else _project_dir(ctx.cwd, given))
    from splice_build.project.project_file import load_project_file

    project = load_project_file(root)  # INVALID_PROJECT (exit 1) here, before serving
    for line in project.unknown_keys():  # a misspelt "resue" served without reuse, silently
        ctx.out.warn(line)
    reuse = _reuse(project, on=args.reuse)

    from splice_build import __version__
    from splice_build.mcp.backend import INSTRUCTIONS, InstalledBackend
    from splice_build.mcp.interface import ServerInfo
    from splice_build.mcp.protocol import Server
    from splice_build.sdk import Splice
    from splice_build.security.terminal import one_line

    def log(message: str) -> None:
        ctx.out.info(f"[splice mcp] {one_line(message)}")

    from splice_build.runtime.pool import WarmPool
    from splice_build.stopping import signals_held

    data = _data_backend(ctx, root) if args.data else None
    broker = data.broker if data is not None else None  # skills' capability calls share it
    # A long-lived server: sandbox processes are started before calls arrive (one per call,
    # unless reuse is on: --reuse, or "reuse" in splice.json).
    splice = Splice(
        root,
        registry=ctx.registry,
        env=ctx.env,
        home=ctx.home,
        pool=WarmPool(),
        broker=broker,
        reuse=reuse,
        hints="cli",
    )
    try:
        backend: Backend = InstalledBackend(splice)
        instructions = INSTRUCTIONS
        if data is not None:
            from splice_build.mcp.composite import CompositeBackend
            from splice_build.mcp.data_backend import DATA_INSTRUCTIONS

            backend = CompositeBackend(data, backend, log=log)  # data tools win their names
            instructions = f"{INSTRUCTIONS}\n\n{DATA_INSTRUCTIONS}"
        info = ServerInfo(version=__version__, instructions=instructions)
        server = Server(backend, info, log=log)
        _note_unserved(splice, log)
        if args.http:
            return _serve_http(args, ctx, server, digest, max_calls, grace)
        return _serve_stdio(server, root, log, max_calls, grace)
    finally:
        # Bounded (the pool's close waits for its processes, within limits); a signal raised
        # into it left the close half done and the command ended 143, or 1 with a traceback.
        with signals_held():
            splice.close()


def _note_unserved(splice: Splice, log: Log) -> None:
    """One log line per package of the project that ``tools/list`` will leave out, with the
    refusal's code and hint (``splice list``'s rows). A client configured on a fresh clone
    showed no tool at all, and the server's log said nothing of why (``NOT_INSTALLED``
    until ``splice install``). Each request still checks for itself (docs/mcp.md)."""
    from splice_build.errors import SpliceError

    try:
        rows = splice.list()
    except SpliceError:
        return  # the project's state itself: every tools/list answers it with its code
    if not rows:  # a client's configured directory with an empty project: no tool, no why
        log("no package in this project's splice.json, so no tool: `splice add <pkg>` adds one")
    for row in rows:
        if row["status"] != "ok":
            hint = row.get("hint") or "`splice list` says why"
            log(f"{row['name']} is not served ({row.get('code')}): {hint}")


def _project_dir(cwd: Path, given: str) -> Path:
    """``--project``, refused (``USAGE``) when it is no directory: a mistyped one in a client's
    configuration was walked up from like a working directory, and the project around it
    served in its place, with its tools. So was an empty one (a client's variable that
    expanded to nothing, docs/mcp.md's ``${workspaceFolder}`` with no folder open): it
    served the project around the client's working directory."""
    from splice_build.project.directories import existing_directory

    hint = "Give the project's directory, the one holding splice.json."
    if not given:
        raise UsageError("--project is empty", hint=hint)
    return existing_directory(cwd / given, "--project", hint=hint)


def _reuse(project: ProjectFile, *, on: bool) -> ReusePolicy | bool:
    """``--reuse``: the project's limits if it sets them, else the defaults; without the
    flag, whatever splice.json says.

    splice.json is read at the start, so a ``reuse`` setting it refuses (``INVALID_PROJECT``)
    stops the server there, as a missing project does, rather than refusing every call."""
    from splice_build.spec.reuse import ReusePolicy

    policy = project.reuse_policy()
    if on:
        return policy or ReusePolicy()
    return policy or False


def _data_backend(ctx: CommandContext, root: Path) -> DataBackend:
    """The ``--data`` tools; provider keys are read on the first call, never sent anywhere."""
    from splice_build.broker.keys import load_keys
    from splice_build.mcp.data_backend import DataBackend

    env = dict(ctx.env)
    return DataBackend(keys=lambda: load_keys(env=env, project_root=root, home=ctx.home))


def _serve_stdio(server: Server, root: Path, log: Log, max_calls: int, grace: int) -> int:
    """Serve until stdin ends, or SIGTERM stops the server gracefully: exit 0 either way
    (splice_build/stopping.py); ^C is ``INTERRUPTED`` as for every command."""
    import signal
    import sys

    from splice_build.cli.errors import Terminated
    from splice_build.mcp.transport.stdio import claim_stdout, serve_stdio

    protocol_out = claim_stdout()
    log(f"serving {root.name} over stdio")
    try:
        serve_stdio(
            server, sys.stdin.buffer, protocol_out, log=log, max_calls=max_calls, grace=grace
        )
    except Terminated as stopped:
        if stopped.signum != signal.SIGTERM:
            raise
        log("stopped by SIGTERM")
    finally:
        protocol_out.close()
    return 0


def _serve_http(
    args: argparse.Namespace,
    ctx: CommandContext,
    server: Server,
    digest: bytes,
    max_calls: int,
    grace: int,
) -> int:
    from splice_build.mcp.transport.http import DEFAULT_HOST, DEFAULT_PORT, serve_http

    host = args.host or DEFAULT_HOST
    port = DEFAULT_PORT if args.port is None else args.port
    try:
        serve_http(
            server,
            digest=digest,
            host=host,
            port=port,
            max_calls=max_calls,
            trusted_proxies=args.trusted_proxy,
            on_ready=lambda url: ctx.out.result({"url": url}, url),
            grace=grace,
        )
    except OSError as exc:
        from splice_build.listen import cannot_listen

        raise cannot_listen(host, port, exc) from exc
    return 0
