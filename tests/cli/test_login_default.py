"""`splice login` names the registry it logs in to.

With no registry named, login read a token and asked the embedded registry (the default),
which needs no login, and said "Invalid, expired or revoked token" with the hint to run
`splice login`: a first user pasting the token of a served registry went round in a circle.
It is now USAGE before a token is read, with the hint to name the registry. An empty line
was "0 characters not in the token format"."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

TOKEN = "splice_" + "Zq8" * 14 + "Z"


def test_login_without_a_registry_named_reads_no_token_and_says_how(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from splice_build.cli.main import main

    monkeypatch.setenv("SPLICE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SPLICE_REGISTRY", raising=False)
    monkeypatch.chdir(tmp_path)
    for given, argv, detail in (
        (TOKEN + "\n", ["login"], None),
        ("\n", ["--registry", "local", "login"], "no token was given (an empty line)"),
    ):
        stdin = io.TextIOWrapper(io.BytesIO(given.encode()))
        monkeypatch.setattr(sys, "stdin", stdin)
        capsys.readouterr()
        assert main(["--json", *argv]) == 2, argv
        error = json.loads(capsys.readouterr().out)["error"]
        assert error["code"] == "USAGE", error
        if detail is None:
            assert (
                "the embedded registry, used when none is named, needs no login"
                in (error["message"])
            )
            assert error["hint"].startswith("Name it: `splice login --registry URL`")
            assert stdin.buffer.tell() == 0  # the token was never read
        else:
            assert error["details"][0] == detail


def test_login_to_a_registry_no_token_may_go_to_reads_no_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A plain-http:// registry off this machine was refused only once the token had been
    typed at the prompt (or read from stdin) for it: now before the prompt."""
    from splice_build.cli.main import main

    monkeypatch.setenv("SPLICE_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    stdin = io.TextIOWrapper(io.BytesIO((TOKEN + "\n").encode()))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert main(["--json", "--registry", "http://10.1.2.3:8787", "login"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "INVALID_CONFIG", error
    assert error["message"].startswith("Refusing to send your registry token to http://10.1.2.3")
    assert stdin.buffer.tell() == 0  # the token was never read
