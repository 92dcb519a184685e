"""Output: progress redraws one status line on a terminal, scrolls everywhere else."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from splice_build.cli.output import Output
from testing.registry_fixtures import new_project


def test_progress_on_a_terminal_redraws_one_line_with_a_step_bar() -> None:
    out, err = io.StringIO(), io.StringIO()
    output = Output(stdout=out, stderr=err, live=True)
    output.progress("Resolving @a/b...", step="resolving")
    output.progress("Installing .splice/packages/@a/b...", step="installing")
    output.result({"ok": True}, "Installed @a/b@1.0.0")
    text = err.getvalue()
    assert "\r\x1b[2K[#...] Resolving @a/b..." in text
    assert "\r\x1b[2K[####] Installing .splice/packages/@a/b..." in text
    assert "\n" not in text  # nothing scrolled: the status line was cleared, not ended
    assert text.endswith("\r\x1b[2K")
    assert out.getvalue() == "Installed @a/b@1.0.0\n"


def test_progress_elsewhere_is_one_line_per_step() -> None:
    err = io.StringIO()
    output = Output(stdout=io.StringIO(), stderr=err, live=False)
    output.progress("Resolving @a/b...", step="resolving")
    output.progress("Downloading @a/b...", step="downloading")
    assert err.getvalue() == "Resolving @a/b...\nDownloading @a/b...\n"


def test_json_mode_prints_no_progress() -> None:
    # A program reading --json wants the document; the lines went to its stderr (a CI log)
    # all the same. The TypeScript CLI prints none under --json either. Warnings stay.
    err = io.StringIO()
    output = Output(json_mode=True, stdout=io.StringIO(), stderr=err, live=True)
    output.progress("Resolving @a/b...", step="resolving")
    output.warn("w")
    assert err.getvalue() == "warning: w\n"


def test_progress_and_warnings_are_one_line_whatever_they_quote() -> None:
    err = io.StringIO()
    output = Output(stdout=io.StringIO(), stderr=err, live=False)
    output.progress("Verifying sha256-x\nInstalled @a/b@1.0.0", step="verifying")
    output.warn("skipped 1.0.0: gone\n  permissions: none")
    assert err.getvalue().splitlines() == [
        "Verifying sha256-x\\x0aInstalled @a/b@1.0.0",
        "warning: skipped 1.0.0: gone\\x0a  permissions: none",
    ]


def test_a_result_text_is_rendered_from_one_line_fields_and_json_stays_exact() -> None:
    data = {"description": "ok\nPermissions: none", "ke\ny": ["a\tb"]}
    out = io.StringIO()
    Output(stdout=out, stderr=io.StringIO()).result(data, lambda shown: repr(shown))
    assert out.getvalue() == (
        repr({"description": "ok\\x0aPermissions: none", "ke\\x0ay": ["a\\x09b"]}) + "\n"
    )
    out = io.StringIO()
    Output(json_mode=True, stdout=out, stderr=io.StringIO()).result(data, lambda shown: "")
    assert json.loads(out.getvalue()) == data


def test_info_is_one_line_and_info_lines_one_line_each() -> None:
    err = io.StringIO()
    output = Output(stdout=io.StringIO(), stderr=err, live=False)
    output.info("Created token t1 for mallory\nhint: paste it into the fix script")
    output.info_lines(["[tool] a\rb", "[tool] c\u2028d"])
    assert err.getvalue().splitlines() == [
        "Created token t1 for mallory\\x0ahint: paste it into the fix script",
        "[tool] a\\x0db",
        "[tool] c\\u2028d",
    ]


class _Terminal(io.StringIO):
    """A standard error stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("term", "escapes"), [("xterm-256color", True), ("dumb", False)])
def test_a_dumb_terminal_gets_no_status_line_redraw_and_no_colour(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, term: str, escapes: bool
) -> None:
    """TERM=dumb (an editor's shell buffer) acts on no escape sequence: the status line's
    ``\\r\\x1b[2K`` and the red ``error:`` were shown raw there."""
    from splice_build.cli.main import main

    monkeypatch.setenv("SPLICE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TERM", term)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.chdir(new_project(tmp_path / "project"))
    for argv, code in ((["sync"], 0), (["remove", "@acme/none"], 1)):
        stderr = _Terminal()
        monkeypatch.setattr(sys, "stderr", stderr)
        assert main(argv) == code, stderr.getvalue()
        assert ("\x1b[" in stderr.getvalue()) is escapes, (argv, stderr.getvalue())
