"""Output: progress redraws one status line on a terminal, scrolls everywhere else."""

from __future__ import annotations

import io

from splice_build.cli.output import Output


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


def test_json_mode_never_draws_a_status_line() -> None:
    err = io.StringIO()
    output = Output(json_mode=True, stdout=io.StringIO(), stderr=err, live=True)
    output.progress("Resolving @a/b...", step="resolving")
    assert err.getvalue() == "Resolving @a/b...\n"
