"""Consent to a package's permissions (docs/security.md, docs/compatibility.md#install-pipeline step 7).

A package that declares anything beyond what the project already granted needs an explicit
yes: ``accept=True`` (``--accept-permissions``) or a callback (the CLI's interactive prompt)
that receives the ``describe`` lines of what is new and ``"id@version"``. Without it the
install stops with ``PERMISSIONS_NOT_ACCEPTED`` before anything is written. Upgrades within
the existing grant need no consent. Nothing that reaches the project's own state or
SPLICE_HOME is ever asked for (``INVALID_MANIFEST``, spec/project_state.py), and the lines
show the exact paths the runtime would grant in this project. A file grant whose real path
leaves the project (through a symbolic link) is asked for, with where it leads, unless this
machine's consent record names it with that same real path (spec/outside_grants.py): what the
lock grants says nothing of where a link of the checkout leads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from splice_build.errors import ErrorCode, InstallError

if TYPE_CHECKING:
    from splice_build.install.consent_record import ConsentRecord
    from splice_build.spec.permissions import Permissions
    from splice_build.spec.project_state import RunMemo

Accept = bool | Callable[[list[str], str], bool]

# The CLI's flag: the SDK names its argument beside it (sdk_hints.py).
ACCEPT_HINT = "Review them, then re-run with --accept-permissions."


def ungranted_lines(
    requested: Permissions,
    granted: Permissions | None,
    root: Path | None = None,
    links: Mapping[str, str] | None = None,
    found: Mapping[str, str] | None = None,
) -> list[str]:
    """The ``describe`` lines of what ``requested`` asks beyond ``granted`` (None: nothing),
    file paths as granted in the project at ``root`` when it is given; with ``root``, also
    each file grant leading out of the project that ``links`` (what this machine accepted:
    ``ConsentRecord.links_for``) does not name with its real path now, granted or not.
    ``found``: the grants leading out as the caller resolved them (``outside_links``), judged
    and shown as they are: the record the caller writes is then what the lines showed."""
    from splice_build.spec.permissions import Permissions, ungranted

    missing = ungranted(requested, granted if granted is not None else Permissions.from_json({}))
    if root is not None:
        missing = _with_outside(requested, missing, root, links, found)
    if missing.is_empty:
        return []
    from splice_build.security.addresses import grants_connection

    return list(missing.describe(root, found, grants=grants_connection))


def _with_outside(
    requested: Permissions,
    missing: Permissions,
    root: Path,
    links: Mapping[str, str] | None,
    found: Mapping[str, str] | None,
) -> Permissions:
    """``missing`` and the file grants of ``requested`` leading out of the project at
    ``root`` that ``links`` does not hold, in ``requested``'s order."""
    from splice_build.records import replace
    from splice_build.spec.outside_grants import unaccepted_links

    away = unaccepted_links(root, requested, links, found)
    if not away:
        return missing
    return replace(
        missing,
        fs_read=tuple(e for e in requested.fs_read if e in away or e in missing.fs_read),
        fs_write=tuple(e for e in requested.fs_write if e in away or e in missing.fs_write),
    )


def require_consent(
    requested: Permissions,
    granted: Permissions | None,
    accept: Accept,
    subject: str,
    *,
    root: Path | None = None,
    home: Path | None = None,
    links: Mapping[str, str] | None = None,
    found: Mapping[str, str] | None = None,
) -> None:
    """Return when the new permissions are accepted; raise ``PERMISSIONS_NOT_ACCEPTED`` if not,
    and ``INVALID_MANIFEST`` (never a question) when they reach the state of the project at
    ``root`` or ``home`` (SPLICE_HOME); ``links`` and ``found``: as :func:`ungranted_lines`
    takes them."""
    if root is not None:
        from splice_build.spec.project_state import (
            STATE_RULE,
            grant_unresolved,
            project_state_problems,
        )

        try:
            problems = project_state_problems(requested, root=root, home=home)
        except OSError as exc:  # a link renamed as it was read, or unreadable
            raise grant_unresolved(
                InstallError,
                ErrorCode.PERMISSIONS_NOT_ACCEPTED,
                subject,
                exc,
                "nothing was accepted",
            ) from exc
        if problems:
            raise InstallError(
                ErrorCode.INVALID_MANIFEST,
                f"{subject} asks for access to a project's state",
                details=problems,
                hint=STATE_RULE,
            )
    lines = ungranted_lines(requested, granted, root, links, found)
    if not lines:
        return
    # Only ``True`` accepts, given or answered: a truthy "no" or an object is a refusal.
    accepted = (accept(lines, subject) if callable(accept) else accept) is True
    if not accepted:
        raise InstallError(
            ErrorCode.PERMISSIONS_NOT_ACCEPTED,
            f"{subject} requests permissions that were not accepted",
            details=lines,
            hint=ACCEPT_HINT,
        )


