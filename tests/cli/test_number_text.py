"""Every number a person types (a flag of any command, an environment setting) is ASCII digits
of a bounded length (spec/number_text.py): Python's ``int()`` and ``float()`` also read other
scripts' digits, ``_``, signs, whitespace, ``nan``, ``inf`` and exponents, and ``int()`` raises
on thousands of digits. A refused flag names the option and what it takes, and shows what was
typed on one line, at most 40 characters of it, never a private function's name (argparse's
``invalid _port value``)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from splice_build.cli.parser import build_parser, load_commands
from splice_build.errors import ErrorCode, SpliceError
from splice_build.security.terminal import one_line
from testing.cli import run_splice

# Spellings no flag or setting reads as a number: each is a number to int() or float(), or
# made int() raise, or was echoed raw.
BAD = (
    "١٢",  # Arabic-Indic digits
    "１２",  # fullwidth digits
    "²",  # isdigit() but not int()
    "1_0",
    "+5",
    " 5",
    "5 ",
    "\t5",
    "5\n",
    "nan",
    "inf",
    "1e3",
    "0x10",
    "-1",
    "",
    "1" * 5000,
    "\x1b[31m5",
    "\udcff" * 100,  # an undecodable byte of the command line, 100 times
)
WHOLE_ONLY = ("5.0", "5.", ".5")  # a decimal point where a whole number is meant

NUMERIC_FLAGS = {
    ("mcp", "--max-calls"),
    ("mcp", "--port"),
    ("registry", "--body-deadline"),
    ("registry", "--expires"),
    ("registry", "--head-deadline"),
    ("registry", "--port"),
    ("registry", "--publish-limit"),
    ("registry", "--read-limit"),
    ("registry", "--request-limit"),
    ("registry", "--workers"),
    ("search", "--limit"),
    ("sync", "--jobs"),
    ("token", "--expires"),
}


def _typed_options(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str, argparse.Action]]:
    """(command, long option, action) of every option of every command with a ``type=``."""
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        for action in command._actions:
            if action.option_strings and action.type not in (None, str):
                yield name, action.option_strings[-1], action


def _refusal(
    parser: argparse.ArgumentParser, command: str, option: str, value: str
) -> SpliceError | None:
    """The error of parsing ``splice COMMAND OPTION=VALUE`` when it is about ``option``."""
    try:
        parser.parse_args([command, f"{option}={value}"])
    except SpliceError as exc:
        return exc if f"argument {option}" in exc.message or "/" + option in exc.message else None
    return None


def test_every_typed_flag_refuses_with_a_safe_message() -> None:
    """Every ``type=`` option of every command: a hostile value is refused (or taken as text)
    with a message naming the option, its value shown on one line, at most 40 characters of
    it, and no Python function name; the numeric ones refuse every bad spelling (USAGE)."""
    parser = build_parser(load_commands())
    seen = set()
    for command, option, action in _typed_options(parser):
        try:
            numeric = isinstance(action.type("5"), int)
        except (argparse.ArgumentTypeError, SpliceError):
            numeric = False
        if numeric:
            seen.add((command, option))
        for value in (*BAD, *WHOLE_ONLY) if numeric else BAD:
            refused = _refusal(parser, command, option, value)
            if numeric:
                assert refused is not None, (command, option, value)
                assert refused.code is ErrorCode.USAGE, (command, option, value)
            if refused is None:
                continue
            message = refused.message
            assert re.search(r"invalid \S+ value", message) is None, message
            private = getattr(action.type, "__name__", "")
            assert not private.startswith("_") or private not in message, message
            assert one_line(message) == message, (command, option, message)
            # At most 40 typed characters, each shown as at most a 10-character escape.
            assert len(message) < 600, (command, option, len(message))
    assert seen == NUMERIC_FLAGS


def test_cli_md_lists_every_numeric_flag() -> None:
    """cli.md says which flags are numbers written in ASCII digits only: its list is the one
    the parser's types make (a new numeric flag, or one no longer numeric, is said there)."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    listed = page.split("A number, in a setting above or a flag (", 1)[1].split(")", 1)[0]
    assert set(re.findall(r"`(--[\w-]+)`", listed)) == {flag for _, flag in NUMERIC_FLAGS}


@pytest.mark.parametrize(
    ("name", "good", "wanted", "decimal"),
    [
        ("SPLICE_REGISTRY_DEADLINE", ("12", "0.5", "86400"), ErrorCode.INVALID_CONFIG, True),
        ("SPLICE_REGISTRY_MIN_RATE", ("1", "65536"), ErrorCode.INVALID_CONFIG, False),
        ("SPLICE_MCP_MAX_CALLS", ("1", "999999999"), ErrorCode.USAGE, False),
    ],
)
def test_every_number_setting_refuses_every_bad_spelling(
    name: str, good: tuple[str, ...], wanted: ErrorCode, decimal: bool
) -> None:
    """Each number read from the environment, with its own code; empty is its default."""
    from splice_build.mcp.admission import default_max_calls
    from splice_build.registry.client.deadline import Deadlines

    def read(value: str) -> object:
        env = {name: value}
        return default_max_calls(env) if name == "SPLICE_MCP_MAX_CALLS" else Deadlines.from_env(env)

    for value in good:
        read(value)
    read("")
    for value in (*BAD, " ", *(() if decimal else WHOLE_ONLY)):
        if value == "":
            continue
        with pytest.raises(SpliceError) as caught:
            read(value)
        assert caught.value.code is wanted, (name, value)


def test_a_bad_deadline_stops_the_real_command(tmp_path: Path) -> None:
    """End to end: ``SPLICE_REGISTRY_DEADLINE=١٢`` was read as 12 seconds and the command went
    on to the registry (here an address nothing listens on: REGISTRY_UNREACHABLE)."""
    done = run_splice(
        "--json",
        "--registry",
        "http://127.0.0.1:9",
        "info",
        "@acme/greeter",
        cwd=tmp_path,
        env={"SPLICE_REGISTRY_DEADLINE": "١٢"},
    )
    assert done.code == 2, done.stdout + done.stderr
    assert done.json()["error"]["code"] == "INVALID_CONFIG"
