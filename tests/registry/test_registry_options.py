"""Which options `splice registry serve` and each `registry admin` verb take (docs/cli.md).

One flat parser reads every option of `splice registry`, so `registry admin create-user
alice --port 99 --workers 3 --label x` created the user and ignored the three options (exit
0), and `registry serve --to …` served, while `--out` on a verb other than create-token was
a usage error. Now an option the chosen action or verb does not take is `USAGE` naming it
and what it applies to. The walk covers every option of the parser × every action and verb.
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest

from splice_build.cli.commands import registry_cmd
from splice_build.cli.context import CommandContext
from splice_build.cli.output import Output
from splice_build.cli.parser import build_parser, load_commands
from splice_build.errors import ErrorCode, UsageError
from testing.cli import run_splice

ADMIN = ("create-user", "create-token", "revoke-token", "set-owner", "migrate", "migrate-artifacts")
# option: (a value, or None for a flag; what it applies to), as docs/cli.md gives them. Each
# value is the option's default where it has one: a given option counts, whatever its value.
OPTIONS: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "--data": ("splice-registry-data", ("serve", *ADMIN)),
    "--host": ("127.0.0.1", ("serve",)),
    "--port": ("8787", ("serve",)),
    "--publish-limit": ("10", ("serve",)),
    "--request-limit": ("60", ("serve",)),
    "--read-limit": ("30", ("serve",)),
    "--head-deadline": ("10", ("serve",)),
    "--body-deadline": ("60", ("serve",)),
    "--workers": ("1", ("serve",)),
    "--trusted-proxy": ("10.0.0.1", ("serve",)),
    "--label": ("x", ("create-token",)),
    "--namespace": ("acme", ("create-token",)),
    "--expires": ("30d", ("create-token",)),
    "--publish-only": (None, ("create-token",)),
    "--out": ("token.txt", ("create-token",)),
    "--show": (None, ("create-token",)),
    "--release": (None, ("set-owner",)),
    "--to": ("postgresql://u@127.0.0.1/x", ("migrate",)),
    "--artifacts": ("s3://bucket/prefix", ("migrate",)),
}
OPERANDS = {"create-token": ["alice"], "create-user": ["alice"], "revoke-token": ["tok_1"]}
OPERANDS["set-owner"] = ["acme", "alice"]


def _line(chosen: str) -> list[str]:
    words = ["serve"] if chosen == "serve" else ["admin", chosen, *OPERANDS.get(chosen, [])]
    return ["registry", *words]


def _named(key: str) -> str:
    return f"registry {key if key == 'serve' else 'admin ' + key}"


def _registry_options(parser: argparse.ArgumentParser) -> set[str]:
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    command = sub.choices["registry"]
    inherited = {s for a in parser._actions for s in a.option_strings}  # --help, global ones
    return {a.option_strings[0] for a in command._actions if a.option_strings} - inherited


def test_every_option_applies_only_to_the_actions_that_take_it(tmp_path: Path) -> None:
    parser = build_parser(load_commands(), json=True)
    assert _registry_options(parser) == OPTIONS.keys()  # a new option joins the walk here
    ctx = CommandContext(
        json=True,
        color=False,
        verbose=False,
        registry=None,
        cwd=tmp_path,
        env={},
        home=tmp_path / "home",
        interactive=False,
        out=Output(json_mode=True, stdout=io.StringIO(), stderr=io.StringIO()),
    )
    refused, taken = [], []
    for option, (value, applies) in OPTIONS.items():
        given = [option] if value is None else [option, value]
        for chosen in ("serve", *ADMIN):
            args = parser.parse_args([*_line(chosen), *given])
            assert args.options_given == (option,)
            if chosen in applies:
                registry_cmd._check_options(args)  # nothing to refuse
                taken.append((option, chosen))
                continue
            with pytest.raises(UsageError) as refusal:
                registry_cmd.run(args, ctx)  # refused before any store is opened
            users = " and ".join(_named(key) for key in applies)
            assert refusal.value.code is ErrorCode.USAGE
            assert refusal.value.message == f"{option} applies to {users}, not to {_named(chosen)}"
            assert refusal.value.hint == "run `splice registry --help` for the options of each"
            refused.append((option, chosen))
    assert len(refused) + len(taken) == len(OPTIONS) * 7
    assert len(taken) == 7 + 9 + 6 + 1 + 2
    assert not (tmp_path / "splice-registry-data").exists() and not (tmp_path / "home").exists()


def test_a_serve_option_on_an_admin_verb_is_usage_through_the_cli(tmp_path: Path) -> None:
    """Before: the user was created, exit 0."""
    data = tmp_path / "data"
    data.mkdir()
    done = run_splice(
        *("registry", "admin", "create-user", "alice", "--data", str(data), "--port", "99"),
        "--json",
    )
    assert done.code == 2, (done.stdout, done.stderr)
    assert done.json() == {
        "ok": False,
        "error": {
            "code": "USAGE",
            "message": "--port applies to registry serve, not to registry admin create-user",
            "hint": "run `splice registry --help` for the options of each",
        },
    }
    assert list(data.iterdir()) == []  # no store was made