def require_listed(package_id: str, version: str, requested: Permissions, listed: bool) -> None:
    """``PERMISSIONS_NOT_GRANTED`` when ``splice.json`` does not list the package
    (``listed``) and it asks for any permission: a lock entry no reviewed file names grants
    nothing (docs/security.md#consent-on-this-machine) when a tool runs, as when it installs.
    Its files digest being derived here says whose bytes they are, not that anyone agreed
    to what they may reach."""
    lines = [] if listed else ungranted_lines(requested, None)
    if not lines:
        return
    raise InstallError(
        ErrorCode.PERMISSIONS_NOT_GRANTED,
        f"{package_id}@{version} is not in splice.json: splice.lock's grant for it grants nothing",
        details=lines,
        hint=f"Review its permissions, then `splice add {package_id}@{version}`, or "
        f"`splice remove {package_id}`.",
    )


def require_recorded(
    package_id: str, version: str, requested: Permissions, recorded: Permissions | None
) -> None:
    """``PERMISSIONS_NOT_GRANTED`` when the installed copy asks for more than this machine
    recorded granting the package (``recorded``; None: no record, the lock's grant stands):
    a pull request can bring a lock pinning a wider version together with its installed
    copy, and a tool of it must not run before an install asked
    (install/consent_record.py)."""
    lines = [] if recorded is None else ungranted_lines(requested, recorded)
    if not lines:
        return
    raise InstallError(
        ErrorCode.PERMISSIONS_NOT_GRANTED,
        f"{package_id}@{version} asks for permissions this machine did not grant it",
        details=lines,
        hint="Run `splice install`: it asks for them.",
    )


def require_links_accepted(
    package_id: str,
    version: str,
    requested: Permissions,
    root: Path,
    links: Mapping[str, str] | None,
    memo: RunMemo | None = None,
) -> None:
    """``PERMISSIONS_NOT_GRANTED`` when a file grant of the copy leads out of the project at
    ``root`` (through a symbolic link) where this machine did not accept it leading
    (``links``: ``ConsentRecord.links_for``; None: no record): a fresh clone can ship
    ``docs -> ~/.ssh``, and a pull can swap a granted directory for such a link after its
    install (spec/outside_grants.py). ``memo``: the real paths the copy's other grant checks
    took (install/installed.py ``grant_memo``)."""
    from splice_build.spec.outside_grants import outside_links, unaccepted_links

    away = unaccepted_links(root, requested, links, outside_links(root, requested, memo))
    if not away:
        return
    raise InstallError(
        ErrorCode.PERMISSIONS_NOT_GRANTED,
        f"{package_id}@{version} has a file grant leading out of the project that this "
        "machine did not accept; nothing was run",
        details=ungranted_lines(requested, requested, root, links),
        hint="Run `splice install`: it asks for them.",
    )


def require_consented(
    package_id: str,
    version: str,
    requested: Permissions,
    root: Path,
    listed: bool,
    record: ConsentRecord | None,
    memo: RunMemo | None = None,
) -> Mapping[str, str]:
    """What this machine's consent asks of an installed copy before a tool of it runs (the
    SDK, hence ``run``, ``mcp`` and ``list``; ``verify``'s ``installed`` check): a package
    ``splice.json`` does not list (``listed``) asks for nothing (:func:`require_listed`), a
    listed one for nothing beyond what ``record`` granted it (:func:`require_recorded`),
    and each file grant leading out of the project at ``root`` leads where ``record``
    accepted it leading (:func:`require_links_accepted`, with ``memo``). Returns the links the record
    accepted, which the runtime checks again at each call."""
    require_listed(package_id, version, requested, listed)
    recorded = None if record is None else record.grant_for(package_id)
    require_recorded(package_id, version, requested, recorded)
    links = None if record is None else record.links_for(package_id)
    require_links_accepted(package_id, version, requested, root, links, memo)
    return links or {}
