"""The CLI skeleton through the real binary: exit codes, stderr format, --json shapes."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from splice_build import __version__
from splice_build.cli.parser import build_parser, load_commands
from splice_build.errors import UsageError
from testing.cli import run_splice


def test_version_prints_and_exits_zero() -> None:
    for flag in ("--version", "-v"):
        result = run_splice(flag)
        assert result.code == 0
        assert result.stdout == f"splice {__version__}\n"


def test_no_command_prints_help_on_stderr_and_exits_2() -> None:
    result = run_splice()
    assert result.code == 2
    assert result.stdout == ""
    assert "usage: splice" in result.stderr


def test_help_goes_to_stdout_with_exit_0() -> None:
    result = run_splice("--help")
    assert result.code == 0
    for command in ("init", "pack", "validate", "demo", "run"):
        assert command in result.stdout


def test_unknown_command_is_a_usage_error() -> None:
    result = run_splice("frobnicate")
    assert result.code == 2
    assert result.stderr.startswith("error: ")
    assert "hint: run `splice --help` for usage" in result.stderr


def test_unknown_option_is_a_usage_error_in_json_too() -> None:
    result = run_splice("init", "--bogus", "--json")
    assert result.code == 2
    body = json.loads(result.stdout)
    assert body["ok"] is False
    assert body["error"]["code"] == "USAGE"


def test_global_options_work_before_and_after_the_command(tmp_path: Path) -> None:
    before = run_splice("--json", "init", str(tmp_path / "a"))
    after = run_splice("init", str(tmp_path / "b"), "--json")
    assert before.code == after.code == 0
    assert before.json()["created"] is True
    assert after.json()["created"] is True


def test_no_color_leaves_plain_error_text(tmp_path: Path) -> None:
    result = run_splice("validate", str(tmp_path / "missing"), "--no-color")
    assert result.code == 1
    assert "\x1b[" not in result.stderr


def test_only_the_one_shot_commands_collect_less_often() -> None:
    """``run`` and ``sync`` raise the young generation's threshold (fewer collections while
    their modules load); a long-running server keeps the interpreter's."""
    import gc

    from splice_build.cli.main import _command_word, _fewer_collections

    default = gc.get_threshold()
    try:
        for argv, young in (
            (["run", "example.hello"], 20_000),
            (["--json", "sync", "--check"], 20_000),
            (["mcp"], default[0]),
            (["registry", "serve"], default[0]),
            (["--registry", "x", "run", "example.hello"], default[0]),
        ):
            gc.set_threshold(*default)
            _fewer_collections(_command_word(argv))
            assert gc.get_threshold() == (young, *default[1:]), argv
    finally:
        gc.set_threshold(*default)


def test_version_and_help_under_json_are_one_document() -> None:
    """docs/cli.md: under ``--json`` stdout is one JSON document, ``--version`` and ``--help``
    included (the help as ``splice help <command> --json`` gives it)."""
    for argv in (["--json", "-v"], ["--json", "--version"], ["-v", "--json"]):
        result = run_splice(*argv)
        assert (result.code, result.json()) == (0, {"version": __version__}), argv
    top = run_splice("--json", "-h")
    assert top.code == 0
    assert top.json()["command"] is None and "usage: splice" in top.json()["help"]
    for argv in (["--json", "run", "--help"], ["run", "--help", "--json"], ["help", "run"]):
        result = run_splice(*argv, *(["--json"] if argv[0] == "help" else []))
        assert result.code == 0, argv
        assert result.json()["command"] == "run", argv
        assert result.json()["help"].startswith("usage: splice run"), argv
        # where a tool's inputs are listed: the help named none (the obvious next question)
        assert "`splice info @ns/name` lists a package's tools and inputs" in " ".join(
            result.json()["help"].split()
        ), argv
    assert (
        run_splice("--json", "run", "--help").stdout == run_splice("help", "run", "--json").stdout
    )


def test_json_after_the_end_of_options_is_an_operand(tmp_path: Path) -> None:
    """``splice add -- --json``: the ``--json`` after ``--`` is a package name, not the flag,
    so the usage error is human text; before ``--`` the flag counts."""
    human = run_splice("add", "--", "--json", cwd=tmp_path)
    assert human.code == 2
    assert human.stdout == ""
    assert human.stderr.startswith('error: Invalid package name "--json"')
    document = run_splice("--json", "add", "--", "--json", cwd=tmp_path)
    assert document.code == 2
    assert document.json()["error"]["code"] == "INVALID_NAME"
    for argv in (["run", "--", "--json"], ["run", "x.y", "--", "--verbose", "--json"]):
        result = run_splice(*argv, cwd=tmp_path)
        assert result.code in (1, 2) and result.stdout == "", argv
        assert result.stderr.startswith("error: "), argv


