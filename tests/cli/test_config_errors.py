"""`splice config`'s usage errors say what was wrong: a mistyped setting was "config get
needs a key: registry" (a key was given) and `config set registry` without a value was
"only `config set registry <value>` takes a value" (it is that very command)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# cli/main.py: a command line refused without a hint of its own points to the help.
HELP = "run `splice config --help` for usage"


def test_a_mistyped_setting_and_a_missing_value_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from splice_build.cli.main import main

    monkeypatch.setenv("SPLICE_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    for argv, message, hint in (
        (
            ["config", "get", "regsitry"],
            "unknown setting 'regsitry' (choose from 'registry', 'isolation')",
            "Did you mean registry? Run `splice config list` to see the settings.",
        ),
        (
            ["config", "set", "registry"],
            "config set registry needs a value: a URL or an alias (local, embedded)",
            "To go back to the default, run `splice config unset registry`.",
        ),
        (["config", "get"], "config get needs a key: registry, isolation", HELP),
        (
            ["config", "get", "registry", "x"],
            "only `config set registry <value>` takes a value",
            HELP,
        ),
    ):
        capsys.readouterr()
        assert main(["--json", *argv]) == 2, argv
        error = json.loads(capsys.readouterr().out)["error"]
        assert (error["code"], error["message"], error.get("hint")) == ("USAGE", message, hint)
    assert not (tmp_path / "home" / "config.json").exists()


def test_a_mistyped_registry_alias_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--registry locl`` (or ``config set registry locl``) named no alias in its hint."""
    from splice_build.cli.main import main

    monkeypatch.setenv("SPLICE_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    aliases = "Use an http(s) URL or one of the aliases: local, embedded."
    for argv, hint in (
        (["--registry", "locl", "search", "x"], f"Did you mean local? {aliases}"),
        (["config", "set", "registry", "embeded"], f"Did you mean embedded? {aliases}"),
        (["--registry", "ftp://locl", "search", "x"], aliases),
    ):
        capsys.readouterr()
        assert main(["--json", *argv]) == 2, argv
        error = json.loads(capsys.readouterr().out)["error"]
        assert (error["code"], error["hint"]) == ("INVALID_CONFIG", hint), argv


def test_a_mistyped_key_of_the_user_config_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hand-written ``{"regsitry": …}`` left the registry at its default, and `config list`
    and `config get` said only "(default)"."""
    from splice_build.cli.main import main

    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.json").write_text(
        '{"isolation": "auto", "regsitry": "http://127.0.0.1:8787"}'  # isolation: runtime.md
    )
    monkeypatch.setenv("SPLICE_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    warning = (
        f"warning: {home / 'config.json'}: unknown key 'regsitry' (did you mean 'registry'?): "
        "not read"
    )
    for argv in (["config"], ["config", "get", "registry"]):
        capsys.readouterr()
        assert main(argv) == 0, argv
        assert capsys.readouterr().err.splitlines() == [warning], argv


def test_the_isolation_setting_is_one_config_sets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/security.md's ``isolation`` key of config.json is a setting the runtime reads, and
    `config list` no longer warns of it, but `splice config set isolation require-os` was
    "unknown setting 'isolation' (choose from 'registry')": only a hand edit set it."""
    from splice_build.cli.main import main

    home = tmp_path / "home"
    monkeypatch.setenv("SPLICE_HOME", str(home))
    monkeypatch.chdir(tmp_path)

    def answer(*argv: str) -> tuple[int, dict]:
        capsys.readouterr()
        code = main(["--json", "config", *argv])
        return code, json.loads(capsys.readouterr().out)

    assert answer("get", "isolation") == (0, {"isolation": "auto", "source": "default"})
    assert answer("set", "isolation", "require-os") == (
        0,
        {"isolation": "require-os", "source": "user"},
    )
    assert json.loads((home / "config.json").read_text()) == {"isolation": "require-os"}
    assert answer("list")[1]["isolation"] == "require-os"
    code, refused = answer("set", "isolation", "off")
    assert (code, refused["error"]["code"]) == (2, "INVALID_CONFIG")
    assert (
        "isolation must be one of auto, require-os, in-process, not 'off'"
        in (refused["error"]["message"])
    )
    assert answer("unset", "isolation") == (0, {"isolation": None, "removed": True})
    assert json.loads((home / "config.json").read_text()) == {}


def test_config_sets_exactly_the_keys_the_user_config_holds() -> None:
    """`splice config` takes each key SpliceHome reads from config.json and checks its value
    (a key added to one and not the other was taken as an isolation mode, or refused)."""
    from splice_build.cli.commands.config import VALUES, _checked
    from splice_build.project.home import SpliceHome

    assert set(VALUES) == set(SpliceHome.CONFIG_KEYS)
    with pytest.raises(AssertionError):
        _checked("colour", "blue")
