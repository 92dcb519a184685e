"""A package the registry does not have is one error, whichever command asked.

``splice info`` of a mistyped name said only "Package @splice/fils not found" with the detail
"registry code: NOT_FOUND" and no hint, while ``add``, ``verify``, ``outdated`` and
``update`` named the registry asked and pointed at ``splice search``. A version it does not
have is named, with those it has."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testing.registry import artifact
from testing.registry_fixtures import new_project


def test_info_and_add_answer_an_unknown_package_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from splice_build.cli.main import main

    monkeypatch.setenv("SPLICE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SPLICE_REGISTRY", raising=False)
    monkeypatch.chdir(new_project(tmp_path / "project"))
    errors = {}
    for command in ("info", "add"):
        capsys.readouterr()
        assert main(["--json", command, "@splice/fils"]) == 1, command
        errors[command] = json.loads(capsys.readouterr().out)["error"]
    assert (
        errors["info"]
        == errors["add"]
        == {
            "code": "PACKAGE_NOT_FOUND",
            "message": "Package @splice/fils was not found in the embedded registry",
            "hint": "Search with `splice search <words>`.",
        }
    )
    # a version it does not have: which one is missing, and those it has ("Version
    # @splice/example@9.9.9 not found" with the detail "registry code: NOT_FOUND" before)
    capsys.readouterr()
    assert main(["--json", "verify", "@splice/example@9.9.9"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    available = error.pop("details")
    assert error == {
        "code": "PACKAGE_NOT_FOUND",
        "message": "@splice/example has no version 9.9.9",
        "hint": "`splice info @splice/example` shows its versions.",
    }
    assert len(available) == 1 and available[0].startswith("available: 0."), available


def test_a_mistyped_installed_package_or_tool_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``remove``, ``outdated``, ``update`` and ``run`` of a name the project does not have
    (NOT_INSTALLED) hint at the closest one it has, as a mistyped command is answered; before,
    remove had no hint and outdated/update repeated the name as their one detail. The short
    name of one it has (INVALID_NAME) was hinted `splice search example`."""
    from splice_build.cli.main import main

    monkeypatch.setenv("SPLICE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SPLICE_REGISTRY", raising=False)
    monkeypatch.chdir(new_project(tmp_path / "project"))
    assert main(["add", "@splice/example"]) == 0
    listed = "Run `splice list` to see the project's packages."
    for argv, hint in (
        (["remove", "@splice/exampel"], f"Did you mean @splice/example? {listed}"),
        (["outdated", "@splice/exampel"], f"Did you mean @splice/example? {listed}"),
        (["update", "@splice/exampel"], f"Did you mean @splice/example? {listed}"),
        (["remove", "@acme/other"], listed),
        # the namespace alone is no likeness: "@splice/" made any package of it the closest
        (["update", "@splice/nope"], listed),
        (["remove", "@splcie/example"], f"Did you mean @splice/example? {listed}"),
        (["run", "exampel.hello"], "Did you mean example.hello? Run `splice list` to see"),
        (["run", "@splice/exampl.hello"], "Did you mean @splice/example.hello? Run"),
    ):
        capsys.readouterr()
        assert main(["--json", *argv]) == 1, argv
        error = json.loads(capsys.readouterr().out)["error"]
        assert error["code"] == "NOT_INSTALLED", argv
        assert error["hint"].startswith(hint), (argv, error)
        assert "details" not in error, (argv, error)
    # a bare tool name one installed package has is that package's tool; one none has is not
    for tool, hint in (
        ("hello", "Did you mean example.hello?"),
        ("greet", "Name its package too: <package>.greet (`splice list` shows the project's)."),
    ):
        capsys.readouterr()
        assert main(["--json", "run", tool]) == 2, tool
        error = json.loads(capsys.readouterr().out)["error"]
        assert (error["code"], error["hint"]) == ("INVALID_REF", hint), tool
    # the short name of one of its packages (`run` takes it) is that package, not a search
    for command in ("remove", "outdated", "update"):
        capsys.readouterr()
        assert main(["--json", command, "example"]) == 2, command
        error = json.loads(capsys.readouterr().out)["error"]
        assert error == {
            "code": "INVALID_NAME",
            "message": 'Invalid package name "example". Expected @namespace/name, e.g. @splice/example.',
            "hint": "Did you mean @splice/example?",
        }, command


