"""SPLICE_HOME: where it is, its layout, config and credentials with their modes."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, ProjectError
from splice_build.project.home import SpliceHome
from testing.projects import run_python

SAVE_CREDENTIAL = """
import sys
from pathlib import Path
from splice_build.project.home import SpliceHome
SpliceHome(Path(sys.argv[1])).save_credential("local", "spl_secret", "alice")
"""


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_from_env_uses_splice_home_without_touching_disk(tmp_path: Path) -> None:
    home = SpliceHome.from_env({"SPLICE_HOME": str(tmp_path / "h")})
    assert home.path == tmp_path / "h"
    assert not home.path.exists()


def test_from_env_defaults_to_dot_splice_in_the_user_home(tmp_path: Path) -> None:
    # tests/conftest.py points HOME at a temp directory, so this is not the real home.
    assert SpliceHome.from_env({}).path == Path(os.environ["HOME"]) / ".splice"
    assert SpliceHome.from_env({"SPLICE_HOME": ""}).path == Path(os.environ["HOME"]) / ".splice"


def test_relative_splice_home_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert SpliceHome.from_env({"SPLICE_HOME": "rel"}).path == tmp_path / "rel"


def test_layout() -> None:
    home = SpliceHome(Path("/h"))
    assert home.config_file == Path("/h/config.json")
    assert home.credentials_file == Path("/h/credentials.json")
    assert home.keys_dir == Path("/h/keys")
    assert home.cache_dir == Path("/h/cache")
    assert home.artifact_cache_dir == Path("/h/cache/artifacts/sha256")
    assert home.registry_dir == Path("/h/registry")
    assert home.env_file == Path("/h/.env")
    assert home.logs_dir == Path("/h/logs")


def test_ensure_creates_0700_and_tightens_an_open_directory(tmp_path: Path) -> None:
    home = SpliceHome(tmp_path / "a" / "home")
    home.ensure()
    assert _mode(home.path) == 0o700
    home.path.chmod(0o755)
    home.ensure()
    assert _mode(home.path) == 0o700


def test_ensure_on_a_file_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(ProjectError) as info:
        SpliceHome(tmp_path / "file").ensure()
    assert info.value.code is ErrorCode.INVALID_CONFIG


def test_config_round_trip_and_modes(tmp_path: Path) -> None:
    home = SpliceHome(tmp_path / "home")
    assert home.read_config() == {}
    home.write_config({"registry": "local"})
    assert home.read_config() == {"registry": "local"}
    assert home.config_file.read_text() == '{\n  "registry": "local"\n}\n'
    assert _mode(home.path) == 0o700
    assert _mode(home.config_file) == 0o600


@pytest.mark.parametrize("content", ["[]", "{", '"x"'])
def test_malformed_config(tmp_path: Path, content: str) -> None:
    home = SpliceHome(tmp_path)
    home.config_file.write_text(content)
    with pytest.raises(ProjectError) as info:
        home.read_config()
    assert info.value.code is ErrorCode.INVALID_CONFIG
    assert info.value.message.startswith("config.json is invalid: ")


def test_credentials_round_trip(tmp_path: Path) -> None:
    home = SpliceHome(tmp_path / "home")
    assert home.read_credentials() == {"version": 1, "registries": {}}
    home.save_credential("http://127.0.0.1:8787/", "spl_one", "alice")
    home.save_credential("https://Reg.Example.org", "spl_two", "bob")
    home.save_credential("local", "spl_three", "carol")  # same registry as the first: replaced
    document = home.read_credentials()
    assert document["version"] == 1
    assert set(document["registries"]) == {"http://127.0.0.1:8787", "https://reg.example.org"}
    local = document["registries"]["http://127.0.0.1:8787"]
    assert (local["token"], local["user"]) == ("spl_three", "carol")
    assert local["savedAt"].endswith("Z") and len(local["savedAt"]) == 24
    assert list(json.loads(home.credentials_file.read_text())) == ["version", "registries"]
    assert home.remove_credential("http://127.0.0.1:8787") is True
    assert home.remove_credential("local") is False
    assert set(home.read_credentials()["registries"]) == {"https://reg.example.org"}


def test_remove_without_credentials_file(tmp_path: Path) -> None:
    home = SpliceHome(tmp_path / "home")
    assert home.remove_credential("local") is False
    assert not home.path.exists()


def test_credentials_are_private_whatever_the_umask(tmp_path: Path) -> None:
    home = SpliceHome(tmp_path / "home")
    result = run_python(SAVE_CREDENTIAL, str(home.path), umask=0)
    assert result.returncode == 0, result.stderr
    assert _mode(home.path) == 0o700
    assert _mode(home.credentials_file) == 0o600
    # Rewriting replaces the file, so a loosened mode does not survive the next save either.
    home.credentials_file.chmod(0o644)
    assert run_python(SAVE_CREDENTIAL, str(home.path), umask=0).returncode == 0
    assert _mode(home.credentials_file) == 0o600


def test_credentials_with_a_bad_shape_never_echo_the_token(tmp_path: Path) -> None:
    home = SpliceHome(tmp_path)
    home.credentials_file.write_text('{"version": 1, "registries": {"local": {"token": 5}}}')
    with pytest.raises(ProjectError) as info:
        home.read_credentials()
    assert info.value.code is ErrorCode.INVALID_CONFIG
    home.credentials_file.write_text('{"registries": {"x": {"token": "spl_leak"}}, oops}')
    with pytest.raises(ProjectError) as info:
        home.read_credentials()
    assert "spl_leak" not in info.value.message + " ".join(info.value.details)


def test_splice_token_is_not_read_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPLICE_TOKEN", "spl_from_env")
    home = SpliceHome(tmp_path / "home")
    assert home.read_credentials() == {"version": 1, "registries": {}}
    assert (
        SpliceHome.from_env({"SPLICE_TOKEN": "spl_from_env", "SPLICE_HOME": str(home.path)}) == home
    )


def test_make_private_dirs_creates_every_missing_parent_0700(tmp_path: Path) -> None:
    from splice_build.project.home import make_private_dirs

    target = tmp_path / "home" / "cache" / "artifacts" / "sha256"
    old = os.umask(0o022)
    try:
        make_private_dirs(target)
        make_private_dirs(target)  # existing: nothing to do
    finally:
        os.umask(old)
    for directory in (target, *list(target.parents)[:3]):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    (tmp_path / "file").write_text("x")
    with pytest.raises(OSError):
        make_private_dirs(tmp_path / "file" / "below")


def test_from_env_takes_home_from_the_env_it_is_given(tmp_path: Path) -> None:
    """``Splice(env={"HOME": ...})`` without ``SPLICE_HOME`` used the process's ``HOME``
    (credentials, caches and keys read from the host program's home, not the one given),
    and ``SPLICE_HOME=~/x`` in that env expanded with it too."""
    from splice_build.sdk import Splice

    mine = str(tmp_path / "u")
    assert SpliceHome.from_env({"HOME": mine}).path == tmp_path / "u" / ".splice"
    assert SpliceHome.from_env({"HOME": mine + "/", "SPLICE_HOME": "~/x"}).path == Path(mine, "x")
    assert SpliceHome.from_env({"HOME": "/"}).path == Path("/.splice")
    assert SpliceHome.from_env({"HOME": ""}).path == Path(os.environ["HOME"]) / ".splice"
    splice = Splice.init(tmp_path / "project", env={"HOME": mine})
    assert splice.home.path == tmp_path / "u" / ".splice"


def test_a_home_of_an_unknown_user_is_a_config_error(tmp_path: Path) -> None:
    """``~nobody-here/x`` is left as it is by ``os.path.expanduser``: a relative directory named
    ``~nobody-here`` under whatever directory the command runs in."""
    with pytest.raises(ProjectError) as raised:
        SpliceHome.from_env({"SPLICE_HOME": "~splice-no-such-user/state"})
    assert raised.value.code == ErrorCode.INVALID_CONFIG
