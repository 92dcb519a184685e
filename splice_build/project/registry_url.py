"""Which registry a command talks to: URL normalization, aliases and precedence.

docs/compatibility.md#user-state. A registry is an http(s) base URL without credentials, or the pseudo URL
``embedded:``: the in-process store under ``SPLICE_HOME``, which works offline and is the
default when nothing is configured. Precedence: ``--registry`` → ``SPLICE_REGISTRY`` →
``splice.json`` ``registry`` → (for a package already locked: ``install``, ``sync``,
``outdated``, ``update``, ``verify``) the registry its lock entry came from → user ``config.json`` →
the embedded registry. Every source goes through :func:`normalize_registry_url`, so a bad
value fails with ``INVALID_CONFIG`` (exit 2) wherever it came from. docs/cli.md, "Which
registry", says the same for users.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from splice_build.errors import ErrorCode, ProjectError
from splice_build.records import dataclass

if TYPE_CHECKING:
    from splice_build.project.home import SpliceHome
    from splice_build.project.project_file import ProjectFile

EMBEDDED_REGISTRY = "embedded:"
ALIASES: Mapping[str, str] = {"local": "http://127.0.0.1:8787", "embedded": EMBEDDED_REGISTRY}
_DEFAULT_PORTS = {"http": 80, "https": 443}
_HINT = "Use an http(s) URL or one of the aliases: " + ", ".join(ALIASES) + "."


@dataclass(frozen=True)
class RegistrySetting:
    """The registry to use and where that choice came from.

    ``source`` is one of ``flag``, ``env``, ``project``, ``lock``, ``user``, ``default``.
    """

    url: str
    source: str


def _invalid(reason: str, *, details: tuple[str, ...] = (), hint: str = _HINT) -> ProjectError:
    return ProjectError(
        ErrorCode.INVALID_CONFIG, f"Invalid registry URL: {reason}", details=details, hint=hint
    )


def normalize_registry_url(value: str) -> str:
    """Expand an alias or normalize an http(s) URL; raises ``ProjectError(INVALID_CONFIG)``.

    Normalizing lower-cases the scheme and host, drops a default port and strips trailing
    slashes, so one registry has one spelling (it is the key of its saved credential).
    Error messages never repeat a URL that carries credentials.
    """
    if not isinstance(value, str):  # an SDK caller's value arrives unchecked
        raise _invalid("the value must be a string")
    text = value.strip()
    if text in ALIASES:
        return ALIASES[text]
    if text == EMBEDDED_REGISTRY:
        return text
    if not text:
        raise _invalid("the value is empty")
    if "@" in text:
        raise _invalid("credentials are not allowed in a registry URL (use `splice login`)")
    if any(ch.isspace() for ch in text):
        raise _invalid(f'"{text}" contains white space')
    if not (text.isascii() and text.isprintable()):
        raise _invalid(
            f'"{text}" holds a character that is not printable ASCII',
            details=("write a host name that is not ASCII in its xn-- form",),
        )
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise _invalid(f'"{text}" is not a URL ({exc})') from exc
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:  # "locl": a mistyped alias is named as a command is
        from splice_build.spec.names import did_you_mean

        meant = did_you_mean(text, ALIASES) if not scheme else ""
        raise _invalid(f'"{text}" must start with http:// or https://', hint=meant + _HINT)
    if not parts.hostname:
        raise _invalid(f'"{text}" has no host')
    if "?" in text or "#" in text:
        raise _invalid(f'"{text}" must not have a query or a fragment')
    host = parts.hostname
    if not _is_host(host, bracketed=parts.netloc.startswith("[")):
        raise _invalid(f'"{text}" has no valid host name or IP address')
    if ":" in host:
        host = f"[{host}]"
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        host = f"{host}:{port}"
    return f"{scheme}://{host}{parts.path}".rstrip("/")


_LABEL = re.compile(r"[a-z0-9_-]{1,63}")


def _is_host(host: str, *, bracketed: bool) -> bool:
    """An IP address, or a DNS name of non-empty labels (one trailing dot allowed): the HTTP
    client would fail on anything else with an error of its own, uncoded.

    Square brackets hold an IPv6 address and nothing else: ``urlsplit`` also takes an
    IPvFuture literal (``[v1.fe]``) and hands back its text without the brackets, which
    would turn into the DNS name ``v1.fe``, another host than the one written."""
    import ipaddress

    if bracketed or ":" in host:
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return False
        return True
    name = host.removesuffix(".")
    return len(name) <= 253 and all(_LABEL.fullmatch(label) for label in name.split("."))


def _normalize_from(value: object, origin: str) -> str:
    if not isinstance(value, str):
        raise _invalid(f"{origin} must be a string")
    try:
        return normalize_registry_url(value)
    except ProjectError as exc:
        raise ProjectError(
            exc.code, exc.message, details=(*exc.details, f"set by {origin}"), hint=exc.hint
        ) from exc


def lock_decides(*, flag: str | None, env: Mapping[str, str], project: ProjectFile) -> bool:
    """Whether a locked package is asked of the registry its lock entry came from: nothing
    before the lock in the precedence (``--registry``, ``SPLICE_REGISTRY``, ``splice.json``)
    names a registry. The user config is not read: the lock comes before it."""
    return flag is None and not env.get("SPLICE_REGISTRY") and project.registry is None


def check_named_registry(*, flag: str | None, env: Mapping[str, str], home: SpliceHome) -> None:
    """``INVALID_CONFIG`` for a bad ``--registry`` or ``SPLICE_REGISTRY`` even where no registry
    is asked (a no-op ``install`` or ``sync``, a sync whose locked copies are all intact): a
    command answered exit 0 with one that the next, needing a registry, refuses. Only those two
    come before anything a project or its lock says, so only they are read."""
    if flag is not None or env.get("SPLICE_REGISTRY"):
        resolve_registry(flag=flag, env=env, project=None, home=home)


def resolve_registry(
    *,
    flag: str | None,
    env: Mapping[str, str],
    project: ProjectFile | None,
    home: SpliceHome,
    locked: str | None = None,
) -> RegistrySetting:
    """Pick the registry by precedence (see the module docstring).

    ``locked`` is the ``registry`` of the lock entry of the package asked about, if any. An
    empty ``SPLICE_REGISTRY`` counts as unset. The user config is read only when no earlier
    source decided. Raises ``ProjectError(INVALID_CONFIG)`` for a bad value.
    """
    if flag is not None:
        return RegistrySetting(_normalize_from(flag, "--registry"), "flag")
    from_env = env.get("SPLICE_REGISTRY")
    if from_env:
        return RegistrySetting(_normalize_from(from_env, "SPLICE_REGISTRY"), "env")
    if project is not None and project.registry is not None:
        return RegistrySetting(_normalize_from(project.registry, "splice.json registry"), "project")
    if locked is not None:
        return RegistrySetting(_normalize_from(locked, "splice.lock registry"), "lock")
    configured = home.read_config().get("registry")
    if configured is not None:
        return RegistrySetting(_normalize_from(configured, f"{home.config_file} registry"), "user")
    return RegistrySetting(EMBEDDED_REGISTRY, "default")
