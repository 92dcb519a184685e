"""`splice run` input from the command line (docs/cli.md, run input): `key=value` pairs in any
position around `--input`, and input of any depth answered with a stable code — the plain
(argparse-free) path and the parsed path alike — never a crash."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from testing.cli import Completed, main_in_fresh_process, run_splice

# Far beyond CPython's recursion limit and the runtime's 256 levels; "[…]" of this depth fits in
# one argument (Linux takes at most 128 KiB each).
DEEP = 60_000


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A project with @splice/example installed, and the SPLICE_HOME that installed it: the
    only one that checked it against its artifact (docs/security.md#the-locks-files-digest-is-derived-here)."""
    base = tmp_path_factory.mktemp("run-input")
    project, home = base / "project", base / "home"
    project.mkdir()
    for args in (("init",), ("add", "@splice/example")):
        done = run_splice(*args, cwd=project, env={"SPLICE_HOME": str(home)}, timeout=300)
        assert done.code == 0, done.stderr
    return project, home


@pytest.fixture
def home(installed: tuple[Path, Path], clean_environ: Path) -> Path:
    """The SPLICE_HOME of each command of the test (conftest restores the test's own)."""
    os.environ["SPLICE_HOME"] = str(installed[1])
    return installed[1]


@pytest.fixture
def project(installed: tuple[Path, Path], home: Path) -> Path:
    return installed[0]


def _envelope(done: Completed) -> dict:
    assert "Traceback" not in done.stderr, done.stderr
    document = done.json()
    return {**document, "durationMs": 0}


def _no_crash_report(home: Path) -> None:
    logs = home / "logs"
    assert not logs.exists() or not list(logs.iterdir()), list(logs.iterdir())


@pytest.mark.parametrize(
    "argv",
    [
        ["excited=true", "--input", '{"name": "a"}'],
        ["--input", '{"name": "a"}', "excited=true"],
        ["--input", '{"name": "a", "excited": false}', "excited=true"],
        ["--json", "--input", '{"excited": false}', "name=a", "--no-color", "excited=true"],
        ["--input", '{"name": "b"}', "--", "name=a", "excited=true"],
    ],
)
def test_pairs_override_input_keys_in_any_position(project: Path, argv: list[str]) -> None:
    done = run_splice("run", "example.hello", *argv, cwd=project)
    assert done.code == 0, done.stderr
    output = done.json()["output"] if "--json" in argv else done.json()
    assert output == {"message": "Hello, a!"}


def test_an_option_after_the_end_of_options_is_a_pair(project: Path) -> None:
    done = run_splice("--json", "run", "example.hello", "name=a", "--", "--input", cwd=project)
    assert done.code == 2
    assert done.json()["error"]["message"] == "Invalid argument '--input': expected key=value"


def test_deep_input_is_input_too_large_on_the_plain_and_the_parsed_path(
    project: Path, home: Path
) -> None:
    """A value nested 60,000 levels deep in a pair (a property without a type, so read as
    JSON) and in ``--input``: both are the runtime's INPUT_TOO_LARGE, as the SDK and MCP
    answer, with the same envelope; no crash report."""
    deep = "[" * DEEP + "]" * DEEP
    plain = run_splice("--json", "run", "example.hello", "name=x", f"extra={deep}", cwd=project)
    parsed = run_splice(
        "--json", "run", "example.hello", "--input", f'{{"name": "x", "extra": {deep}}}',
        cwd=project,
    )  # fmt: skip
    assert plain.code == parsed.code == 1, (plain.stdout, parsed.stdout)
    assert _envelope(plain) == _envelope(parsed)
    assert plain.json()["error"] == {
        "code": "INPUT_TOO_LARGE",
        "message": "Input is nested deeper than 256 levels",
    }
    _no_crash_report(home)
    ran, imported = main_in_fresh_process(
        ["run", "example.hello", "name=x", f"extra={deep}"], cwd=project, watched=["argparse"]
    )
    assert (ran.code, imported) == (1, []), ran.stderr  # the plain path


@pytest.mark.parametrize(
    ("argv", "code", "exit_code"),
    [
        (["--input", "[" * DEEP], "USAGE", 2),  # not JSON: unterminated
        (["--input", '{"name": ' + "[" * 5000 + "]" * 5000 + "}"], "INPUT_TOO_LARGE", 1),
        (["--input", '{"name": "x", "n": NaN}'], "USAGE", 2),  # not JSON either
        # A pair that is not JSON is text (here an unknown property of the tool).
        (["name=x", "foo=" + "[" * DEEP], "INVALID_INPUT", 1),
        (["--input", '{"name": "x"}', "foo=" + "{" * DEEP], "INVALID_INPUT", 1),
    ],
)
def test_bad_input_of_any_depth_has_a_stable_code(
    project: Path, home: Path, argv: list[str], code: str, exit_code: int
) -> None:
    done = run_splice("--json", "run", "example.hello", *argv, cwd=project)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.code == exit_code, done.stdout
    assert done.json()["error"]["code"] == code
    _no_crash_report(home)
    human = run_splice("run", "example.hello", *argv, cwd=project)
    assert human.code == exit_code
    assert human.stderr.startswith("error: ") and "unexpected failure" not in human.stderr


def test_input_the_tool_refuses_says_where_its_inputs_are_listed(project: Path) -> None:
    """`splice run example.hello nme=a` listed what was wrong (`input.name: is required`,
    `input.nme: unknown property`) and no hint: which inputs the tool takes was nowhere
    said. The text now points at `splice info`; `--json` keeps the runtime's envelope."""
    done = run_splice("run", "example.hello", "nme=a", cwd=project)
    assert done.code == 1
    assert done.stderr.splitlines()[-1] == (
        "hint: `splice info @splice/example` lists the inputs of hello and the other tools."
    )
