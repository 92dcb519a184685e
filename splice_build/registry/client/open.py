"""Open the client for a registry URL, with the token that applies to it.

Token precedence (docs/compatibility.md#user-state): an explicit token, then ``SPLICE_TOKEN``, then the
credential saved for that registry by ``splice login``. ``SPLICE_TOKEN`` is meant for a
remote registry (CI) and is not applied to the embedded one, nor to a registry that only a
project file names (docs/registry.md#where-a-token-goes): it goes to the registry the user's
own settings choose (``--registry``, ``SPLICE_REGISTRY``, the user config), so a checkout
cannot point a CI job's token at a server of its own. A saved credential is already tied to
the registry it was saved for. Either way the HTTP client sends a token only on the routes
that act as a user, never on a read or a download.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from splice_build.errors import ErrorCode, ProjectError, RegistryError
from splice_build.project.home import SpliceHome
from splice_build.project.registry_url import EMBEDDED_REGISTRY, RegistrySetting, resolve_registry
from splice_build.records import dataclass
from splice_build.registry.client.interface import RegistryClient

TOKEN_ENV = "SPLICE_TOKEN"


@dataclass(frozen=True)
class TokenChoice:
    token: str | None
    source: str | None  # "flag" | "env" | "credentials" | None
    env_withheld: bool = False  # SPLICE_TOKEN is set, but this registry is not the user's choice


def resolve_token(
    url: str,
    *,
    home: SpliceHome,
    token: str | None = None,
    env: Mapping[str, str] | None = None,
    flag: str | None = None,
) -> TokenChoice:
    """The token for ``url``; ``flag`` is the command's ``--registry`` (without it, a registry
    named only there does not get ``SPLICE_TOKEN``: the rule fails closed)."""
    if token is not None:
        return _sendable(TokenChoice(token, "flag"))
    env = env or {}
    from_env = env.get(TOKEN_ENV, "").strip()
    withheld = False
    if from_env and url != EMBEDDED_REGISTRY:
        if users_choice(url, flag=flag, env=env, home=home):
            return _sendable(TokenChoice(from_env, "env"))
        withheld = True
    saved = home.read_credentials()["registries"].get(url)
    if isinstance(saved, dict) and isinstance(saved.get("token"), str):
        return _sendable(TokenChoice(saved["token"], "credentials"))
    return TokenChoice(None, None, env_withheld=withheld)


def users_choice(url: str, *, flag: str | None, env: Mapping[str, str], home: SpliceHome) -> bool:
    """``url`` is the registry the user's own settings pick, by the usual precedence with the
    project file left out; a setting that does not parse picks nothing here (it fails where
    it is used). ``SPLICE_TOKEN`` and ``splice login`` send a token only to such a registry."""
    try:
        chosen = resolve_registry(flag=flag, env=env, project=None, home=home)
    except ProjectError:
        return False
    return chosen.source != "default" and chosen.url == url


_TOKEN_SOURCES = {"flag": "--token", "env": TOKEN_ENV, "credentials": "the saved credential"}
_PROJECT_FILES = {"project": "splice.json", "lock": "splice.lock"}


def _sendable(choice: TokenChoice) -> TokenChoice:
    """A token goes into an HTTP header: printable ASCII only (a byte such as ``0xff`` in
    the environment would otherwise end the command with an encoding error)."""
    token = choice.token or ""
    if not (token.isascii() and token.isprintable()):
        where = _TOKEN_SOURCES.get(choice.source or "", "the token")
        raise RegistryError(
            ErrorCode.INVALID_CONFIG,
            f"{where} is not a registry token: it holds characters other than printable ASCII",
            hint="Run `splice login` again or set SPLICE_TOKEN to the token as it was given.",
        )
    return choice


def open_registry(
    url: str,
    *,
    home: SpliceHome,
    token: str | None = None,
    env: Mapping[str, str] | None = None,
) -> RegistryClient:
    """The client for ``url`` (already normalized: ``embedded:`` or an http(s) base URL).

    Without the command's ``--registry``, ``SPLICE_TOKEN`` applies only when
    ``SPLICE_REGISTRY`` or the user config names ``url``: enough for the install session,
    whose reads are anonymous anyway; commands that act as a user use ``open_configured``."""
    chosen = resolve_token(url, home=home, token=token, env=env).token
    return _client(url, home=home, token=chosen, env=env or {})


def _client(
    url: str, *, home: SpliceHome, token: str | None, env: Mapping[str, str]
) -> RegistryClient:
    if url == EMBEDDED_REGISTRY:
        from splice_build.registry.client.embedded import EmbeddedRegistryClient

        home.ensure()
        return EmbeddedRegistryClient(home.registry_dir, token=token)
    from splice_build.registry.client.deadline import Deadlines
    from splice_build.registry.client.http import HttpRegistryClient

    return HttpRegistryClient(url, token=token, deadlines=Deadlines.from_env(env))


@dataclass(frozen=True)
class Opened:
    """A client for the registry a command should use, and why that one."""

    client: RegistryClient
    url: str
    source: str  # flag | env | project | user | default
    token_source: str | None
    env_token_withheld: bool = False


def configured_registry(
    *, flag: str | None, env: Mapping[str, str], cwd: Path, home: SpliceHome
) -> RegistrySetting:
    """The registry by precedence, reading ``splice.json`` when ``cwd`` is inside a project."""
    from splice_build.project.project_file import find_project_root, load_project_file

    try:
        project = load_project_file(find_project_root(cwd))
    except ProjectError as exc:
        if exc.code is not ErrorCode.NOT_A_PROJECT:
            raise
        project = None
    return resolve_registry(flag=flag, env=env, project=project, home=home)


def open_configured(
    *,
    flag: str | None,
    env: Mapping[str, str],
    cwd: Path,
    home: SpliceHome,
    token: str | None = None,
) -> Opened:
    setting = configured_registry(flag=flag, env=env, cwd=cwd, home=home)
    choice = resolve_token(setting.url, home=home, token=token, env=env, flag=flag)
    client = _client(setting.url, home=home, token=choice.token, env=env)
    return Opened(client, setting.url, setting.source, choice.source, choice.env_withheld)


def require_login(opened: Opened) -> None:
    """Commands that act as a user need a token, except on the embedded (local) registry."""
    if opened.client.has_token or opened.url == EMBEDDED_REGISTRY:
        return
    opened.client.close()
    # with the registry named: a bare `splice login` asks which one (the embedded registry,
    # the default, needs none), so this hint alone sent the user round in a circle
    hint = f"Run `splice login --registry {opened.url}` or set SPLICE_TOKEN."
    details: list[str] = []
    if opened.env_token_withheld:
        named_by = _PROJECT_FILES.get(opened.source, opened.source)
        details = [f"{TOKEN_ENV} is not sent to a registry that only {named_by} names"]
        hint = (
            f"Name the registry yourself (--registry {opened.url} or SPLICE_REGISTRY) to use "
            f"{TOKEN_ENV} with it, or `splice login --registry {opened.url}` "
            "(docs/registry.md#where-a-token-goes)."
        )
    raise RegistryError(
        ErrorCode.NOT_LOGGED_IN, f"Not logged in to {opened.url}", details=details, hint=hint
    )
