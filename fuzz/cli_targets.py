"""Fuzz targets for the command line and for MCP cancellation (fuzz/README.md).

``cli_argv`` runs ``cli.main.main`` in-process on an arbitrary argument list with every
command's work replaced by a stub (the parse, the plain paths, the registry's TAKES check
and its admin verbs' operand checks stay real), and checks that the plain paths read a line
exactly as the parser does. ``mcp_cancel`` files tool calls under scopes and ids and sends
``notifications/cancelled`` params at them.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
from collections.abc import Callable
from typing import Any

Check = Callable[[bytes], None]
MAX_WORDS = 16


def _argv(data: bytes) -> list[str]:
    """NUL-separated words, decoded as Python decodes a process's arguments."""
    if not data:
        return []
    return [os.fsdecode(word) for word in data.split(b"\0")[:MAX_WORDS]]


def _stub_work() -> None:
    """Every command's ``run`` returns 0 without acting; ``registry`` keeps its checks."""
    from splice_build.cli.commands import registry_cmd, sync
    from splice_build.cli.parser import load_commands

    for module in load_commands().values():
        if module is not registry_cmd and module.NAME != "help":
            module.run = lambda _args, _ctx: 0
    registry_cmd._serve = lambda _args, _ctx: 0

    def admin(args: argparse.Namespace, _ctx: object) -> int:
        registry_cmd._check_admin(args)
        return 0

    registry_cmd._admin = admin
    sync.sync = lambda *_args, **_kwargs: 0


def cli_argv() -> Check:
    """``main(argv)``: exit 0 (the stub ran, or help), 2 (``USAGE``) or 1 with a coded error
    other than ``INTERNAL_ERROR`` (``NOT_A_PROJECT`` from the scratch directory); the plain
    paths of ``run``, ``install`` and ``sync`` agree with the parser."""
    from fuzz.targets import Finding, _scratch
    from splice_build.cli import errors
    from splice_build.cli.commands import install, run, sync
    from splice_build.cli.main import main
    from splice_build.cli.parser import build_parser, load_commands

    home = _scratch()
    os.environ["SPLICE_HOME"] = str(home / "home")
    os.environ.pop("NO_COLOR", None)
    os.chdir(home)
    _stub_work()

    def crash(_out: object, _home: object, _verbose: bool, exc: Exception) -> None:
        raise Finding(f"INTERNAL_ERROR: {type(exc).__name__}: {exc}") from exc

    errors._crash = crash  # type: ignore[assignment]
    parsers = {json_mode: build_parser(load_commands(), json=json_mode) for json_mode in (0, 1)}

    def check(data: bytes) -> None:
        argv = _argv(data)
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = main(argv)
            _plain_agrees(argv, parsers, (run, install), sync, Finding)
        if code not in (0, 1, 2):
            raise Finding(f"exit code {code}")
        shown = stdout.getvalue() + stderr.getvalue()
        if code == 1 and "error:" not in shown and '"code"' not in shown:
            raise Finding(f"exit 1 without a coded error: {shown[-500:]}")

    return check


def _plain_agrees(
    argv: list[str],
    parsers: dict[int, argparse.ArgumentParser],
    plain: tuple[Any, ...],
    sync: Any,
    finding: type[AssertionError],
) -> None:
    """A line a plain path reads is read the same by the parser (cli/plain.py's promise)."""
    from splice_build.errors import SpliceError

    answers = [vars(got) for module in plain if (got := module.plain_args(argv)) is not None]
    check = sync.plain_check(argv)
    if not answers and check is None:
        return
    options = argv[: argv.index("--")] if "--" in argv else argv
    try:
        parsed = vars(parsers["--json" in options].parse_args(argv))
    except (SpliceError, SystemExit, Exception) as exc:
        raise finding(f"a plain path read {argv!r}, the parser refused it: {exc}") from exc
    for answer in answers:
        if answer != parsed:
            raise finding(f"{argv!r}: plain {answer}, parser {parsed}")
    if check is not None and (parsed.get("command") != "sync" or parsed.get("check") != check):
        raise finding(f"{argv!r}: plain sync check={check}, parser {parsed}")


# MCP cancellation ---------------------------------------------------------------------------
_SCOPES = ("stdio", ("127.0.0.1", "s1"), ("127.0.0.1", "s2"), None)


def _json_ids(value: Any) -> str | None:
    """The oracle's id: the JSON text of a string or integer (not a bool), else None."""
    if type(value) is str or type(value) is int:
        return json.dumps(value)
    return None


class _Filed:
    """A ticket the oracle follows: whether it is still open and must be cancelled."""

    def __init__(self, ticket: Any, scope: Any, ident: str | None) -> None:
        self.ticket, self.scope, self.id = ticket, scope, ident
        self.open, self.wanted = True, False


def mcp_cancel() -> Check:
    """Lines of JSON: the first byte of each says what it is. Even: a message (or batch) whose
    tool call is opened as a ticket under one of four scopes; odd: ``notifications/cancelled``
    params from a scope; a line starting ``!``: close ticket N. A ticket is cancelled exactly
    when a cancellation came from its (non-None) scope, while it was open, whose
    ``requestId`` is the same JSON string or integer as the id of its message's only call."""
    from fuzz.targets import Finding
    from splice_build.mcp.admission import ADMITTED_METHODS
    from splice_build.mcp.cancellation import InFlight

    def call_id(message: Any) -> str | None:
        items = message if isinstance(message, list) else [message]
        calls = [
            item
            for item in items
            if isinstance(item, dict)
            and isinstance(item.get("method"), str)
            and item["method"] in ADMITTED_METHODS
        ]
        return _json_ids(calls[0].get("id")) if len(calls) == 1 else None

    def check(data: bytes) -> None:
        logged: list[str] = []
        flight = InFlight(logged.append)
        tickets: list[_Filed] = []
        for line in data.split(b"\n")[:64]:
            if not line:
                continue
            head, body = line[0], line[1:]
            if head == ord("!"):  # the call is answered: its ticket closes
                if tickets:
                    filed = tickets[(body[:1] or b"\0")[0] % len(tickets)]
                    filed.ticket.close()
                    filed.open = False
                continue
            try:
                value = json.loads(body)
            except (ValueError, RecursionError):
                value = body.decode("utf-8", "replace")
            scope = _SCOPES[(head >> 1) % len(_SCOPES)]
            if head % 2 == 0:
                tickets.append(_Filed(flight.open(value, scope), scope, call_id(value)))
                continue
            wanted = _json_ids(value.get("requestId")) if isinstance(value, dict) else None
            flight.cancel(value, scope)
            for filed in tickets:
                if filed.open and scope is not None and filed.scope == scope:
                    filed.wanted = filed.wanted or (wanted is not None and filed.id == wanted)
        for filed in tickets:
            if filed.ticket.token.cancelled != filed.wanted:
                raise Finding(
                    f"call {filed.id} of {filed.scope}: cancelled {filed.ticket.token.cancelled}"
                )
        if len(logged) != sum(filed.wanted for filed in tickets):
            raise Finding(f"{len(logged)} log lines for the cancelled calls: {logged[:3]}")
        if any("\n" in line or "\x1b" in line for line in logged):
            raise Finding(f"a log line is not one safe line: {logged[:3]!r}")

    return check