def test_every_option_says_what_it_takes_in_the_help() -> None:
    """Each option of each command has a help text, and one taking a value a name for it
    of its own: `splice registry --help` showed `--publish-limit PUBLISH_LIMIT` (argparse's
    name of the attribute) without its default, and create-token's `--label LABEL`,
    `--namespace NS` and `--expires N[d]` with no word of what they do."""
    unsaid = [
        f"{name} {action.option_strings[0]}"
        for name, action in _options()
        if not action.help or (action.nargs != 0 and "_" in (action.metavar or action.dest))
    ]
    assert unsaid == []


def test_every_option_or_operand_with_a_default_names_it_in_the_help() -> None:
    """An option taking a value that has a default says which: `splice sync --help` showed
    `-j N  run N tasks at once` (1 unless given) and `splice demo --help` `--name NAME`
    (Splice), where `search --limit` says `default 20`. So does an operand that may be left
    out: `splice validate --help` showed `target  package directory or archive`, with no word
    of the `.` read without one, where `pack`, `publish` and `init` say `(default: .)`."""
    unsaid = [
        f"{name} {action.option_strings[0] if action.option_strings else action.dest}"
        for name, action in _options(operands=True)
        if action.nargs != 0
        and action.default not in (None, [], argparse.SUPPRESS)
        and not (
            "default" in (action.help or "")
            and all(str(value) in action.help for value in _values(action.default))
        )
    ]
    assert unsaid == []


def test_keys_help_says_what_each_action_takes() -> None:
    """`splice keys --help` said of its operands only "name, @namespace or key id": nothing of
    `trust`'s public key file, or of `revoke` and `trust` taking a namespace and a key."""
    from splice_build.cli.commands.keys import USAGE

    [command] = [c for name, c in _commands() if name == "keys"]
    shown = " ".join(command.format_help().split())
    assert [u for u in USAGE.values() if u.removeprefix("keys ") not in shown] == []


def _values(default: object) -> list[object]:
    """The values of an option's default: the items of a list (`secret-scan`'s `['.']`)."""
    return list(default) if isinstance(default, list) else [default]


def _options(*, operands: bool = False) -> list[tuple[str, argparse.Action]]:
    """Each option of each command, with the command's name; ``operands``: its operands too."""
    return [
        (name, action)
        for name, command in _commands()
        for action in command._actions
        if action.option_strings or operands
    ]


def _commands() -> list[tuple[str, argparse.ArgumentParser]]:
    """Each command's name and parser."""
    parser = build_parser(load_commands())
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices.items())


