"""Command lines answered without argparse (cli/plain.py) are answered as the parser answers
them: for every command line of a generated space, the plain answer is either "not sure"
(None) or exactly the parser's namespace, never a line the parser refuses."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from splice_build.cli.commands import install, run
from splice_build.cli.parser import build_parser, load_commands
from splice_build.cli.plain import VALUELESS_GLOBAL_FLAGS, parsed, split_command
from splice_build.errors import SpliceError
from testing.cli import main_in_fresh_process, run_splice

FLAG_SETS = [
    list(p)
    for n in range(3)
    for c in itertools.combinations(sorted(VALUELESS_GLOBAL_FLAGS), n)
    for p in itertools.permutations(c)
] + [["--json", "--json"], ["--registry", "x"], ["--reg=x"], ["-v"]]
COMMANDS = ["run", "sync", "ru", "RUN", "--json"]
REFS = ["example.hello", "@splice/example.hello", "Bad.x", "nodot", "", "\udcff.x", "-x.y"]
WORDS = ["a=1", "a=-1", "-a=1", "-1", "--", "--json", "--input", "", "x", "\udcff=1", "k=v w"]


def _command_lines() -> list[list[str]]:
    lines = []
    for flags in FLAG_SETS:
        for command in COMMANDS:
            lines.append([*flags, command])
            for ref in REFS:
                lines.append([*flags, command, ref])
                for n in (1, 2):
                    for words in itertools.product(WORDS, repeat=n):
                        lines.append([*flags, command, ref, *words])
    return lines


def _parsed(argv: list[str]) -> dict[str, object] | None:
    """The parser's namespace for ``argv``, or None when it refuses the line."""
    try:
        return vars(build_parser(load_commands()).parse_args(argv))
    except (SpliceError, SystemExit):
        return None


def _answered(plain_args: Callable[[list[str]], object], lines: list[list[str]]) -> int:
    """How many ``lines`` ``plain_args`` answers; each answer must be the parser's."""
    answered = 0
    for argv in lines:
        plain = plain_args(argv)
        if plain is not None:
            answered += 1
            assert vars(plain) == _parsed(argv), argv
    return answered


def test_every_plain_answer_is_the_parsers() -> None:
    answered = _answered(run.plain_args, _command_lines())
    # The common shapes are answered: `run <ref> [pairs]` with flags before it.
    assert answered >= 200, answered
    assert run.plain_args(["--json", "run", "example.hello", "name=x", "n=-1"]) is not None


# `run` around its options: the tool reference, then pairs, each option group and `--` in
# every order (docs/cli.md: pairs override keys of --input in either order).
RUN_OPERANDS = ["a=1", "b=-1", "-1", "k=v w", "-x y"]
RUN_OPTIONS = [["--input", "J"], ["--input=K"], ["--dir", "D"], ["--json"], ["--no-color"]]


def _interleavings(operands: list[str], groups: list[list[str]]) -> list[list[list[str]]]:
    """Every merge of ``operands`` (kept in order) with the option ``groups`` (in order)."""
    size = len(operands) + len(groups)
    merged = []
    for at in itertools.combinations(range(size), len(groups)):
        words, rest, options = [], iter(operands), iter(groups)
        for index in range(size):
            words.append(next(options) if index in at else [next(rest)])
        merged.append(words)
    return merged


def _run_lines() -> list[tuple[list[str], dict[str, object]]]:
    """``run`` command lines and the namespace each must give: before ``--`` each option
    group counts wherever it stands and every other word is an operand; after it every
    word is an operand; the first operand is the tool reference, the others are pairs."""
    lines = []
    for n in range(3):
        for pairs in itertools.permutations(RUN_OPERANDS, n):
            for k in range(3):
                for groups in itertools.permutations(RUN_OPTIONS, k):
                    for merged in _interleavings(["example.hello", *pairs], list(groups)):
                        for end in [None, *range(len(merged) + 1)]:
                            argv, namespace = _expected(merged, end)
                            if namespace["tool_ref"] == "example.hello":  # else a bad reference
                                lines.append((argv, namespace))
    return lines


