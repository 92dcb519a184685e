"""Consent to a package's permissions (docs/security.md, docs/compatibility.md#install-pipeline step 7).

A package that declares anything beyond what the project already granted needs an explicit
yes: ``accept=True`` (``--accept-permissions``) or a callback (the CLI's interactive prompt)
that receives the ``describe`` lines of what is new and ``"id@version"``. Without it the
install stops with ``PERMISSIONS_NOT_ACCEPTED`` before anything is written. Upgrades within
the existing grant need no consent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from splice_build.errors import ErrorCode, InstallError

if TYPE_CHECKING:
    from splice_build.spec.permissions import Permissions

Accept = bool | Callable[[list[str], str], bool]


def ungranted_lines(requested: Permissions, granted: Permissions | None) -> list[str]:
    """The ``describe`` lines of what ``requested`` asks beyond ``granted`` (None: nothing)."""
    from splice_build.spec.permissions import Permissions, ungranted

    missing = ungranted(requested, granted if granted is not None else Permissions.from_json({}))
    return [] if missing.is_empty else list(missing.describe())


def require_consent(
    requested: Permissions, granted: Permissions | None, accept: Accept, subject: str
) -> None:
    """Return when the new permissions are accepted; raise ``PERMISSIONS_NOT_ACCEPTED`` if not."""
    lines = ungranted_lines(requested, granted)
    if not lines:
        return
    accepted = accept(lines, subject) if callable(accept) else accept is True
    if not accepted:
        raise InstallError(
            ErrorCode.PERMISSIONS_NOT_ACCEPTED,
            f"{subject} requests permissions that were not accepted",
            details=lines,
            hint="Review them, then re-run with --accept-permissions.",
        )
