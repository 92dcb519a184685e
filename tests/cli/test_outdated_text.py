"""`splice outdated` and `update` for people: a newer version outside the range is said to be so.

``update`` keeps each range (docs/cli.md), so a package at the newest version its range
allows was shown "up to date" beside a newer ``Latest``, read as nothing to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from testing.registry_fixtures import embedded_store, new_project, publish


def test_a_newer_version_outside_the_range_says_how_to_reach_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from splice_build.cli.main import main

    _greeter_project(tmp_path, monkeypatch, ("1.0.0", "2.0.0"), "^1.0.0")
    capsys.readouterr()
    assert main(["outdated"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Package        Current  Wanted  Latest  Range"  # no trailing blanks
    assert lines[1].split("  ^1.0.0  ")[1] == (
        "up to date; 2.0.0 is outside the range (splice add @acme/greeter)"
    )
    assert main(["update"]) == 0  # its text says the same
    assert capsys.readouterr().out == (
        '@acme/greeter@1.0.0 is up to date (range "^1.0.0"); 2.0.0 is outside the range '
        "(splice add @acme/greeter)\n"
    )


def test_a_newer_prerelease_outside_the_range_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With only prereleases listed, ``latest`` is the highest of them, and the way to it
    read `splice add @acme/greeter`: a bare id asks for the newest stable version, so the
    command it named failed with ``NO_MATCHING_VERSION``. The hint names the prerelease."""
    from splice_build.cli.main import main

    _greeter_project(tmp_path, monkeypatch, ("1.0.0-rc.1", "1.0.0-rc.2"), "1.0.0-rc.1")
    capsys.readouterr()
    assert main(["outdated"]) == 0
    way = "splice add @acme/greeter@1.0.0-rc.2"
    assert (
        capsys.readouterr()
        .out.splitlines()[1]
        .endswith(f"up to date; 1.0.0-rc.2 is outside the range ({way})")
    )
    assert main(["update"]) == 0
    assert f"({way})" in capsys.readouterr().out
    assert main(way.split()[1:]) == 0  # the command named works


def test_a_range_written_with_a_prerelease_is_hinted_the_exact_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A prerelease is taken only by an exact range: `add @acme/greeter@^1.0.0-rc.1` with
    1.0.0-rc.1 and rc.2 listed was NO_MATCHING_VERSION hinted "pick one of the versions
    available", which left the user at the prerelease they had written."""
    import json

    from splice_build.cli.main import main

    _greeter_project(tmp_path, monkeypatch, ("1.0.0-rc.1", "1.0.0-rc.2"), "1.0.0-rc.1")
    capsys.readouterr()
    assert main(["--json", "add", "@acme/greeter@^1.0.0-rc.1"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    way = "splice add @acme/greeter@1.0.0-rc.2"
    assert (error["code"], error["hint"]) == (
        "NO_MATCHING_VERSION",
        f"A prerelease is taken only by its exact version: `{way}`.",
    )
    assert main(way.split()[1:]) == 0  # the command named works
    capsys.readouterr()
    assert main(["--json", "add", "@acme/greeter@^2.0.0"]) == 1  # none near: the general hint
    assert json.loads(capsys.readouterr().out)["error"]["hint"].startswith("Pick one of")


def test_a_project_with_no_packages_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`outdated` printed a table's header alone and `update` an empty line, where `list`
    and `install` say the project has no packages."""
    from splice_build.cli.main import main

    monkeypatch.chdir(new_project(tmp_path / "project"))
    for command in ("outdated", "update"):
        capsys.readouterr()
        assert main([command]) == 0
        assert capsys.readouterr().out == (
            "No packages: splice.json has none. Add one with `splice add <pkg>`.\n"
        ), command


def _greeter_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, versions: tuple[str, ...], wanted: str
) -> None:
    """The embedded registry holding ``versions`` of @acme/greeter, and the working directory a
    project that added it at ``wanted``."""
    from splice_build.sdk import Splice

    home = tmp_path / "home"
    store = embedded_store(home)
    for version in versions:
        publish(store, tmp_path / "work", version=version)
    project = new_project(tmp_path / "project")
    with Splice(project, home=home, registry="embedded:", broker=False) as splice:
        splice.add([f"@acme/greeter@{wanted}"])
    monkeypatch.setenv("SPLICE_HOME", str(home))
    monkeypatch.delenv("SPLICE_REGISTRY", raising=False)
    monkeypatch.chdir(project)
