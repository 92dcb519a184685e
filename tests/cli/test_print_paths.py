"""Every print path of the CLI shows someone else's text safely, by construction
(docs/security.md#terminal-output).

One class writes the CLI's stdout and stderr (``Output`` in splice_build/cli/output.py), and
each of its methods is walked here with every code point of the categories Cc, Cf, Zl and
Zp (the C1 range is in Cc) in every argument: nothing of those categories reaches a stream
raw but Splice's own status-line redraw and colours, a method that writes one line writes
one line, and a JSON document parses back to the exact value. The last test keeps it the
one class: any other write to the standard streams in splice_build must be listed there, on
purpose.
"""

from __future__ import annotations

import ast
import io
import json
import re
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest

import splice_build
from splice_build.cli.output import Output
from testing.cli import run_splice
from testing.packages import write_package

_WALKED = frozenset({"Cc", "Cf", "Zl", "Zp"})
_RAW = _WALKED | {"Cs", "Co", "Cn"}
EVERY = "".join(
    chr(point) for point in range(sys.maxunicode + 1) if unicodedata.category(chr(point)) in _WALKED
)
# What Splice itself writes: the status-line redraw and the colours of ``error:``/``warning:``.
_OURS = re.compile(r"\r\x1b\[2K|\x1b\[(?:0|31|33)m")
_COLOURS = re.compile(r"\x1b\[(?:0|31|33)m")


def _raw(text: str, *, keep: str = "\n") -> list[str]:
    text = _OURS.sub("", text)
    return [f"U+{ord(c):04X}" for c in text if c not in keep and unicodedata.category(c) in _RAW]


def _streams(
    *, json_mode: bool = False, live: bool = False
) -> tuple[Output, io.StringIO, io.StringIO]:
    stdout, stderr = io.StringIO(), io.StringIO()
    out = Output(json_mode=json_mode, color=True, stdout=stdout, stderr=stderr, live=live)
    return out, stdout, stderr


def test_the_whole_c1_range_and_the_named_attacks_are_walked() -> None:
    assert set(range(0x80, 0xA0)) | {0x7F, 0x1B, 0x07, 0x08, 0x0D} <= {ord(c) for c in EVERY}
    assert {"\u202a", "\u202e", "\u2066", "\u2069", "\u200b", "\ufeff", "\u2028", "\u2029"} <= set(
        EVERY
    )


ONE_LINE_WRITES: dict[str, Callable[[Output, str], None]] = {
    "info": lambda out, text: out.info(f"quoted: {text}"),
    "warn": lambda out, text: out.warn(f"quoted: {text}"),
    "progress": lambda out, text: out.progress(f"quoted: {text}", step="verifying"),
}


@pytest.mark.parametrize("live", [False, True], ids=["pipe", "terminal"])
@pytest.mark.parametrize("method", sorted(ONE_LINE_WRITES))
def test_a_one_line_message_stays_one_escaped_line(method: str, live: bool) -> None:
    out, stdout, stderr = _streams(live=live)
    ONE_LINE_WRITES[method](out, EVERY)
    out.info("next")  # ends the status line on a terminal
    written = stdout.getvalue() + stderr.getvalue()
    assert _raw(written) == []
    assert "quoted: \\x00\\x01" in written
    # What a terminal keeps: a redraw erases the status line it is on.
    lines = re.sub(r"[^\n]*\r\x1b\[2K", "", _COLOURS.sub("", written)).split("\n")
    assert lines[-2:] == ["next", ""]
    assert len(lines) == (2 if live and method == "progress" else 3), lines


def test_info_lines_writes_one_escaped_line_per_line() -> None:
    out, _stdout, stderr = _streams()
    out.info_lines([f"[@a/b.t] {EVERY}", f"[@a/b.t] {EVERY}"])
    lines = stderr.getvalue().split("\n")
    assert _raw(stderr.getvalue()) == []
    assert len(lines) == 3 and all(line.startswith("[@a/b.t] \\x00") for line in lines[:2])


def test_an_error_block_keeps_its_shape() -> None:
    out, _stdout, stderr = _streams()
    out.error(f"failed {EVERY}", [f"one {EVERY}", f"two {EVERY}"], f"do {EVERY}", code="X")
    text = stderr.getvalue()
    assert _raw(text) == []
    head, one, two, hint, end = text.split("\n")
    assert head.startswith("\x1b[31merror:\x1b[0m failed \\x00") and head.endswith(" (X)")
    assert one.startswith("  - one \\x00") and two.startswith("  - two \\x00")
    assert hint.startswith("hint: do \\x00") and end == ""