def test_run_dir_names_the_directory_it_could_not_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``splice run --dir`` said "Package directory not found" or "manifest.json is missing"
    naming no directory; it names the one it read, and where there is one, ``validate``."""
    from splice_build.cli.main import main

    monkeypatch.setenv("SPLICE_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    validate = f"`splice validate {tmp_path / 'empty'}` lists every problem of the package"
    for given, message, hint in (
        ("missing", f"Package directory not found ({tmp_path / 'missing'})", None),
        ("empty", f"manifest.json is missing ({tmp_path / 'empty'})", validate),
    ):
        capsys.readouterr()
        assert main(["--json", "run", "--dir", given, "a.b"]) == 1, given
        error = json.loads(capsys.readouterr().out)["error"]
        assert (error["code"], error["message"], error.get("hint")) == (
            "INVALID_PACKAGE",
            message,
            hint,
        )


def test_run_dir_of_another_package_names_the_directorys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``splice run --dir good other.t`` said only that ``other`` is not the directory's
    package, with no hint of the reference that runs it."""
    from splice_build.cli.main import main
    from testing.hostile_packages import write_package

    monkeypatch.setenv("SPLICE_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    package = write_package(tmp_path, "export default async () => 1;", name="good")
    assert main(["--json", "run", "--dir", str(package), "other.t"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["code"], error["message"], error["hint"]) == (
        "NOT_INSTALLED",
        "other does not match the package in the directory (@test/good)",
        "Name the directory's package: good.t (or @test/good.t).",
    )


def test_validate_pack_and_publish_outside_a_package_say_where_they_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run in a project rather than in the package, they listed "manifest.json is missing"
    and "SKILL.md is missing" with no word of the directory read; the hint names it. So it
    does where `splice pack ./my-skill` (docs/skills.md) left its archive: run there, the
    three said "A package cannot contain a packed package archive", hint "Move it out of the
    package directory", of a directory that was no package. Each names itself as the way to
    name the package (`splice validate` and `splice publish` hinted `splice pack ./my-skill`)."""
    from splice_build.cli.main import main

    monkeypatch.setenv("SPLICE_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(new_project(tmp_path / "project"))
    (tmp_path / "project/acme-greeter-1.0.0.tar.gz").write_bytes(artifact(tmp_path / "src"))
    for argv in (["validate"], ["pack"], ["publish", "--dry-run"]):
        hint = (
            f"{tmp_path / 'project'} holds no manifest.json: run the command in the package's "
            f"directory, or name it (`splice {argv[0]} ./my-skill`)"
        )
        capsys.readouterr()
        assert main(["--json", *argv]) == 1, argv
        error = json.loads(capsys.readouterr().out)["error"]
        assert (error["code"], error["hint"]) == ("INVALID_PACKAGE", hint), argv
        assert "manifest.json is missing" in error["details"], argv


def test_the_versions_an_error_names_are_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A registry may list 100,000 versions of up to 256 characters: ``info``, ``add`` and
    ``verify`` of a version it lacks named every one in one detail (30,000 made 1 MiB of
    stderr, cut only there, real CLI). The 20 highest are named, then how many more."""
    from http.server import BaseHTTPRequestHandler

    from splice_build.cli.main import main
    from testing.netservers import serve_handler

    listed = [{"version": f"1.0.{n}-{'a' * 200}"} for n in range(100)]

    class Registry(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return

        def do_GET(self) -> None:
            found = self.path == "/packages/acme/many"
            body = {"name": "@acme/many", "versions": listed} if found else {"error": {}}
            data = json.dumps(body).encode()
            self.send_response(200 if found else 404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    monkeypatch.setenv("SPLICE_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(new_project(tmp_path / "project"))
    highest = ", ".join(f"1.0.{n}-{'a' * 200}" for n in range(99, 79, -1))
    with serve_handler(Registry) as url:
        for command in ("info", "add", "verify"):
            capsys.readouterr()
            asked = "@acme/many@9.9.9" if command == "verify" else "@acme/many@^9.0.0"
            assert main(["--json", "--registry", url, command, asked]) == 1, command
            error = json.loads(capsys.readouterr().out)["error"]
            assert error["details"] == [f"available: {highest} and 80 more"], command


def test_run_of_a_tool_named_as_mcp_or_a_manifest_names_it_says_how_to_write_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`splice run splice_example_hello` (the name `splice mcp` lists) and `splice run hello`
    were INVALID_REF "Expected <package>.<tool>" with no hint; the hint now writes it."""
    from splice_build.cli.main import main

    monkeypatch.chdir(tmp_path)
    for given, hint in (
        (
            "splice_example_hello",
            "That is an MCP tool name; here it is example.hello (or @splice/example.hello).",
        ),
        ("hello", "Name its package too: <package>.hello (`splice list` shows the project's)."),
        ("files_write", "Did you mean files.write?"),
        ("Hello", None),
    ):
        capsys.readouterr()
        assert main(["--json", "run", given]) == 2, given
        error = json.loads(capsys.readouterr().out)["error"]
        assert (error["code"], error.get("hint")) == ("INVALID_REF", hint), given


def test_a_package_named_without_its_namespace_or_at_sign_gets_the_whole_name_as_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`splice add files` (the word searched for) and `splice add splice/files` were
    INVALID_NAME "Expected @namespace/name, e.g. @splice/example." with no hint; so were
    `@files` and `@Splice/Files` ("may only contain lowercase letters", not which name)."""
    from splice_build.cli.main import main

    monkeypatch.chdir(tmp_path)
    for argv, hint in (
        (["add", "files"], "Names are @namespace/name: `splice search files` finds it."),
        (["info", "splice/files@^0.1.0"], "Did you mean @splice/files?"),
        (["remove", "splice/files"], "Did you mean @splice/files?"),
        # outdated and update read their names past the parser, without the hint
        (["outdated", "splice/files"], "Did you mean @splice/files?"),
        (["update", "files"], "Names are @namespace/name: `splice search files` finds it."),
        (["add", "Files"], None),
        (["add", "@files"], "Names are @namespace/name: `splice search files` finds it."),
        (["add", "@Splice/Files@^0.1.0"], "Did you mean @splice/files?"),
        (["verify", "Splice/Files"], "Did you mean @splice/files?"),
        (["add", "@splice/fi_les"], None),
    ):
        capsys.readouterr()
        assert main(["--json", *argv]) == 2, argv
        error = json.loads(capsys.readouterr().out)["error"]
        assert (error["code"], error.get("hint")) == ("INVALID_NAME", hint), argv


def test_install_of_a_package_names_the_command_that_adds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`splice install @splice/files` (npm's and pip's way) said "unrecognized arguments" and
    to read the help; the TypeScript CLI names `splice add`. Before any project is looked for."""
    from splice_build.cli.main import main

    monkeypatch.chdir(tmp_path)
    for argv, hint in (
        (["install", "@splice/files"], "`splice add @splice/files` adds it"),
        (["install", "--frozen", "--", "--json"], "`splice add <pkg>` adds one"),
    ):
        capsys.readouterr()
        assert main(["--json", *argv]) == 2, argv
        error = json.loads(capsys.readouterr().out)["error"]
        assert error["code"] == "USAGE"
        assert error["hint"] == f"{hint}; `splice install` installs what splice.lock pins."
