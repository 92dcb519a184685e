"""What this machine consented to for a project's packages: ``SPLICE_HOME/consent/<hex>.json``.

``splice.lock`` and ``.splice/packages`` both come with a checkout (git overwrites ignored
files, or ``.splice`` is committed): a pull request that pins a version asking for more and
ships that version's installed copy (the registry's own bytes, or only its ``manifest.json``)
made the installed manifest, which consent was narrowed to, say what the pull request wanted.
So the grant each installed copy of a project runs under is recorded where no checkout
writes: in SPLICE_HOME, keyed by the project's real path (``<hex>`` is its SHA-256), written
after every successful install, sync, add or update of the project while its lock is held,
and read only from a home that is this user's alone. ``install/installer.py``
``_granted_here`` and ``consent_kept`` prefer it to the installed manifest, and ``splice
run``, ``splice mcp``, ``splice list`` and the SDK refuse a copy asking for more than it
(``sdk.py`` ``_require_listed``; docs/security.md#consent-on-this-machine).

Each package's record also names the ``fs`` entries of its grant whose real path left the
project when it was consented to, each with the real path it led to then, as the prompt showed
it (``links``; spec/outside_grants.py): the lock cannot say where a link of the checkout
leads, so a grant through one holds only where this record names it with the same real path.
A record of version 1 (written before) reads as before, with no such link accepted.

A record another user owns (put there while the home was open to them) is none, as a
missing one (a fresh clone, a moved project): the lock stays the project's reviewed record.
A record that is there but cannot be read, or is not of its shape, grants nothing: every
permission is asked for again, and the next successful install writes it anew.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from splice_build.records import dataclass, field
from splice_build.spec.limits import MAX_PROJECT_STATE_BYTES

if TYPE_CHECKING:
    from splice_build.spec.permissions import Permissions

# A record holds no more grants than the lock it was written for (each copy runs within its
# entry's grant), written compact, so the lock's bound holds it. It is never left unwritten
# for its size: a project without a record falls back to its installed copies, which a
# checkout writes; one too large to read grants nothing.
MAX_RECORD_BYTES = MAX_PROJECT_STATE_BYTES
RECORD_VERSION = 2
_READABLE_VERSIONS = (1, RECORD_VERSION)  # 1: no links recorded


_NO_LINKS: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True)
class ConsentRecord:
    """The grants this machine recorded for a project's packages; ``corrupt``: a record that
    was there but could not be read, which grants nothing to any package."""

    grants: Mapping[str, Permissions]
    corrupt: bool = False
    # package id -> {fs entry: the real path outside the project it was accepted leading to}
    links: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def grant_for(self, package_id: str) -> Permissions | None:
        """What ``package_id``'s installed copy was granted here: empty when the record is
        corrupt, None when the record does not name the package (installed before records
        were kept, or new to the project: its lock entry is then the only record)."""
        if self.corrupt:
            from splice_build.spec.permissions import Permissions

            return Permissions.from_json({})
        return self.grants.get(package_id)

    def links_for(self, package_id: str) -> Mapping[str, str]:
        """The entries of ``package_id``'s grant this machine accepted leading out of the
        project, each with its real path then (none for a corrupt record)."""
        return _NO_LINKS if self.corrupt else self.links.get(package_id, _NO_LINKS)


def record_path(home: Path, root: Path) -> Path:
    """Where the record of the project at ``root`` lives in the home ``home``."""
    from splice_build.project.home import SpliceHome
    from splice_build.spec.digests import sha256_hex

    digest = sha256_hex(os.fsencode(os.path.realpath(root)))  # no OpenSSL on `splice run`
    return SpliceHome(home).consent_dir / f"{digest}.json"


def read_record(home: Path, root: Path) -> ConsentRecord | None:
    """The record of the project at ``root``, or None when there is none (see the module
    docstring); ``INVALID_CONFIG`` when the home is not this user's alone."""
    from splice_build.project.home import SpliceHome
    from splice_build.spec.regular_file import read_regular_file, this_user

    SpliceHome(home).check()
    try:
        data = read_regular_file(record_path(home, root), limit=MAX_RECORD_BYTES, owner=this_user())
    except FileNotFoundError:
        return None
    except OSError as exc:
        return None if exc.errno == errno.EPERM else ConsentRecord({}, corrupt=True)
    parsed = _parsed(data, os.path.realpath(root))
    if parsed is None:
        return ConsentRecord({}, corrupt=True)
    grants, links = parsed
    return ConsentRecord(grants, links=links)


