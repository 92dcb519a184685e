"""`splice registry serve | admin …`: run a registry and administer its store.

``serve`` binds 127.0.0.1 by default; the admin HTTP API is enabled only when
``SPLICE_REGISTRY_ADMIN_TOKEN_SHA256`` holds the hex SHA-256 of an admin token. ``admin``
works on the store directly: whoever can write it administers it. Both use the back ends
configured in the environment (``SPLICE_REGISTRY_DATABASE_URL``, ``SPLICE_REGISTRY_ARTIFACTS``,
see ``registry.storage``); ``admin migrate --to postgresql://…`` moves a data directory's
SQLite store (and, with ``--artifacts s3://…``, its artifacts) there, and ``admin
migrate-artifacts`` copies the data directory's artifacts into the configured S3 store.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from splice_build.cli import arg_types
from splice_build.cli.commands.token import add_token_options
from splice_build.cli.context import CommandContext
from splice_build.errors import ErrorCode, ProjectError, UsageError, storage_error

if TYPE_CHECKING:
    from splice_build.registry.http.server import ServeDeadlines

NAME = "registry"
HELP = "serve a registry over HTTP, or administer its store"
NEEDS_PROJECT = False
ADMIN_VERBS = (
    "create-user",
    "create-token",
    "revoke-token",
    "set-owner",
    "migrate",
    "migrate-artifacts",
)
DEFAULT_DATA = "splice-registry-data"
MAX_WORKERS = 256
MAX_DEADLINE_SECONDS = 24 * 3600  # a day, as SPLICE_REGISTRY_DEADLINE (docs/registry.md)
SECONDS = f"whole seconds from 1 to {MAX_DEADLINE_SECONDS}"
MAX_LIMIT = 999_999_999  # of --publish-limit, --request-limit, --read-limit: any real limit fits
SERVE_OPTIONS = frozenset(
    {
        "--data",
        "--host",
        "--port",
        "--publish-limit",
        "--request-limit",
        "--read-limit",
        "--head-deadline",
        "--body-deadline",
        "--workers",
        "--trusted-proxy",
    }
)
# The options each action or admin verb takes (besides the global ones). One flat parser
# reads them all, so this table says which apply: any other given option is a usage error.
# add_arguments checks the table against the parser, so a new option must be placed here.
TAKES: dict[str, frozenset[str]] = {
    "serve": SERVE_OPTIONS,
    "create-user": frozenset({"--data"}),
    "create-token": frozenset(
        {"--data", "--label", "--namespace", "--expires", "--publish-only", "--out", "--show"}
    ),
    "revoke-token": frozenset({"--data"}),
    "set-owner": frozenset({"--data", "--release"}),
    "migrate": frozenset({"--data", "--to", "--artifacts"}),
    "migrate-artifacts": frozenset({"--data"}),
}


class _Noted:
    """An argparse action that also notes its option, when given, in ``options_given`` (a
    default's value cannot tell ``--port 8787`` from no ``--port``)."""

    option_strings: list[str]

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        super().__call__(parser, namespace, values, option_string)  # type: ignore[misc]
        if option_string is not None:  # None: an operand (action, verb, operands)
            namespace.options_given = (*namespace.options_given, self.option_strings[0])


_NOTED_ACTIONS = {
    name: type(f"_Noted{kind.__name__}", (_Noted, kind), {})
    for name, kind in (
        ("store", argparse._StoreAction),
        ("store_true", argparse._StoreTrueAction),
        ("append", argparse._AppendAction),
    )
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # One flat parser (no nested sub-parsers) so the global options work after any word.
    inherited = len(parser._actions)  # --help and the global options
    for name, noted in _NOTED_ACTIONS.items():
        parser.register("action", name, noted)
    parser.register("action", None, _NOTED_ACTIONS["store"])
    parser.set_defaults(options_given=())
    _add_options(parser)
    _check_table(parser._actions[inherited:])


def _check_table(actions: list[argparse.Action]) -> None:
    """TAKES has an entry for each action and verb, every option of the command is noted when
    given and placed in TAKES, which names no other: a parser with an option in no entry is
    never built, so no command line runs until the option is placed."""
    options = {a.option_strings[0]: a for a in actions if a.option_strings}
    placed = frozenset().union(*TAKES.values())
    if TAKES.keys() != {"serve", *ADMIN_VERBS} or placed != options.keys():
        raise AssertionError(f"BUG: TAKES and the parser differ: {placed ^ options.keys()}")
    for option, action in options.items():
        if not isinstance(action, _Noted) or action.option_strings != [option]:
            raise AssertionError(f"BUG: {option} is not noted when given")


def _check_options(args: argparse.Namespace) -> None:
    """Every given option applies to the chosen action or admin verb (TAKES)."""
    chosen = "serve" if args.action == "serve" else args.verb
    for option in args.options_given:
        if option not in TAKES[chosen]:
            users = [f"registry {_words(key)}" for key, taken in TAKES.items() if option in taken]
            raise UsageError(
                f"{option} applies to {' and '.join(users)}, not to registry {_words(chosen)}",
                hint="run `splice registry --help` for the options of each",
            )


def _words(key: str) -> str:
    return key if key == "serve" else f"admin {key}"


def _add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action", choices=("serve", "admin"), help="serve over HTTP, or administer the store"
    )
    parser.add_argument("verb", nargs="?", choices=ADMIN_VERBS, help="admin: what to do")
    parser.add_argument(
        "operands", nargs="*", help="admin: user name, token id, or namespace [user]"
    )
    parser.add_argument(
        "--data",
        metavar="DIR",
        default=DEFAULT_DATA,
        type=arg_types.path,
        help=f"data directory (default: ./{DEFAULT_DATA})",
    )
    serve = parser.add_argument_group("serve options")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    serve.add_argument(
        "--port",
        type=arg_types.numeric("--port", 0, 65535),
        default=8787,
        help="port (default: 8787; 0 = any free port)",
    )
    serve.add_argument(
        "--publish-limit",
        type=arg_types.numeric("--publish-limit", 0, MAX_LIMIT),
        default=10,
        metavar="N",
        help="publishes per user per minute (default: 10; 0 = off)",
    )
    serve.add_argument(
        "--request-limit",
        type=arg_types.numeric("--request-limit", 0, MAX_LIMIT),
        default=60,
        metavar="N",
        help="authenticated requests per client per minute (default: 60; 0 = off)",
    )
    serve.add_argument(
        "--read-limit",
        type=arg_types.numeric("--read-limit", 0, MAX_LIMIT),
        default=30,
        metavar="N",
        help="costly reads (0.1 s of CPU making an answer, GET or MCP) per client per minute "
        "(default: 30; 0 = off)",
    )
    serve.add_argument(
        "--head-deadline",
        type=arg_types.numeric("--head-deadline", 1, MAX_DEADLINE_SECONDS, SECONDS),
        metavar="SECONDS",
        help="a request head must be complete within this (default: 10)",
    )
    serve.add_argument(
        "--body-deadline",
        type=arg_types.numeric("--body-deadline", 1, MAX_DEADLINE_SECONDS, SECONDS),
        metavar="SECONDS",
        help="a request body must be complete within this plus its size limit at 64 KiB/s "
        "(default: 60)",
    )
    serve.add_argument(
        "--workers",
        type=_workers,
        default=1,
        metavar="N|auto",
        help="server processes sharing the store and its rate limits (default: 1; "
        "auto = one per core)",
    )
    serve.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        type=arg_types.trusted_proxy,
        metavar="ADDR[/BITS]",
        help="a reverse proxy whose X-Forwarded-For names the client (repeatable; default: none)",
    )
    token = parser.add_argument_group("admin create-token options")
    add_token_options(token)
    token.add_argument(
        "--publish-only", action="store_true", help="cannot manage tokens or maintainers"
    )
    shown = token.add_mutually_exclusive_group()
    shown.add_argument(
        "--out",
        metavar="FILE",
        type=arg_types.path,
        help="write the token to FILE (mode 0600; never overwrites)",
    )
    shown.add_argument("--show", action="store_true", help="print the token on stdout instead")
    owner = parser.add_argument_group("admin set-owner options")
    owner.add_argument("--release", action="store_true", help="leave the namespace without owner")
    migrate = parser.add_argument_group("admin migrate options")
    migrate.add_argument(
        "--to", metavar="postgresql://…", help="empty PostgreSQL database to copy the store into"
    )
    migrate.add_argument(
        "--artifacts",
        metavar="s3://bucket/prefix",
        help="also copy the artifacts to this bucket (endpoint: SPLICE_REGISTRY_S3_ENDPOINT)",
    )


