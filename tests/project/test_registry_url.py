"""Registry URLs: normalization, aliases, errors, and the precedence of the five sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, ProjectError
from splice_build.project.home import SpliceHome
from splice_build.project.project_file import ProjectFile
from splice_build.project.registry_url import (
    ALIASES,
    EMBEDDED_REGISTRY,
    RegistrySetting,
    normalize_registry_url,
    resolve_registry,
)
from testing.cli import run_splice


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("local", "http://127.0.0.1:8787"),
        ("embedded", EMBEDDED_REGISTRY),
        ("embedded:", EMBEDDED_REGISTRY),
        ("  local  ", "http://127.0.0.1:8787"),
        ("https://registry.example.org", "https://registry.example.org"),
        ("https://registry.example.org///", "https://registry.example.org"),
        ("HTTPS://Registry.Example.ORG:443/", "https://registry.example.org"),
        ("http://example.org:80", "http://example.org"),
        ("http://example.org:8443/", "http://example.org:8443"),
        ("https://example.org:80", "https://example.org:80"),
        ("http://[::1]:8787/", "http://[::1]:8787"),
        ("https://example.org/splice/api/", "https://example.org/splice/api"),
    ],
)
def test_normalize(value: str, expected: str) -> None:
    assert normalize_registry_url(value) == expected


def test_aliases_are_exactly_local_and_embedded() -> None:
    assert dict(ALIASES) == {"local": "http://127.0.0.1:8787", "embedded": "embedded:"}


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", "the value is empty"),
        ("   ", "the value is empty"),
        ("production", '"production" must start with http:// or https://'),
        ("ftp://example.org", '"ftp://example.org" must start with http:// or https://'),
        ("file:///etc/passwd", '"file:///etc/passwd" must start with http:// or https://'),
        ("example.org", '"example.org" must start with http:// or https://'),
        ("http://", '"http://" has no host'),
        ("http:///path", '"http:///path" has no host'),
        (
            "https://example.org/?q=1",
            '"https://example.org/?q=1" must not have a query or a fragment',
        ),
        ("https://example.org/#x", '"https://example.org/#x" must not have a query or a fragment'),
        ("http://exa mple.org", '"http://exa mple.org" contains white space'),
        ("http://example.org:99999", '"http://example.org:99999" is not a URL'),
        ("embedded:/x", '"embedded:/x" must start with http:// or https://'),
        ("http://a..b", '"http://a..b" has no valid host name or IP address'),
        ("http://a%00b", '"http://a%00b" has no valid host name or IP address'),
        ("http://.", '"http://." has no valid host name or IP address'),
        ("http://[::1", '"http://[::1" is not a URL'),
        ("http://[v1.fe]/", '"http://[v1.fe]/" has no valid host name or IP address'),
        ("https://[v1.fe]:8443/r", '"https://[v1.fe]:8443/r" has no valid host name or IP'),
        ("http://[v1.fe]x/", '"http://[v1.fe]x/" has no valid host name or IP address'),
        ("http://a\x00b", '"http://a\x00b" holds a character that is not printable ASCII'),
        ("http://a\x1bb/", '"http://a\x1bb/" holds a character that is not printable ASCII'),
        ("http://a/\x7f", '"http://a/\x7f" holds a character that is not printable ASCII'),
        ("http://\u00e9x.com", '"http://\u00e9x.com" holds a character that is not printable'),
    ],
)
def test_invalid(value: str, reason: str) -> None:
    with pytest.raises(ProjectError) as info:
        normalize_registry_url(value)
    assert info.value.code is ErrorCode.INVALID_CONFIG
    assert info.value.exit_code == 2
    assert info.value.message.startswith(f"Invalid registry URL: {reason}")


@pytest.mark.parametrize(
    "value",
    ["https://user:hunter2@example.org", "https://tok3n@example.org", "hunter2@example.org"],
)
def test_credentials_are_refused_without_being_repeated(value: str) -> None:
    with pytest.raises(ProjectError) as info:
        normalize_registry_url(value)
    assert info.value.code is ErrorCode.INVALID_CONFIG
    rendered = " ".join([info.value.message, *info.value.details, info.value.hint or ""])
    assert "hunter2" not in rendered and "tok3n" not in rendered


FLAG, ENV, PROJECT, USER = (
    "https://flag.example",
    "https://env.example",
    "https://project.example",
    "https://user.example",
)


@pytest.mark.parametrize(
    ("flag", "env", "project", "user", "expected"),
    [
        (FLAG, ENV, PROJECT, USER, RegistrySetting(FLAG, "flag")),
        (None, ENV, PROJECT, USER, RegistrySetting(ENV, "env")),
        (None, "", PROJECT, USER, RegistrySetting(PROJECT, "project")),
        (None, None, PROJECT, USER, RegistrySetting(PROJECT, "project")),
        (None, None, None, USER, RegistrySetting(USER, "user")),
        (None, None, None, None, RegistrySetting(EMBEDDED_REGISTRY, "default")),
        ("local", None, None, None, RegistrySetting("http://127.0.0.1:8787", "flag")),
        (None, None, "embedded", USER, RegistrySetting(EMBEDDED_REGISTRY, "project")),
        (None, None, None, "local", RegistrySetting("http://127.0.0.1:8787", "user")),
        (None, "https://env.example/", None, None, RegistrySetting(ENV, "env")),
    ],
)
def test_precedence(
    tmp_path: Path,
    flag: str | None,
    env: str | None,
    project: str | None,
    user: str | None,
    expected: RegistrySetting,
) -> None:
    home = SpliceHome(tmp_path / "home")
    if user is not None:
        home.write_config({"registry": user})
    pf = ProjectFile({}, registry=project)
    environment = {} if env is None else {"SPLICE_REGISTRY": env}
    assert resolve_registry(flag=flag, env=environment, project=pf, home=home) == expected


def test_no_project_and_no_home_is_the_embedded_default(tmp_path: Path) -> None:
    home = SpliceHome(tmp_path / "missing")
    setting = resolve_registry(flag=None, env={}, project=None, home=home)
    assert setting == RegistrySetting(EMBEDDED_REGISTRY, "default")
    assert not home.path.exists()  # resolving never creates user state


@pytest.mark.parametrize(
    ("source", "origin"),
    [
        ("flag", "set by --registry"),
        ("env", "set by SPLICE_REGISTRY"),
        ("project", "set by splice.json registry"),
        ("user", "config.json registry"),
    ],
)
def test_a_bad_value_names_its_source(tmp_path: Path, source: str, origin: str) -> None:
    home = SpliceHome(tmp_path / "home")
    bad = "gopher://example.org"
    if source == "user":
        home.write_config({"registry": bad})
    with pytest.raises(ProjectError) as info:
        resolve_registry(
            flag=bad if source == "flag" else None,
            env={"SPLICE_REGISTRY": bad} if source == "env" else {},
            project=ProjectFile({}, registry=bad if source == "project" else None),
            home=home,
        )
    assert info.value.code is ErrorCode.INVALID_CONFIG
    assert info.value.details[-1].endswith(origin)


def test_user_config_registry_must_be_a_string(tmp_path: Path) -> None:
    home = SpliceHome(tmp_path / "home")
    home.write_config({"registry": 8787})
    with pytest.raises(ProjectError) as info:
        resolve_registry(flag=None, env={}, project=None, home=home)
    assert info.value.code is ErrorCode.INVALID_CONFIG
    assert "must be a string" in info.value.message


def test_a_registry_no_client_can_reach_fails_the_project_coded(tmp_path: Path) -> None:
    """A checkout's ``registry`` that the HTTP client cannot even parse (an empty label) is
    that project's ``INVALID_PROJECT``, not an unexpected failure of the whole sync."""
    project = tmp_path / "checkout"
    project.mkdir()
    (project / "splice.json").write_text(
        json.dumps(
            {"specVersion": 1, "registry": "http://a..b", "packages": {"@acme/x": "^1.0.0"}}
        ),
        encoding="utf-8",
    )
    done = run_splice("--json", "sync", cwd=project)
    assert done.code == 1, (done.stdout, done.stderr)
    [outcome] = json.loads(done.stdout)["projects"]
    assert outcome["error"]["code"] == "INVALID_PROJECT", outcome
    assert "has no valid host name" in outcome["error"]["message"]
    assert "Traceback" not in done.stderr and "unexpected failure" not in done.stderr