def test_a_rendered_result_gets_every_field_on_one_line() -> None:
    out, stdout, _stderr = _streams()
    data = {"name": EVERY, EVERY: [EVERY]}
    out.result(data, lambda shown: "\n".join([shown["name"], *list(shown.values())[1]]))
    text = stdout.getvalue()
    assert _raw(text) == []
    assert len(text.split("\n")) == 3


@pytest.mark.parametrize("json_mode", [False, True], ids=["people", "json"])
def test_a_result_document_is_exact_and_shows_nothing_raw(json_mode: bool) -> None:
    out, stdout, _stderr = _streams(json_mode=json_mode)
    data = {"name": EVERY, EVERY: [EVERY, 1]}
    out.result(data)
    text = stdout.getvalue()
    assert _raw(text) == []
    if json_mode:
        assert json.loads(text) == data


def test_an_error_document_is_exact_and_shows_nothing_raw() -> None:
    out, stdout, _stderr = _streams(json_mode=True)
    error = {"code": "X", "message": EVERY, "details": [EVERY], "hint": EVERY}
    out.error_json(error)
    assert _raw(stdout.getvalue()) == []
    assert json.loads(stdout.getvalue()) == {"ok": False, "error": error}


# Every write to the standard streams in splice_build outside cli/output.py, and why it is
# safe: (path, the call as written).
ALLOWED_WRITES = {
    # `splice --version`: Splice's own words, before Output exists.
    ("cli/main.py", "sys.stdout.write"),
    # `splice` without a command: argparse's help, Splice's own words.
    ("cli/main.py", "parser.print_help"),
    ("cli/parser.py", "super().print_help"),
    # The consent answer is read without a prompt: the prompt is Output.info lines.
    ("cli/commands/add.py", "input"),
    # The token prompt quotes the registry URL through one_line.
    ("cli/commands/login.py", "getpass.getpass"),
    # doit's tasks are made by doit, not by `splice`, and tasks/ may not import cli/
    # (tests/test_boundaries.py): the write-grant warnings go through the same redaction and
    # terminal escaping as the tasks' failures (tasks/pipeline.py _shown).
    ("tasks/pipeline.py", "print"),
    # Developer tools run from the repository, never by `splice`: their own words.
    ("runtime/host_bundle.py", "sys.stdout.write"),
    ("registry/official_sign.py", "print"),
}
_WRITERS = re.compile(
    r"(?:^|\.)(?:print|print_help|print_usage|print_exc|print_exception|pprint|input|getpass)$"
)


def _is_write(call: ast.Call) -> bool:
    """A call that writes to the standard streams (or reads with a prompt) by itself."""
    name = ast.unparse(call.func)
    if name.startswith(("sys.stdout.", "sys.stderr.", "sys.__stdout__.", "sys.__stderr__.")):
        return name.endswith((".write", ".writelines"))
    if name == "os.write":
        return ast.unparse(call.args[0]) in ("1", "2")
    return _WRITERS.search(name) is not None


def _writes(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return {
        ast.unparse(node.func)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _is_write(node)
    }


def test_output_is_the_one_writer_of_the_standard_streams() -> None:
    package = Path(splice_build.__file__).parent
    found = {
        (path.relative_to(package).as_posix(), name)
        for path in package.rglob("*.py")
        if path.relative_to(package).as_posix() != "cli/output.py"
        for name in _writes(path)
    }
    assert found == ALLOWED_WRITES


TOOL = f"""const P = {json.dumps(EVERY)};
export default function hello(input) {{
  console.log("log " + P);
  if (input.name === "fail") throw new Error("boom " + P);
  return {{ message: P, [P]: [P] }};
}}
"""


def test_a_tools_output_log_and_error_through_splice_run(tmp_path: Path) -> None:
    """The real sandbox: ``splice run``'s output for people is JSON that parses back to
    exactly what the tool returned (docs/cli.md: scripts read it), with nothing raw; every log
    line is labelled and escaped; a thrown message is one escaped line."""
    package = write_package(tmp_path / "pkg", files={"tools/hello.js": TOOL})
    done = run_splice("run", "greeter.hello", "name=ok", "--dir", str(package), cwd=tmp_path)
    assert done.code == 0, done.stderr
    assert _raw(done.stdout) == [] and _raw(done.stderr) == []
    assert json.loads(done.stdout) == {"message": EVERY, EVERY: [EVERY]}
    assert all(line.startswith("[@acme/greeter.hello] ") for line in done.stderr.splitlines())
    failed = run_splice("run", "greeter.hello", "name=fail", "--dir", str(package), cwd=tmp_path)
    assert failed.code == 1
    assert _raw(failed.stdout + failed.stderr) == []
    [error] = [line for line in failed.stderr.splitlines() if line.startswith("error: ")]
    assert error.startswith("error: boom \\x00\\x01") and error.endswith("(TOOL_ERROR)")
