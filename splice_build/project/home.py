"""User state under ``SPLICE_HOME`` (default ``~/.splice``): config, credentials, keys, cache.

docs/compatibility.md#user-state::

    <home>/config.json          {"registry"?: "<url|alias>", "isolation"?: "<mode>"}  0600
    <home>/credentials.json     {"version": 1, "registries": {"<normalized url>":
                                  {"token", "user", "savedAt"}}}        0600
    <home>/keys/<name>.key      Ed25519 private keys (PKCS#8 PEM)      0600
    <home>/cache/artifacts/sha256/<hex>   verified artifacts
    <home>/cache/artifacts/signatures/<hex>.json   their verified signatures (signed only)
    <home>/consent/<hex>.json   what this machine granted a project's packages
    <home>/registry/            the embedded registry's store
    <home>/.env                 provider keys (data layer only)
    <home>/logs/                unexpected-failure reports
    <home>/state.lock           serializes credential updates

The directory is 0700 and the two JSON files 0600; both files are written atomically with
the temp file created 0600, so a token is never readable by another user, not even for an
instant. ``SPLICE_TOKEN`` is not handled here: it is the registry client's business. Nothing
is read at import time; :meth:`SpliceHome.from_env` reads only the user database, and only
when ``HOME`` is unset.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from splice_build.errors import ErrorCode, ProjectError
from splice_build.project.locking import lock
from splice_build.records import dataclass
from splice_build.spec.project_state import HOME_CONFIG_FILE, HOME_CREDENTIALS_FILE
from splice_build.spec.regular_file import read_regular_file, this_user


def _user_home(home: str | None) -> str:
    """``home`` (the caller's ``HOME``) when set, else the process's ``HOME``, else the user
    database's entry for this uid; ``INVALID_CONFIG`` when none names a directory.

    An empty ``HOME`` counts as unset: ``os.path.expanduser`` would make ``~/.splice`` the root's
    ``/.splice``, and with neither ``HOME`` nor a user entry (a container's arbitrary uid) it
    leaves ``~`` in place, so the state would land in ``./~/.splice`` under whatever directory
    the command was run from.
    """
    for candidate in (home, os.environ.get("HOME")):
        if candidate:
            return candidate
    import pwd

    try:
        entry = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        entry = ""
    if not entry:
        raise ProjectError(
            ErrorCode.INVALID_CONFIG,
            f"no home directory for Splice's state: HOME is not set and user {os.getuid()} "
            "has no entry in the user database",
            hint="Set SPLICE_HOME (or HOME) to a directory you own.",
        )
    return entry


def _expand_home(path: str, home: str | None) -> str:
    """``path`` with a leading ``~`` replaced by the user's home (:func:`_user_home`) or ``~user``
    by that user's; ``INVALID_CONFIG`` when that user is unknown (it would stay a relative
    directory named ``~user``)."""
    if path == "~" or path.startswith("~/"):
        return (_user_home(home).rstrip("/") + path[1:]) or "/"
    if path.startswith("~"):
        expanded = os.path.expanduser(path)
        if expanded.startswith("~"):
            raise ProjectError(
                ErrorCode.INVALID_CONFIG,
                f"SPLICE_HOME {path!r} names a user this system does not know",
                hint="Set SPLICE_HOME to an absolute path.",
            )
        return expanded
    return path


DIR_MODE = 0o700
FILE_MODE = 0o600
CREDENTIALS_VERSION = 1


@dataclass(frozen=True)
class SpliceHome:
    """The user's Splice directory; pass it explicitly to whatever needs user state."""

    path: Path

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SpliceHome:
        """``SPLICE_HOME`` from ``env`` (an empty value counts as unset), else ``~/.splice``;
        ``~`` is ``env``'s ``HOME`` when it sets one, as the CLI run in ``env`` would read it
        (``Splice(env=...)``: the process's ``HOME`` gave another user's or the host
        program's home), else the process's home directory."""
        configured = env.get("SPLICE_HOME") or "~/.splice"
        try:
            return cls(Path(os.path.abspath(_expand_home(configured, env.get("HOME")))))
        except FileNotFoundError:  # relative, and the working directory was removed
            raise ProjectError(
                ErrorCode.INVALID_CONFIG,
                "SPLICE_HOME is a relative path, and the working directory no longer exists",
                hint="set SPLICE_HOME to an absolute path",
            ) from None

    @property
    def config_file(self) -> Path:
        return self.path / HOME_CONFIG_FILE

    @property
    def credentials_file(self) -> Path:
        return self.path / HOME_CREDENTIALS_FILE

    @property
    def keys_dir(self) -> Path:
        return self.path / "keys"

    @property
    def cache_dir(self) -> Path:
        return self.path / "cache"

    @property
    def artifacts_dir(self) -> Path:
        """The artifact cache's directory (install/cache.py ``ArtifactCache``)."""
        return self.cache_dir / "artifacts"

    @property
    def artifact_cache_dir(self) -> Path:
        return self.artifacts_dir / "sha256"

    @property
    def files_digest_dir(self) -> Path:
        """The files digests derived from the cached artifacts (install/cache.py)."""
        return self.artifacts_dir / "files"

    @property
    def consent_dir(self) -> Path:
        """What this machine granted each project's packages (install/consent_record.py)."""
        return self.path / "consent"

    @property
    def registry_dir(self) -> Path:
        return self.path / "registry"

    @property
    def env_file(self) -> Path:
        return self.path / ".env"

    @property
    def logs_dir(self) -> Path:
        return self.path / "logs"

    @property
    def state_lock(self) -> Path:
        return self.path / "state.lock"

    def check(self) -> SpliceHome:
        """This home, once found to be this user's alone (project/home_owner.py):
        ``INVALID_CONFIG`` when another user may have chosen what it holds."""
        from splice_build.project.home_owner import check_home

        check_home(self.path)
        return self

    def ensure(self) -> None:
        """Create the directory (mode 0700), tightening an existing one that others can read.

        Raises ``ProjectError(INVALID_CONFIG)`` when the path cannot be used, or is not this
        user's alone (:meth:`check`, made again once the directory exists: another user may
        have made it first).
        """
        try:
            self.path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        except OSError as exc:
            raise self._unusable(exc) from exc
        self.check()
        try:
            if self.path.stat().st_mode & 0o077:
                self.path.chmod(DIR_MODE)
        except OSError as exc:
            raise self._unusable(exc) from exc

    def _unusable(self, exc: OSError) -> ProjectError:
        return ProjectError(
            ErrorCode.INVALID_CONFIG,
            f"SPLICE_HOME {self.path} cannot be used: {exc.strerror}",
            hint="Set SPLICE_HOME to a directory you own.",
        )

    # The keys of config.json anything reads: ``registry`` (project/registry_url.py, set by
    # `splice config`) and ``isolation`` (runtime/isolation/plan.py, written by hand).
    CONFIG_KEYS = ("registry", "isolation")

    def read_config(self) -> dict[str, Any]:
        """The user config (``{}`` when there is none); ``INVALID_CONFIG`` when malformed."""
        value = self._read_json(self.config_file)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self._invalid(self.config_file, "the top level must be a JSON object")
        return value

    def write_config(self, config: Mapping[str, Any]) -> None:
        """Replace the user config atomically (file 0600)."""
        from splice_build.project.atomic import atomic_write_json

        self.ensure()
        atomic_write_json(self.config_file, dict(config), mode=FILE_MODE)

    def read_credentials(self) -> dict[str, Any]:
        """The whole credentials document, always with ``version`` and ``registries``.

        ``registries`` maps a normalized registry URL to ``{"token", "user", "savedAt"}``.
        Raises ``ProjectError(INVALID_CONFIG)`` when the file is malformed; the message never
        contains a token.
        """
        value = self._read_json(self.credentials_file)
        if value is None:
            return {"version": CREDENTIALS_VERSION, "registries": {}}
        problem = _credentials_problem(value)
        if problem is not None:
            raise self._invalid(self.credentials_file, problem)
        assert isinstance(value, dict)
        value.setdefault("version", CREDENTIALS_VERSION)
        return value

    def save_credential(self, registry_url: str, token: str, user: str) -> None:
        """Store ``token`` for the normalized ``registry_url``, replacing an older one."""
        import time

        from splice_build.project.atomic import atomic_write_json
        from splice_build.project.registry_url import normalize_registry_url
        from splice_build.spec.js_date import iso_string

        key = normalize_registry_url(registry_url)
        saved_at = iso_string(time.time())
        self.ensure()
        with lock(self.state_lock):
            document = self.read_credentials()
            document["registries"][key] = {"token": token, "user": user, "savedAt": saved_at}
            atomic_write_json(self.credentials_file, document, mode=FILE_MODE)

    def remove_credential(self, registry_url: str) -> bool:
        """Forget the token for ``registry_url``; False when none was saved."""
        from splice_build.project.atomic import atomic_write_json
        from splice_build.project.registry_url import normalize_registry_url

        key = normalize_registry_url(registry_url)
        if not self.check().credentials_file.exists():  # before the lock is made in it
            return False
        with lock(self.state_lock):
            document = self.read_credentials()
            if document["registries"].pop(key, None) is None:
                return False
            atomic_write_json(self.credentials_file, document, mode=FILE_MODE)
        return True

    def _read_json(self, path: Path) -> object:
        from splice_build.project.atomic import decode_json

        self.check()
        try:  # a file another user put here before the home was closed is theirs: refused
            data = read_regular_file(path, owner=this_user())
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise self._invalid(path, f"cannot be read ({exc.strerror})") from exc
        try:
            return decode_json(data)
        except ValueError as exc:
            raise self._invalid(path, str(exc)) from exc

    @staticmethod
    def _invalid(path: Path, problem: str) -> ProjectError:
        return ProjectError(
            ErrorCode.INVALID_CONFIG,
            f"{path.name} is invalid: {problem}",
            details=(f"file: {path}",),
            hint=f"Fix or delete {path}.",
        )


def make_private_dirs(directory: Path) -> None:
    """Create ``directory`` and each missing parent with mode 0700 (minus the umask).

    Whatever writes under SPLICE_HOME first may be what creates it (the artifact cache on a
    first ``splice add``, a crash report), and ``mkdir(parents=True)`` would make the home
    0755 and leave it so: its parents are created with the default mode whatever ``mode``
    says. The home must be 0700 however it came to exist."""
    from splice_build.project.atomic import fsync_directory

    missing: list[Path] = []
    for path in (directory, *directory.parents):
        if os.path.isdir(path):
            break
        missing.append(path)
    for path in reversed(missing):
        try:
            os.mkdir(path, DIR_MODE)
        except FileExistsError:
            if not os.path.isdir(path):
                raise
            continue
        fsync_directory(path.parent)


def _credentials_problem(value: object) -> str | None:
    if not isinstance(value, dict):
        return "the top level must be a JSON object"
    registries = value.get("registries")
    if not isinstance(registries, dict):
        return "registries: must be an object"
    for url, entry in registries.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("token"), str):
            return f"registries.{url}: must be an object with a string token"
    return None