def _parsed(
    data: bytes, real_root: str
) -> tuple[dict[str, Permissions], dict[str, Mapping[str, str]]] | None:
    """The grants and links of a record for the project at ``real_root``, or None when it
    is not one."""
    from splice_build.errors import SpliceError
    from splice_build.spec.permissions import Permissions

    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if (
        not isinstance(value, dict)
        or type(value.get("version")) is not int  # not true, which equals 1, nor 2.0
        or value["version"] not in _READABLE_VERSIONS
        or value.get("project") != real_root
    ):
        return None
    packages = value.get("packages")
    links = value.get("links", {}) if value["version"] == RECORD_VERSION else {}
    if (
        not isinstance(packages, dict)
        or not _is_links(links)
        or not links.keys() <= packages.keys()  # write_record keeps only the granted's
    ):
        return None
    try:
        grants = {str(k): Permissions.from_json(v) for k, v in packages.items()}
    except SpliceError:
        return None
    return grants, {k: MappingProxyType(v) for k, v in links.items()}


def _is_links(value: object) -> bool:
    """``{package id: {entry: real path}}``, every key and path a string."""
    return isinstance(value, dict) and all(
        isinstance(one, dict) and all(isinstance(v, str) for v in one.values())
        for one in value.values()
    )


def remove_dead_record_temps(home: Path) -> None:
    """Delete the temp files of the consent records in ``home`` whose writers no longer run (project/atomic.py ``remove_stale_temps``). The record is written as
    ``splice.lock`` commits (install/transaction.py ``on_commit``): a ``kill -9`` between its
    temp file and the rename left a full copy of the new record, which the recovery never
    writes (a journal is no consent) and which stayed for good when every later install of
    the project changed nothing, so wrote no record. Call it holding the project's lock,
    after :func:`read_record` found the home to be this user's alone.

    Those of every record go (``remove_dead_temps``, as :func:`write_record`'s): the
    directory holds one record per project this machine installed, and a sync checks each
    member, so listing it for each made a sync cost members × projects; a process lists it
    once a minute."""
    from splice_build.project.atomic import remove_dead_temps
    from splice_build.project.home import SpliceHome

    remove_dead_temps(SpliceHome(home).consent_dir)


def write_record(
    home: Path,
    root: Path,
    grants: Mapping[str, Permissions],
    links: Mapping[str, Mapping[str, str]],
) -> None:
    """Replace the record of the project at ``root`` with ``grants`` and, for those packages,
    the ``links`` accepted (atomically, 0600; the caller holds the project's lock). Best
    effort: a record that cannot be written leaves the last one, which grants no more than
    this machine consented to."""
    from splice_build.project.atomic import atomic_write_bytes, remove_dead_temps
    from splice_build.project.home import FILE_MODE, SpliceHome, make_private_dirs

    SpliceHome(home).check()
    path = record_path(home, root)
    record = {
        "version": RECORD_VERSION,
        "project": os.path.realpath(root),
        "packages": {k: grants[k].to_json() for k in sorted(grants)},
        "links": {k: dict(links[k]) for k in sorted(grants) if links.get(k)},
    }
    text = json.dumps(record, separators=(",", ":")).encode() + b"\n"
    try:
        make_private_dirs(path.parent)
        remove_dead_temps(path.parent)
        atomic_write_bytes(path, text, mode=FILE_MODE)
    except OSError as exc:
        import logging

        logging.getLogger(__name__).warning("could not write consent record %s: %s", path, exc)
