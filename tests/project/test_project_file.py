"""splice.json: finding the root, round trips, exact format, and every malformed field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyfakefs.fake_filesystem import FakeFilesystem

from splice_build.errors import ErrorCode, ProjectError
from splice_build.project.project_file import (
    ProjectFile,
    find_project_root,
    init_project,
    load_project_file,
    save_project_file,
)
from testing.cli import run_splice
from testing.projects import assert_problems_bounded, make_project, write_json


def test_round_trip_and_exact_bytes(tmp_path: Path) -> None:
    pf = ProjectFile({"@b/a": "^1.0.0", "@a/z": "~2.1.0", "@a/b-c": "latest", "@a/b": "1.2.3"})
    save_project_file(tmp_path, pf.with_package("@c/x", "*"))
    text = (tmp_path / "splice.json").read_text(encoding="utf-8")
    assert text == (
        "{\n"
        '  "specVersion": 1,\n'
        '  "packages": {\n'
        '    "@a/b": "1.2.3",\n'
        '    "@a/b-c": "latest",\n'
        '    "@a/z": "~2.1.0",\n'
        '    "@b/a": "^1.0.0",\n'
        '    "@c/x": "*"\n'
        "  }\n"
        "}\n"
    )
    loaded = load_project_file(tmp_path)
    assert loaded == pf.with_package("@c/x", "*")
    assert list(loaded.packages) == ["@a/b", "@a/b-c", "@a/z", "@b/a", "@c/x"]


def test_registry_key_order_and_unknown_keys_kept(tmp_path: Path) -> None:
    write_json(
        tmp_path / "splice.json",
        {"$schema": "x", "packages": {"@a/b": "^1.0.0"}, "registry": "local", "specVersion": 1},
    )
    pf = load_project_file(tmp_path)
    assert pf.registry == "local"  # stored as written; resolve_registry expands it
    save_project_file(tmp_path, pf.without_package("@a/b"))
    # The TypeScript Splice's order (specVersion, packages, registry), then unknown keys.
    assert (tmp_path / "splice.json").read_text() == (
        '{\n  "specVersion": 1,\n  "packages": {},\n  "registry": "local",\n  "$schema": "x"\n}\n'
    )


def test_values_are_immutable_copies() -> None:
    source = {"@a/b": "^1.0.0"}
    pf = ProjectFile(source)
    source["@a/c"] = "1.0.0"
    assert list(pf.packages) == ["@a/b"]
    with pytest.raises(TypeError):
        pf.packages["@x/y"] = "1.0.0"  # type: ignore[index]
    assert pf.without_package("@a/b").packages == {}
    assert pf.without_package("@not/there") == pf


def test_packages_default_to_empty(tmp_path: Path) -> None:
    write_json(tmp_path / "splice.json", {"specVersion": 1})
    assert load_project_file(tmp_path) == ProjectFile({})


def test_bom_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "splice.json").write_bytes(b'\xef\xbb\xbf{"specVersion": 1, "packages": {}}')
    assert load_project_file(tmp_path).packages == {}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "splice.json is invalid: the top level must be a JSON object"),
        ({"packages": {}}, "splice.json is invalid: specVersion: must be 1 (got nothing)"),
        ({"specVersion": 2}, "splice.json is invalid: specVersion: must be 1 (got 2)"),
        ({"specVersion": True}, "splice.json is invalid: specVersion: must be 1 (got true)"),
        ({"specVersion": "1"}, 'splice.json is invalid: specVersion: must be 1 (got "1")'),
        ({"specVersion": 1, "registry": 5}, "splice.json is invalid: registry: must be a string"),
        (
            {"specVersion": 1, "registry": None},
            "splice.json is invalid: registry: must be a string",
        ),
        (
            {"specVersion": 1, "registry": "ftp://x"},
            'splice.json is invalid: registry: Invalid registry URL: "ftp://x" must start with '
            "http:// or https://",
        ),
        ({"specVersion": 1, "packages": []}, "splice.json is invalid: packages: must be an object"),
        (
            {"specVersion": 1, "packages": {"@a/b": 1}},
            "splice.json is invalid: packages.@a/b: range must be a string",
        ),
    ],
)
def test_invalid_fields(tmp_path: Path, document: object, message: str) -> None:
    write_json(tmp_path / "splice.json", document)
    with pytest.raises(ProjectError) as info:
        load_project_file(tmp_path)
    assert info.value.code is ErrorCode.INVALID_PROJECT
    assert info.value.message == message


@pytest.mark.parametrize(
    ("packages", "prefix"),
    [
        ({"@a/b": "^x.y"}, 'splice.json is invalid: packages.@a/b: invalid range "^x.y"'),
        ({"@a/b": ""}, 'splice.json is invalid: packages.@a/b: invalid range ""'),
        ({"a/b": "1.0.0"}, "splice.json is invalid: packages.a/b: invalid package id"),
        ({"@A/b": "1.0.0"}, "splice.json is invalid: packages.@A/b: invalid package id"),
        ({"@a/../b": "1.0.0"}, "splice.json is invalid: packages.@a/../b: invalid package id"),
        ({" @a/b": "1.0.0"}, "splice.json is invalid: packages. @a/b: invalid package id"),
    ],
)
def test_invalid_package_entries_name_the_field(
    tmp_path: Path, packages: dict[str, str], prefix: str
) -> None:
    make_project(tmp_path, packages)
    with pytest.raises(ProjectError) as info:
        load_project_file(tmp_path)
    assert info.value.code is ErrorCode.INVALID_PROJECT
    assert info.value.message.startswith(prefix), info.value.message


def test_every_problem_is_listed(tmp_path: Path) -> None:
    write_json(tmp_path / "splice.json", {"specVersion": 3, "packages": {"@a/b": "nope", "x": "1"}})
    with pytest.raises(ProjectError) as info:
        load_project_file(tmp_path)
    assert [d.split(":")[0] for d in info.value.details] == [
        "specVersion",
        "packages.@a/b",
        "packages.x",
    ]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{", "splice.json is invalid: not valid JSON ("),
        (b"\xfe\xff", "splice.json is invalid: not UTF-8 (byte 0)"),
    ],
)
def test_unreadable_json(tmp_path: Path, data: bytes, message: str) -> None:
    (tmp_path / "splice.json").write_bytes(data)
    with pytest.raises(ProjectError) as info:
        load_project_file(tmp_path)
    assert info.value.code is ErrorCode.INVALID_PROJECT
    assert info.value.message.startswith(message)


def test_find_project_root_from_a_nested_directory(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    nested = root / "src" / "deep" / "er"
    nested.mkdir(parents=True)
    assert find_project_root(nested) == root
    assert find_project_root(root) == root


def test_nearest_project_wins_and_a_directory_named_splice_json_does_not_count(
    fs: FakeFilesystem,
) -> None:
    make_project(Path("/outer"))
    make_project(Path("/outer/inner"))
    fs.create_dir("/outer/inner/a/splice.json")
    fs.create_dir("/outer/inner/a/b")
    assert find_project_root(Path("/outer/inner/a/b")) == Path("/outer/inner")
    assert find_project_root(Path("/outer/x/../inner")) == Path("/outer/inner")


def test_not_a_project(fs: FakeFilesystem) -> None:
    fs.create_dir("/work/a/b")
    with pytest.raises(ProjectError) as info:
        find_project_root(Path("/work/a/b"))
    assert info.value.code is ErrorCode.NOT_A_PROJECT
    assert info.value.message == "No splice.json found in /work/a/b or any parent directory."
    assert info.value.hint == "Run `splice init` to create one."
    assert info.value.exit_code == 1


def test_loading_without_a_file_is_not_a_project(tmp_path: Path) -> None:
    with pytest.raises(ProjectError) as info:
        load_project_file(tmp_path)
    assert info.value.code is ErrorCode.NOT_A_PROJECT


def test_init_creates_only_splice_json_once(tmp_path: Path) -> None:
    target = tmp_path / "new" / "project"
    root, created = init_project(target, registry="local")
    assert (root, created) == (target, True)
    assert [p.name for p in target.iterdir()] == ["splice.json"]
    assert load_project_file(root) == ProjectFile({}, registry="local")
    save_project_file(root, load_project_file(root).with_package("@a/b", "^1.0.0"))
    assert init_project(target) == (target, False)
    assert load_project_file(root).packages == {"@a/b": "^1.0.0"}  # untouched


def test_init_rejects_a_bad_registry_and_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(ProjectError) as info:
        init_project(tmp_path / "p", registry="https://user:secret@example.org")
    assert info.value.code is ErrorCode.INVALID_CONFIG
    assert info.value.exit_code == 2
    assert "secret" not in info.value.message
    assert not (tmp_path / "p").exists()


def test_the_problems_an_invalid_file_shows_are_bounded(tmp_path: Path) -> None:
    """A checkout's splice.json chooses how many problems it has and what each quotes (twice):
    200 package names of 5,000 characters made every command there print 2 MB, ``--json`` in
    one document. The first 20 are shown, each cut at 500 characters, then how many more."""
    names = {"@a/" + "B" * (5000 + n): "^1.0.0" for n in range(200)}
    write_json(tmp_path / "splice.json", {"specVersion": 1, "packages": names})
    with pytest.raises(ProjectError) as refused:
        load_project_file(tmp_path)
    assert_problems_bounded(refused.value, 180)


def test_an_unknown_key_names_the_known_key_it_is_nearest_to() -> None:
    notes = ProjectFile({}, extra={"pakages": {}, "Registry": "x", "$schema": "y"}).unknown_keys()
    assert notes == [
        'splice.json: unknown key "pakages" (did you mean "packages"?): kept as written, '
        "not read by this version",
        'splice.json: unknown key "Registry" (did you mean "registry"?): kept as written, '
        "not read by this version",
        'splice.json: unknown key "$schema": kept as written, not read by this version',
    ]
    many = ProjectFile({}, extra={f"k{i}" * 300: i for i in range(25)}).unknown_keys()
    assert len(many) == 21 and many[-1] == "and 5 more unknown keys"
    assert all(len(note) <= 501 for note in many)
    assert ProjectFile({}).unknown_keys() == []


def test_sync_and_install_warn_of_a_misspelt_key_every_time(tmp_path: Path) -> None:
    # "pakages" was kept silently: sync said "no packages", install "Nothing to install".
    write_json(tmp_path / "splice.json", {"specVersion": 1, "pakages": {"@splice/example": "*"}})
    warning = (
        'warning: .: splice.json: unknown key "pakages" (did you mean "packages"?): kept as '
        "written, not read by this version"
    )
    done = run_splice("sync", cwd=tmp_path)
    assert done.code == 0 and warning in done.stderr.splitlines(), done.stderr
    # The next sync is a no-op, which reads no key: it warns all the same, and the unknown
    # key is no reason to run the graph (every sync of such a project ran it before).
    checked = run_splice("--json", "sync", "--check", cwd=tmp_path)
    assert warning in checked.stderr.splitlines(), checked.stderr
    assert checked.json()["tasks"]["executed"] == []
    (project,) = checked.json()["projects"]
    assert project["warnings"] == [warning.removeprefix("warning: .: ")]
    installed = run_splice("install", cwd=tmp_path)
    assert installed.code == 0
    assert warning.replace(".: ", "", 1) in installed.stderr.splitlines(), installed.stderr


def test_every_command_reading_the_project_warns_of_a_misspelt_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # list said "No packages installed", run NOT_INSTALLED, info asked the default registry
    # ("registy"), and none of them said why.
    from splice_build.cli.main import main

    write_json(tmp_path / "splice.json", {"specVersion": 1, "registy": "embedded", "pakages": {}})
    monkeypatch.chdir(tmp_path)
    for command in (["list"], ["run", "example.hello"], ["info", "@splice/example"]):
        capsys.readouterr()
        main(["--json", *command])
        out, err = capsys.readouterr()
        assert (
            'warning: splice.json: unknown key "registy" (did you mean "registry"?): kept as '
            "written, not read by this version"
        ) in err.splitlines(), (command, err)
        json.loads(out)  # stdout still holds the one document


def test_an_invalid_project_file_hints_which_file_it_is(tmp_path: Path) -> None:
    write_json(tmp_path / "splice.json", {"specVersion": 2, "packages": {}})
    with pytest.raises(ProjectError) as invalid:
        load_project_file(tmp_path)
    assert invalid.value.code is ErrorCode.INVALID_PROJECT
    assert invalid.value.hint == (
        f"Correct {tmp_path / 'splice.json'} as the message says, then run the command again."
    )


def test_a_key_given_twice_is_refused(tmp_path: Path) -> None:
    """The registry (or a package) named twice: ``JSON.parse`` keeps the last, a reader of the
    file may see the first (main: the second registry used, no error)."""
    (tmp_path / "splice.json").write_text(
        '{"specVersion": 1, "registry": "https://registry.example", "packages": {},'
        ' "registry": "http://127.0.0.1:9"}'
    )
    with pytest.raises(ProjectError) as caught:
        load_project_file(tmp_path)
    assert caught.value.code is ErrorCode.INVALID_PROJECT
    assert (
        caught.value.message
        == 'splice.json is invalid: the key "registry" is given twice in one object'
    )
