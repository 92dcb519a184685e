"""``remove``: the package directories, lock entries and ranges go in one transaction."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from splice_build.errors import ErrorCode, InstallError
from splice_build.install import transaction
from splice_build.project.layout import ProjectLayout
from splice_build.project.lockfile import load_lockfile
from splice_build.project.project_file import load_project_file
from splice_build.spec.names import did_you_mean


def remove_packages(layout: ProjectLayout, ids: Sequence[str]) -> list[dict[str, Any]]:
    """Remove ``ids`` (caller holds the project lock); ``NOT_INSTALLED`` if one is nowhere."""
    project = load_project_file(layout.root)
    lock = load_lockfile(layout.root)
    removed: list[dict[str, Any]] = []
    swaps = []
    for package_id in dict.fromkeys(ids):
        entry = lock.get(package_id)
        on_disk = os.path.lexists(layout.package_dir(package_id))  # a dangling link too
        if entry is None and package_id not in project.packages and not on_disk:
            raise InstallError(
                ErrorCode.NOT_INSTALLED,
                f"{package_id} is not installed",
                hint=f"{did_you_mean(package_id, project.packages)}Run `splice list` to see "
                "the project's packages.",
            )
        removed.append({"name": package_id, "version": entry.version if entry else None})
        lock = lock.without(package_id)
        if on_disk:
            swaps.append(transaction.swap_for(layout, package_id, None))
    ranges = {package_id: None for package_id in ids if package_id in project.packages}
    transaction.apply(layout, swaps, lock, ranges)
    return removed