_OPERANDS = {
    "create-user": (1, 1),
    "create-token": (1, 1),
    "revoke-token": (1, 1),
    "set-owner": (1, 2),
    "migrate": (0, 0),
    "migrate-artifacts": (0, 0),
}


def _check_admin(args: argparse.Namespace) -> None:
    if args.verb is None:
        raise UsageError(f"registry admin needs a verb: {', '.join(ADMIN_VERBS)}")
    _check_options(args)
    low, high = _OPERANDS[args.verb]
    if not low <= len(args.operands) <= high:
        raise UsageError(f"registry admin {args.verb}: wrong number of arguments")
    if args.verb == "set-owner" and (len(args.operands) == 2) == args.release:
        raise UsageError("set-owner takes a namespace and a user, or a namespace and --release")
    _check_names(args.verb, args.operands)
    if args.verb == "migrate" and args.to is None:
        raise UsageError("registry admin migrate needs --to postgresql://…")
    if args.verb == "create-token" and args.out is None and not args.show:
        raise UsageError(
            "registry admin create-token needs --out FILE or --show",
            hint="--out FILE writes the token to a new file only you can read (mode 0600); "
            "--show prints it on stdout, where terminals, logs and CI output keep it",
        )


def _check_names(verb: str, operands: list[str]) -> None:
    """``INVALID_NAME`` (exit 2) for a malformed user or namespace given to create-user or
    set-owner, as ``splice namespace`` refuses one; the store's BAD_REQUEST (exit 1) "name
    must be a valid namespace name" named neither the word nor the rule."""
    if verb == "create-user":
        arg_types.user_name(operands[0])
    elif verb == "set-owner":
        arg_types.namespace(operands[0])
        for user in operands[1:]:
            arg_types.user_name(user)


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    if args.action == "serve":
        if args.verb is not None:
            raise UsageError("registry serve takes no verb")
        _check_options(args)
        return _serve(args, ctx)
    if args.action == "admin":
        return _admin(args, ctx)
    raise UsageError("registry needs an action: serve or admin")