def _expected(merged: list[list[str]], end: int | None) -> tuple[list[str], dict[str, object]]:
    values: dict[str, object] = {"input_json": None, "package_dir": None}
    flags: set[str] = set()
    operands: list[str] = []
    for index, group in enumerate(merged):
        if end is not None and index >= end:
            operands.extend(group)
        elif group[0].startswith("--input"):
            values["input_json"] = group[-1].removeprefix("--input=")
        elif group[0] == "--dir":
            values["package_dir"] = group[1]
        elif group[0].startswith("--"):
            flags.add(group[0])
        else:
            operands.extend(group)
    words = [word for group in merged for word in group]
    if end is not None:
        words.insert(len([w for group in merged[:end] for w in group]), "--")
    namespace = {
        **vars(parsed(frozenset(flags), "run")),
        **values,
        "tool_ref": operands[0],
        "pairs": operands[1:],
    }
    return ["run", *words], namespace


def test_run_pairs_in_any_position_are_parsed_and_the_plain_path_agrees() -> None:
    parser = build_parser(load_commands())
    lines = _run_lines()
    assert len(lines) > 10_000, len(lines)
    for argv, expected in lines:
        assert vars(parser.parse_args(argv)) == expected, argv
        plain = run.plain_args(argv)
        assert plain is None or vars(plain) == expected, argv
    assert vars(parser.parse_args(["run", "x.y", "--input", "J", "a=1"]))["pairs"] == ["a=1"]


INSTALL_WORDS = [
    "--frozen",
    "--accept-permissions",
    "--require-signed",
    "--allow-signer-change",
    "--froz",
    "--json",
    "--registry",
    "x",
    "",
    "-h",
]


def test_every_plain_install_is_the_parsers() -> None:
    lines = [
        [*flags, command, *words]
        for flags in FLAG_SETS
        for command in ("install", "instal", "run")
        for n in range(4)
        for words in itertools.permutations(INSTALL_WORDS, n)
    ] + [["install", "--frozen", "--frozen"]]
    answered = _answered(install.plain_args, lines)
    # Every line that holds only value-less global flags (10 choices of at most two, in any
    # order), then `install`, then distinct install options (41 ordered choices of at most
    # three of the four) is answered.
    assert answered == 10 * 41, answered
    assert install.plain_args(["--json", "install", "--frozen"]) is not None


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--json", "run", "x.y"], (frozenset({"--json"}), "run", ["x.y"])),
        (["run"], (frozenset(), "run", [])),
        (["--json", "--json", "run"], None),
        (["--registry", "x", "run"], None),
        (["--json"], None),
        ([], None),
    ],
)
def test_split_command(argv: list[str], expected: object) -> None:
    assert split_command(argv) == expected


def test_a_plain_run_and_install_skip_the_parser_and_answer_as_the_parsed_form(
    tmp_path: Path,
) -> None:
    """The same run, once in a shape only the parser reads (``--input``), once plain; the
    same for a no-op install."""
    project = tmp_path / "project"
    project.mkdir()
    for args in (("init",), ("add", "@splice/example")):
        assert run_splice(*args, cwd=project).code == 0
    parsed = run_splice("--json", "run", "--input", '{"name": "x"}', "example.hello", cwd=project)
    plain = run_splice("--json", "run", "example.hello", "name=x", cwd=project)
    assert plain.code == parsed.code == 0, plain.stderr
    answers = [{**done.json(), "durationMs": 0} for done in (plain, parsed)]
    assert answers[0] == answers[1]
    assert answers[0]["output"] == {"message": "Hello, x."}
    ran, imported = main_in_fresh_process(
        ["run", "example.hello", "name=x"], cwd=project, watched=["argparse"]
    )
    assert (ran.code, imported) == (0, []), ran.stderr

    # `install`: a repeated global flag sends the same command line through the parser.
    parsed = run_splice("--json", "--json", "install", "--frozen", cwd=project)
    plain = run_splice("--json", "install", "--frozen", cwd=project)
    assert (plain.code, plain.stdout) == (parsed.code, parsed.stdout) == (0, parsed.stdout)
    assert [r["name"] for r in plain.json()] == ["@splice/example"]
    installed, imported = main_in_fresh_process(["install"], cwd=project, watched=["argparse"])
    assert (installed.code, imported) == (0, []), installed.stderr
