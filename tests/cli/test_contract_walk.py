"""The machine-readable contract of ``splice`` (docs/cli.md#exit-codes-and-errors), walked
as a whole: every command word sequence the parser has × success, not a project, a bad
operand (argparse's usage errors included), an unreachable registry, a damaged install and
files where Splice keeps directories × ``--json`` on and off, each cell run through the
CLI's ``main`` in this process (a subprocess per cell would cost seconds).

Under ``--json`` stdout is exactly one JSON document, a failure is ``{"ok": false, "error"}``
with a code of the errors.py catalogue (or one of the documented reports of a failed check),
never ``INTERNAL_ERROR``, and the exit code is the one docs/cli.md's table gives that code;
stderr holds no JSON. Without it, stdout never holds the ``--json`` document, no traceback
is written, and a failure says ``error:`` on stderr. A command the parser gains joins the
walk by itself; it only needs its success row below (or a reason for having none).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from splice_build.cli.main import main
from splice_build.cli.parser import build_parser, load_commands
from splice_build.errors import ErrorCode, SpliceError
from testing.cli import Completed, splice_executable
from testing.mcp_clients import DEMO_TOKEN
from testing.packages import write_package
from testing.registry_fixtures import new_project

COMMANDS = load_commands()
_PARSER = build_parser(COMMANDS)
(_SUB,) = (a for a in _PARSER._actions if isinstance(a, argparse._SubParsersAction))


def _command_paths() -> Iterator[tuple[str, ...]]:
    """Every command word sequence: each command, then each choice of its leading word
    arguments (``workspace list``, ``registry admin create-token``, ``keys revoke``…)."""
    for name, command in _SUB.choices.items():
        paths: list[tuple[str, ...]] = [(name,)]
        for action in command._actions:
            if action.option_strings or not action.choices:
                continue
            optional = list(paths) if action.nargs == "?" else []
            paths = [(*p, choice) for p in paths for choice in action.choices] + optional
        yield from paths


PATHS = [" ".join(words) for words in _command_paths()]

# What succeeds, run in a copy of a project where @splice/example (from the embedded registry)
# is installed; {pkg} is a package directory, {store} a registry store holding the user alice,
# {cell} the cell's number (a name no other cell takes).
SUCCESS: dict[str, list[str]] = {
    "init": [],
    "add": ["@splice/example"],
    "install": [],
    "remove": ["@splice/example"],
    "list": [],
    "outdated": [],
    "update": [],
    "verify": ["@splice/example"],
    "pack": ["{pkg}", "--out", "out.tgz"],
    "validate": ["{pkg}"],
    "run": ["example.hello", "name=x"],
    "search": ["example"],
    "info": ["@splice/example"],
    "publish": ["{pkg}", "--dry-run"],
    "logout": [],
    "whoami": [],
    "token list": [],
    "token create": ["--label", "x"],
    "namespace info": ["@splice"],
    "keys generate": ["k{cell}"],
    "keys list": [],
    "config list": [],
    "config": [],
    "config get": ["registry"],
    "config set": ["registry", "embedded"],
    "config unset": ["registry"],
    "registry admin create-user": ["u{cell}", "--data", "{store}"],
    "registry admin create-token": ["alice", "--show", "--data", "{store}"],
    "registry admin set-owner": ["@acme", "alice", "--data", "{store}"],
    "registry admin migrate-artifacts": ["--data", "{store}"],
    "secret-scan": ["splice.json"],
    "sync": [],
    "workspace list": [],
    "workspace add": ["."],
    "workspace remove": ["."],
    "doctor": [],
    "help": ["list"],
}

# Command words with no success cell here, and why (their other cells are walked).
NO_SUCCESS = {
    "demo": "starts Node five times (tests/cli/test_demo.py)",
    "mcp": "serves until stopped (tests/mcp; its --json stop: the test below)",
    "registry serve": "serves until stopped (tests/registry)",
    "registry admin": "only a verb is an action",
    "login": "needs a token the registry issued (tests/registry)",
    "token revoke": "needs a token id the registry issued (tests/registry)",
    "namespace add-maintainer": "needs an owned namespace and a second user (tests/registry)",
    "namespace remove-maintainer": "needs an owned namespace and a second user (tests/registry)",
    "keys register": "needs an owned namespace (tests/signing)",
    "keys revoke": "needs a registered key (tests/signing)",
    "keys trust": "needs a registered key (tests/signing)",
    "sign": "needs a published version and its key (tests/signing)",
    "registry admin revoke-token": "needs a token id (tests/registry)",
    "registry admin migrate": "needs a PostgreSQL server (tests/registry)",
}
# ``registry serve <verb>``: the parser takes a verb after either action; only admin uses it.
NO_SUCCESS.update({p: "a verb of registry admin" for p in PATHS if p.startswith("registry serve ")})

# Commands whose failed check is a report rather than {"ok": false, "error"} (docs/cli.md:
# list's rows carry each refusal's code, verify's report names each failed check's code,
# sync's result has "ok": false and each project's error, secret-scan's its findings,
# demo's its three runs; run's envelope is documented with its error).
REPORTS = {"list", "verify", "sync", "secret-scan", "demo", "run"}

# docs/cli.md: `run --json` prints the whole result envelope, a failure included.
_ENVELOPE = {"ok", "package", "tool", "error", "logs", "durationMs", "isolation"}

# A value no positional argument accepts (a name, a reference, a path, a word).
BAD_OPERAND = "@@no such/..\\x"
UNREACHABLE = "http://127.0.0.1:9"
# Command lines not walked bare: they serve until stopped, or run the whole demo.
NOT_BARE = {("mcp",), ("registry", "serve"), ("demo",)}


# Without --json, an error is written by the one handler (cli/errors.py) whatever the
# command, and a result's text is each command's own: walked for results and for the refusals
# that cost least.
TEXT_SITUATIONS = {"success", "not a project"}


# Global options may stand before the command word or after any word (docs/cli.md), and the
# plain paths of run, install and sync read their own command lines (cli/plain.py): --json
# comes first in these situations, last in the others.
JSON_FIRST = {"bad operand", "unreachable registry", "files in the way"}


@dataclass(frozen=True)
class Cell:
    path: str
    situation: str
    argv: tuple[str, ...]
    json: bool


def _bad_operands(path: str) -> list[str]:
    """A bad value for every positional argument that is not a command word; one operand
    too many for a command that takes none (argparse's own usage error)."""
    command = _SUB.choices[path.split()[0]]
    operands = [a for a in command._actions if not a.option_strings and not a.choices]
    return [BAD_OPERAND] * max(1, len(operands))


def _cells() -> Iterator[Cell]:
    for path in PATHS:
        words = tuple(path.split())
        given = tuple(SUCCESS.get(path, ()))
        situations = {"bad operand": (*words, *_bad_operands(path))}
        if path in SUCCESS:
            situations |= {
                "success": (*words, *given),
                "not a project": (*words, *given),
                "unreachable registry": (*words, *given),
                "damaged install": (*words, *given),
                "files in the way": (*words, *given),
            }
        for situation, argv in situations.items():
            if argv in NOT_BARE:
                continue
            flagged = ("--json", *argv) if situation in JSON_FIRST else (*argv, "--json")
            yield Cell(path, situation, flagged, True)
            if situation in TEXT_SITUATIONS:
                yield Cell(path, situation, argv, False)


class _ClosedPipe(io.StringIO):
    """A stdout nobody reads: ``splice … | head -0``."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


@contextlib.contextmanager
def _as_a_process(
    cwd: Path, env: Mapping[str, str], stdout: io.StringIO | None = None
) -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """What ``main`` reads and changes of the process, set for one call and restored."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGHUP)}
    thresholds = gc.get_threshold()
    stdout, stderr = stdout or io.StringIO(), io.StringIO()
    os.environ.update(env)
    os.chdir(cwd)
    sys.stdin = io.TextIOWrapper(io.BytesIO(b""))
    sys.stdout, sys.stderr = stdout, stderr
    try:
        yield stdout, stderr
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        gc.set_threshold(*thresholds)


def invoke(
    argv: tuple[str, ...], cwd: Path, env: Mapping[str, str], stdout: io.StringIO | None = None
) -> Completed:
    with _as_a_process(cwd, env, stdout) as (out, stderr):
        code = main(list(argv))
    return Completed(code, out.getvalue(), stderr.getvalue())


# The files of a project's state a command may rewrite in place (SQLite, the stat cache, the
# lock file's times): copied for each cell. Installed files are only ever swapped or removed
# as a whole (install/transaction.py), so each cell's copy links them (a copy costs ~10 ms).
_REWRITTEN = {"graph.sqlite3", "statcache.json", "state.lock", "splice.json", "splice.lock"}


def _copy_project(template: Path, to: Path) -> None:
    to.mkdir()
    for directory, dirs, files in os.walk(template):
        here = to / os.path.relpath(directory, template)
        for name in dirs:
            (here / name).mkdir()
        for name in files:
            copy = shutil.copyfile if name in _REWRITTEN else os.link
            copy(os.path.join(directory, name), here / name)


def _digests(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


DIRS = ("keys", "registry", "cache")  # of SPLICE_HOME, made files in "files in the way"


@dataclass(frozen=True)
class Templates:
    installed: Path
    damaged: Path  # a file of the installed package changed
    in_the_way: Path  # .splice/packages a file
    in_the_way_home: Path  # SPLICE_HOME: keys, registry and cache files
    env: dict[str, str]
    words: dict[str, str]  # {pkg}, {store}


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Templates:
    base = tmp_path_factory.mktemp("walk")
    env = {"SPLICE_HOME": str(base / "home"), "HOME": str(base), "NO_COLOR": "1"}
    words = {"{pkg}": str(write_package(base / "pkg")), "{store}": str(base / "store")}
    (base / "store").mkdir()
    installed = base / "installed"
    installed.mkdir()
    for argv in (
        ("init",),
        ("add", "@splice/example"),
        ("registry", "admin", "create-user", "alice", "--data", words["{store}"]),
    ):
        done = invoke(argv, installed, env)
        assert done.code == 0, (argv, done.stderr)
    damaged = base / "damaged"
    shutil.copytree(installed, damaged, symlinks=True)
    skill = damaged / ".splice" / "packages" / "@splice" / "example" / "SKILL.md"
    skill.write_text(skill.read_text() + "\ntampered\n")
    in_the_way = base / "in-the-way"
    shutil.copytree(installed, in_the_way, symlinks=True)
    shutil.rmtree(in_the_way / ".splice" / "packages")
    in_the_way_home = base / "in-the-way-home"
    in_the_way_home.mkdir()
    for path in (in_the_way / ".splice" / "packages", *(in_the_way_home / d for d in DIRS)):
        path.write_text("a file where Splice keeps a directory\n")
    return Templates(installed, damaged, in_the_way, in_the_way_home, env, words)


def _assert_contract(cell: Cell, done: Completed) -> dict | list | None:
    """The contract of one cell; the JSON document under --json."""
    what = (cell, done)
    assert done.code in (0, 1, 2), what
    assert "Traceback" not in done.stdout + done.stderr, what
    if not cell.json:
        if done.code != 0 and cell.path.split()[0] not in REPORTS:
            assert "error: " in done.stderr, what
        return None
    try:
        document = json.loads(done.stdout)  # refuses anything after the first document
    except ValueError as exc:
        raise AssertionError(f"not one JSON document ({exc}): {what}") from None
    assert not any(line.startswith(("{", '"', "}")) for line in done.stderr.splitlines()), what
    failed = isinstance(document, dict) and document.get("ok") is False
    if done.code == 0:
        assert not failed, what
        return document
    if cell.path.split()[0] in REPORTS and "error" not in document:
        return document  # a report of a failed check, documented per command
    shape = _ENVELOPE if cell.path == "run" else {"ok", "error"}
    assert failed and "error" in document and set(document) <= shape, what
    error = document["error"]
    assert error["code"] != "INTERNAL_ERROR", what
    assert error["code"] in set(ErrorCode), what
    assert isinstance(error["message"], str) and error["message"], what
    # A command line refused says where to read how to write it (cli/main.py ``_run``).
    assert error["code"] != "USAGE" or error.get("hint"), what
    assert done.code == SpliceError(ErrorCode(error["code"]), "").exit_code, what
    return document


# The codes some cells must answer (a documented refusal, not only a well-formed one).
PROJECT_COMMANDS = {name for name, module in COMMANDS.items() if module.NEEDS_PROJECT}
EXPECTED = {
    ("run", "damaged install"): "INSTALLED_PACKAGE_MODIFIED",
    ("info", "unreachable registry"): "REGISTRY_UNREACHABLE",
    ("search", "unreachable registry"): "REGISTRY_UNREACHABLE",
    ("outdated", "unreachable registry"): "REGISTRY_UNREACHABLE",
    **{(name, "files in the way"): "NOT_WRITABLE" for name in ("install", "info", "keys list")},
    **{(name, "not a project"): "NOT_A_PROJECT" for name in PROJECT_COMMANDS},
}


def test_every_command_has_a_success_cell_or_a_reason() -> None:
    assert set(PATHS) == set(SUCCESS) | set(NO_SUCCESS), set(PATHS) ^ (
        set(SUCCESS) | set(NO_SUCCESS)
    )
    assert not set(SUCCESS) & set(NO_SUCCESS)


def test_the_walk(templates: Templates, tmp_path: Path) -> None:
    unreachable = {"SPLICE_REGISTRY": UNREACHABLE}
    situations: dict[str, tuple[Path | None, dict[str, str]]] = {
        "success": (templates.installed, {}),
        "not a project": (None, {}),
        "bad operand": (templates.installed, {}),
        "unreachable registry": (templates.installed, unreachable),
        "damaged install": (templates.damaged, {}),
        "files in the way": (templates.in_the_way, {"SPLICE_HOME": str(templates.in_the_way_home)}),
    }
    before = {
        t: _digests(t) for t in (templates.installed, templates.damaged, templates.in_the_way)
    }
    documents: dict[tuple[str, str], object] = {}  # each --json cell's, for its text cell
    failures = []
    for index, cell in enumerate(_cells()):
        template, extra = situations[cell.situation]
        cwd = tmp_path / str(index)
        if template is None:
            cwd.mkdir()
        else:
            _copy_project(template, cwd)
        words = {**templates.words, "{cell}": str(index)}
        argv = tuple(_filled(word, words) for word in cell.argv)
        done = invoke(argv, cwd, {**templates.env, **extra})
        try:
            document = _assert_contract(cell, done)
            if cell.json:
                documents[cell.path, cell.situation] = document
            else:
                assert _parsed(done.stdout) != documents[cell.path, cell.situation], done
            if cell.situation == "success":
                assert done.code == 0, (cell, done)
            code = EXPECTED.get((cell.path, cell.situation))
            if code is not None and cell.json:
                assert isinstance(document, dict) and document["error"]["code"] == code, done
        except AssertionError as exc:
            failures.append(f"{cell}: {exc}")
    assert not failures, "\n".join(failures)
    assert before == {t: _digests(t) for t in before}, "a cell changed a linked file"


def _parsed(text: str) -> object:
    """``text`` as JSON, or None."""
    try:
        return json.loads(text)
    except ValueError:
        return None


def _filled(word: str, words: Mapping[str, str]) -> str:
    for key, value in words.items():
        word = word.replace(key, value)
    return word


def test_a_server_stopped_after_its_json_answer_prints_no_second_document(tmp_path: Path) -> None:
    """``splice mcp --http --json`` prints ``{"url"}`` once it listens; SIGTERM, its normal
    stop, then wrote an INTERRUPTED failure document after it: two documents on stdout."""
    new_project(tmp_path)
    env = {**os.environ, "SPLICE_MCP_TOKEN": DEMO_TOKEN}
    argv = [splice_executable(), "mcp", "--http", "--port", "0", "--json"]
    with subprocess.Popen(
        argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None
        first = "".join(iter(process.stdout.readline, "}\n")) + "}\n"
        process.send_signal(signal.SIGTERM)
        rest, stderr = process.communicate(timeout=60)
    assert json.loads(first)["url"].startswith("http://127.0.0.1:")
    assert rest == "", rest
    assert process.returncode == 0, stderr  # SIGTERM is its normal, clean stop
    assert "INTERRUPTED" not in stderr, stderr


@pytest.mark.parametrize(
    "argv",
    [
        ("--version",),
        ("-v",),
        ("--json", "--version"),
        ("--help",),
        ("help", "list"),
        ("doctor",),
        ("--json", "list", "--bogus"),  # a failure's document: the report raised, a traceback
        ("--json", "list"),  # NOT_A_PROJECT
    ],
)
def test_a_closed_stdout_ends_in_exit_1_without_a_traceback(
    templates: Templates, tmp_path: Path, argv: tuple[str, ...]
) -> None:
    """``splice --version | head -0``: the version's fast path wrote outside the error
    handler, and a Python traceback ended it (exit 1 by the interpreter); argparse's help
    kept silent about the failed write and ended 0."""
    done = invoke(argv, tmp_path, templates.env, stdout=_ClosedPipe())
    assert done.code == 1, done
    assert done.stderr == "", done