def _workers(text: str) -> int:
    """``--workers``: 1 to 256, or ``auto`` (the cores this process may run on)."""
    if text == "auto":
        import os

        return len(os.sched_getaffinity(0)) or 1
    wanted = f"an integer from 1 to {MAX_WORKERS}, or auto"
    return arg_types.whole_number(text, "--workers", 1, MAX_WORKERS, wanted)


def _data_dir(args: argparse.Namespace, ctx: CommandContext, *, existing: bool) -> Path:
    """``--data``, checked before any store is opened (usage errors, exit 2).

    ``existing`` (the admin verbs whose store lives there) also refuses a path that does not
    exist, so that a mistyped path never administers a new, empty store.
    """
    from splice_build.project.directories import usable_directory

    data = Path(args.data)
    data = data if data.is_absolute() else ctx.cwd / data
    hint = (
        "check --data; `splice registry serve --data DIR` creates a new store"
        if existing and not data.exists()
        else "--data names the registry's data directory"
    )
    usable_directory(data, "--data", must_exist=existing, hint=hint)
    return _out_of_strangers_reach(data)


def _out_of_strangers_reach(data: Path) -> Path:
    """``data``, unless a user other than this one, root or a group may replace what it
    holds (registry/data_owner.py): ``INVALID_CONFIG``, before any store is opened."""
    from splice_build.registry.data_owner import data_problem

    problem = data_problem(data)
    if problem is None:
        return data
    raise ProjectError(
        ErrorCode.INVALID_CONFIG,
        f"--data {data} cannot be used: {problem}",
        hint="whoever may write the data directory or rename it away is the registry's admin: "
        "keep it, and every directory above it, writable only by you, root or your team's "
        "group (chmod o-w, or chmod +t for a directory every user shares)",
    )


