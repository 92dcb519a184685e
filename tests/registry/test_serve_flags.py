"""`splice registry`'s number flags (docs/registry.md#running-your-own): ASCII digits
only, within their bounds, else a usage error naming the flag, before anything is served.

``str.isdigit()`` and ``int()`` take more than ASCII digits: ``--publish-limit ١٢`` (Arabic-Indic
digits) served with a limit of 12, ``int()`` also takes ``1_0`` and `` 10``, and ``²`` passed
``isdigit()`` and then failed ``int()`` with argparse's "invalid _count value"."""

from __future__ import annotations

import pytest

from splice_build.cli.parser import build_parser, load_commands
from splice_build.errors import ErrorCode, UsageError

FLAGS = {  # flag: (a value it takes, its value, values out of its bounds)
    "--head-deadline": ("3", 3.0, ("0", "86401")),
    "--body-deadline": ("86400", 86400.0, ("0", "86401")),
    "--publish-limit": ("0", 0, ("1234567890",)),
    "--request-limit": ("12", 12, ("1234567890",)),
    "--read-limit": ("7", 7, ("1234567890",)),
    "--workers": ("2", 2, ("0", "257")),
    "--port": ("0", 0, ("65536",)),
    "--expires": ("30d", 30, ("0", "366d", "١d")),  # admin create-token's
}
NOT_DIGITS = ("١٢", "1_0", "²", "٣", "１２", " 5", "5 ", "+5", "-1", "5.0", "0x5", "", "5s")


def test_every_number_flag_takes_ascii_digits_within_its_bounds_only() -> None:
    parser = build_parser(load_commands(), json=True)
    taken = {}
    refused = []
    for flag, (good, value, out_of_bounds) in FLAGS.items():
        args = parser.parse_args(["registry", "serve", flag, good])
        taken[flag] = getattr(args, flag[2:].replace("-", "_"))
        assert taken[flag] == value, flag
        for bad in (*NOT_DIGITS, *out_of_bounds):
            with pytest.raises(UsageError) as refusal:
                parser.parse_args(["registry", "serve", f"{flag}={bad}"])
            assert refusal.value.code is ErrorCode.USAGE
            assert refusal.value.message.startswith(f"argument {flag}: "), refusal.value.message
            refused.append((flag, bad))
    assert len(refused) == len(FLAGS) * len(NOT_DIGITS) + 13


def test_the_deadlines_default_to_the_servers_own() -> None:
    """Not given, each is the server's default (splice_build/connections.py HEAD_SECONDS,
    the client's request deadline for a body: docs/registry.md#deadlines)."""
    from splice_build.cli.commands.registry_cmd import _deadlines
    from splice_build.registry.http.server import DEFAULT_DEADLINES, ServeDeadlines

    parser = build_parser(load_commands(), json=True)
    assert _deadlines(parser.parse_args(["registry", "serve"])) == DEFAULT_DEADLINES
    assert ServeDeadlines(head=10.0, body=60.0) == DEFAULT_DEADLINES
    given = parser.parse_args(["registry", "serve", "--body-deadline", "5"])
    assert _deadlines(given) == ServeDeadlines(head=10.0, body=5.0)