def test_a_mistyped_command_or_option_names_the_closest_one() -> None:
    """A typo is a usage error that says what was meant and sends to that command's help,
    not argparse's list of every command with the top-level hint; a missing verb is named
    alone."""
    parser = build_parser(load_commands())
    for argv, message, hint in (
        (["instal"], "unknown command 'instal' (did you mean 'install'?)", "splice"),
        (["frobnicate"], "unknown command 'frobnicate'", "splice"),
        (
            ["add", "--acept-permissions", "@a/b"],
            "unrecognized arguments: --acept-permissions (did you mean '--accept-permissions'?)",
            "splice add",
        ),
        (["list", "extra"], "unrecognized arguments: extra", "splice list"),
        # a mistyped option, not the operand it hid or the value read as one
        (
            ["add", "--acept-permissions"],
            "unrecognized arguments: --acept-permissions (did you mean '--accept-permissions'?)",
            "splice add",
        ),
        (
            ["registry", "--prot", "8000", "serve"],
            "unrecognized arguments: --prot (did you mean '--port'?)",
            "splice registry",
        ),
        (["keys", "--key", "k", "--nope"], "unrecognized arguments: --nope", "splice keys"),
        # no abbreviation is taken: a shortened option names the one it starts
        (
            ["add", "--acc", "@a/b"],
            "unrecognized arguments: --acc (did you mean '--accept-permissions'?)",
            "splice add",
        ),
        (
            ["sync", "-j", "2", "--ch"],
            "unrecognized arguments: --ch (did you mean '--check'?)",
            "splice sync",
        ),
        # an unknown option's value is never shown (a shortened --token's included)
        (
            ["login", "--tok=splice_secret"],
            "unrecognized arguments: --tok=… (did you mean '--token'?)",
            "splice login",
        ),
        # ... or the value read as a package or tool reference its check refused
        (
            ["add", "--regsitry", "local", "@a/b"],
            "unrecognized arguments: --regsitry (did you mean '--registry'?)",
            "splice add",
        ),
        (
            ["run", "--inptu", "{}", "example.hello"],
            "unrecognized arguments: --inptu (did you mean '--input'?)",
            "splice run",
        ),
        # operands a verb may leave out are not listed as missing with it
        (["keys"], "the following arguments are required: action", "splice keys"),
        (["registry"], "the following arguments are required: action", "splice registry"),
        (
            ["token", "lst"],
            "argument action: invalid choice: 'lst' (choose from 'list', 'create', 'revoke')"
            " (did you mean 'list'?)",
            "splice token",
        ),
    ):
        with pytest.raises(UsageError) as raised:
            parser.parse_args(argv)
        assert (raised.value.message, raised.value.hint) == (
            message,
            f"run `{hint} --help` for usage",
        ), argv
    for argv in (["--json", "instal"], ["--json", "help", "instal"]):
        result = run_splice(*argv)
        assert result.code == 2, argv
        assert result.json()["error"] == {
            "code": "USAGE",
            "message": "unknown command 'instal' (did you mean 'install'?)",
            "hint": "run `splice --help` for usage",
        }, argv


def test_an_option_may_stand_between_any_two_operands() -> None:
    """docs/cli.md: options may come after every word. argparse fills positionals from the
    first run of operands only, so ``add @a/b --accept-permissions @c/d`` left ``@c/d``
    unrecognized and ``registry admin --data DIR create-user alice`` lost its verb. Every
    place an option can go gives the namespace it gives at the end of the line."""
    parser = build_parser(load_commands())
    lines = (
        (["add", "@a/b", "@c/d"], ["--accept-permissions"]),
        (["registry", "admin", "create-user", "alice"], ["--data", "/srv/r"]),
        (["registry", "admin", "set-owner", "acme", "bob"], ["--json"]),
        (["token", "revoke", "tok_0123456789abcdef"], ["--registry", "local"]),
        (["namespace", "add-maintainer", "acme", "bob"], ["--json"]),
        (["config", "set", "registry", "local"], ["--json"]),
        (["keys", "trust", "@acme", "ed25519:0123456789abcdef"], ["--json"]),
        (["workspace", "add", "packages/a"], ["--root", "/repo"]),
        (["search", "web", "tools"], ["--limit", "5"]),
        (["secret-scan", "a", "b"], ["--json"]),
        (["run", "x.y", "a=1", "b=2"], ["--input", "{}"]),
        (["remove", "@a/b", "@c/d"], ["--json"]),
    )
    for words, option in lines:
        expected = parser.parse_args([*words, *option])
        for place in range(1, len(words)):
            line = [*words[:place], *option, *words[place:]]
            assert parser.parse_args(line) == expected, line
    # after ``--`` an option word is an operand; an option without its value says so
    assert parser.parse_args(["run", "x.y", "a=1", "--", "--json"]).pairs == ["a=1", "--json"]
    with pytest.raises(UsageError, match="--input: expected one argument"):
        parser.parse_args(["run", "x.y", "--input"])


def test_python_dash_m_splice_build_is_the_splice_command(tmp_path: Path) -> None:
    """`python -m splice_build` answered "No module named splice_build.__main__": the way to
    run Splice where the `splice` script is not on PATH did not exist."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "splice_build", "--json", "--version"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout) == {"version": __version__}


def test_an_interrupt_before_the_error_handler_is_exit_130_without_a_traceback() -> None:
    """^C in a command's first milliseconds, before its error handler began (review/walkthrough:
    50-80 ms after the start), printed a traceback and exited 1. The interrupt is sent where
    ``main`` begins, as a ^C landing there would be."""
    import subprocess
    import sys

    code = (
        "import os, signal\n"
        # Python's own handler, which a process started with SIGINT ignored (an xdist
        # worker's child) would not install
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from splice_build.cli import main as m\n"
        "m._open_standard_descriptors = lambda: os.kill(os.getpid(), signal.SIGINT)\n"
        "m.entry()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "list"], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "")