def _serve(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.registry.http.server import ADMIN_TOKEN_ENV, serve
    from splice_build.registry.service.ratelimit import RateLimits
    from splice_build.registry.storage import StorageConfig

    admin_hash = ctx.env.get(ADMIN_TOKEN_ENV, "").strip().lower() or None
    if admin_hash is not None and (
        len(admin_hash) != 64 or not all(c in "0123456789abcdef" for c in admin_hash)
    ):
        raise UsageError(f"{ADMIN_TOKEN_ENV} must be a hex SHA-256 (64 characters)")
    data = _data_dir(args, ctx, existing=False)
    config = StorageConfig.from_env(ctx.env)
    limits = RateLimits(
        publishes=args.publish_limit, requests=args.request_limit, costly_reads=args.read_limit
    )
    where = f"data: {data}" if config == StorageConfig() else config.describe(data)

    def announce(url: str) -> None:
        from splice_build.security.redact import redact

        admin = "enabled" if admin_hash else "disabled"
        # redacted like every later line of the server (registry/http/server.py LOG_CONFIG)
        processes = f", workers: {args.workers}" if args.workers > 1 else ""
        ctx.out.info(
            redact(f"Registry listening on {url} ({where}, admin API: {admin}{processes})")
        )
        if ctx.json:  # stdout's one document, once the socket listens (as mcp --http --json)
            ctx.out.result({"url": url})

    serve(
        data,
        host=args.host,
        port=args.port,
        admin_token_sha256=admin_hash,
        limits=limits,
        on_listen=announce,
        config=config,
        trusted_proxies=args.trusted_proxy,
        workers=args.workers,
        deadlines=_deadlines(args),
    )
    return 0


def _deadlines(args: argparse.Namespace) -> ServeDeadlines:
    """``--head-deadline`` and ``--body-deadline``, each the server's default when not given."""
    from splice_build.registry.http.server import ServeDeadlines

    given = {"head": args.head_deadline, "body": args.body_deadline}
    return ServeDeadlines(**{name: value for name, value in given.items() if value is not None})


def _admin(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.registry.service import admin
    from splice_build.registry.service.tokens import token_request
    from splice_build.registry.storage import StorageConfig, open_service

    _check_admin(args)
    if args.verb == "migrate":
        return _migrate(args, ctx)
    if args.verb == "migrate-artifacts":
        return _migrate_artifacts(args, ctx)
    first = args.operands[0]
    config = StorageConfig.from_env(ctx.env)
    data = _data_dir(args, ctx, existing=config.database_url is None)
    token_file = _token_file(args, ctx) if args.out is not None else None
    deps = open_service(data, config=config).deps
    try:
        result: dict[str, Any]
        if args.verb == "create-user":
            result = admin.create_user(deps, first)
            ctx.out.result(result, f"Created user {result['name']}")
        elif args.verb == "create-token":
            body = {
                "label": args.label,
                "namespaces": args.namespace,
                "expiresInDays": args.expires,
                "canManage": not args.publish_only,
            }
            result = admin.create_token(deps, first, token_request(body, allow_manage=True))
            from splice_build.cli.commands.token import scope_text

            kind = "publish-only" if args.publish_only else "managing"
            made = (
                f"Created {kind} token {result['id']} for {result['user']} "
                f"(scope: {scope_text(result.get('namespaces'))})"
            )
            if token_file is None:  # --show
                ctx.out.info(f"{made}; it is shown once, store it now")
                ctx.out.result(result, result["token"])
            else:
                result = _write_token(deps, result, token_file)
                ctx.out.result(
                    result,
                    f"{made} in {token_file} (mode 0600); give it to the user and delete the file",
                )
        elif args.verb == "revoke-token":
            result = admin.revoke_token(deps, first)
            ctx.out.result(result, f"Revoked token {first}")
        else:
            result = admin.set_owner(deps, first, None if args.release else args.operands[1])
            ctx.out.result(result, f"@{result['namespace']} owner: {result['owner'] or '(none)'}")
    finally:
        deps.meta.close()
    return 0


def _token_file(args: argparse.Namespace, ctx: CommandContext) -> Path:
    """``--out``: a new file in an existing directory (checked before the token exists)."""
    path = Path(args.out)
    path = path if path.is_absolute() else ctx.cwd / path
    if path.exists() or path.is_symlink():
        raise UsageError(f"--out {path} already exists; it is never overwritten")
    if not path.parent.is_dir():
        raise UsageError(f"--out {path}: the directory {path.parent} does not exist")
    return path


def _write_token(deps: Any, result: dict[str, Any], path: Path) -> dict[str, Any]:
    """Write the token to ``path`` (0600, atomically, only if absent); the result without it.

    A file that appeared since the check, or a failed write, revokes the new token: a token
    nobody holds is not left valid in the store.
    """
    from splice_build.project.atomic import atomic_write_bytes
    from splice_build.registry.service import admin

    token = result["token"]
    try:
        written = atomic_write_bytes(path, f"{token}\n".encode(), mode=0o600, exclusive=True)
    except OSError as exc:
        admin.revoke_token(deps, result["id"])
        # a full disk or a refused write is DISK_FULL or NOT_WRITABLE (exit 1), as every
        # write's: it was USAGE, exit 2, hinted to read --help
        coded = storage_error(exc)
        said = coded.message if coded else exc.strerror or str(exc)
        message = f"--out {path}: {said}; the token was revoked"
        if coded is None:
            raise UsageError(message) from exc
        raise ProjectError(coded.code, message, hint=coded.hint) from exc
    if not written:
        admin.revoke_token(deps, result["id"])
        raise UsageError(f"--out {path} already exists; the token was revoked")
    return {**{k: v for k, v in result.items() if k != "token"}, "tokenFile": str(path)}


def _migrate(args: argparse.Namespace, ctx: CommandContext) -> int:
    """Copy the data directory's SQLite store (and optionally its artifacts) to PostgreSQL."""
    from splice_build.registry.blobs.filesystem import FilesystemBlobStore
    from splice_build.registry.db.postgres import display_url
    from splice_build.registry.db.transfer import copy_to_postgres
    from splice_build.registry.storage import (
        ARTIFACTS_DIR,
        DB_FILE,
        S3_ENDPOINT_ENV,
        StorageConfig,
        open_blobs,
        postgres_url,
        s3_location,
    )

    data = _data_dir(args, ctx, existing=True)
    target = postgres_url(args.to)
    blobs_from = blobs_to = None
    if args.artifacts is not None:
        config = StorageConfig(
            artifacts=s3_location(args.artifacts), s3_endpoint=ctx.env.get(S3_ENDPOINT_ENV)
        )
        blobs_from = FilesystemBlobStore(data / ARTIFACTS_DIR)
        blobs_to = open_blobs(data, config)
    report = copy_to_postgres(
        data / DB_FILE, target, blobs_from=blobs_from, blobs_to=blobs_to, progress=ctx.out.progress
    )
    result = {
        "from": str(data / DB_FILE),
        "to": display_url(target),
        "rows": report.rows,
        "artifacts": report.artifacts,
    }
    moved = f" and {report.artifacts} artifacts" if args.artifacts is not None else ""
    ctx.out.result(
        result,
        f"Copied {sum(report.rows.values())} rows{moved} to {display_url(target)}",
    )
    return 0


def _migrate_artifacts(args: argparse.Namespace, ctx: CommandContext) -> int:
    """Copy artifacts not in the configured store yet into it; 1 when any was skipped."""
    from splice_build.registry.service.artifacts import migrate
    from splice_build.registry.storage import StorageConfig, open_service

    data = _data_dir(args, ctx, existing=True)
    deps = open_service(data, config=StorageConfig.from_env(ctx.env)).deps
    try:
        report = migrate(deps)
    finally:
        deps.meta.close()
    for item in report.skipped:
        ctx.out.warn(f"skipped {item.version}: {item.reason}")
    migrated = ", ".join(report.migrated) or "none"
    ctx.out.result(report.to_json(), f"Migrated to {report.backend}: {migrated}")
    return 1 if report.skipped else 0
