"""Where tools were granted writing: recorded by the runtime before a tool starts.

Workspace discovery drops a project that lies in a write grant (project/tool_written.py),
but a lock only says what its packages may write now: a package run, then removed (or
updated to a version without that grant) before the next ``splice sync``, and a package run
from its directory (``splice run --dir``, which grants what its manifest asks), left no
trace, and a ``splice.json`` its tool planted was synced as a member again. So the runtime
records every write grant it hands to a tool, before the tool starts: the directory's real
path and its device and inode, with the entry as written and the directory it was joined
to. The record lives in the project's ``.splice/`` (which no grant may reach), or in
SPLICE_HOME for a run whose directory holds no project; discovery and
``enclosing_write_grant`` union these places with the locks' grants.

The file is rewritten only when a grant is new to it (a ``splice run`` of a known grant
reads it once; a long-lived runtime remembers what it wrote while the file stays as it left
it: runtime/runtime.py ``_forget_if_changed``), atomically and under a lock of its own, so
two runs never lose each other's entry. It is bounded, so that it can always be read back: as
many entries as one package may be granted write paths (``permissions.schema.json``'s
``fs.write`` ``maxItems``, read from there: ``max_entries``), and the bytes of a file of
project state (spec/limits.py), which that many entries of the longest paths a system names
fit in. When full, entries whose directory is gone are forgotten (nothing written there is
left); when still full, the tool does not run. ``check_room`` tells so before the runtime
creates any granted directory. A file that cannot be read is written anew. A checkout may
ship this file: read entries only ever drop more projects (each reported), and one that
reaches its own project's root is ignored, as a lock's is.

SPLICE_HOME keeps the grants of runs in a place another user may change apart
(``SHARED_RECORD_NAME``): in a team's checkout that user may point a granted ``out`` at a new
directory (a link they own) before each of your runs there, each run then records a live
entry, and ``max_entries()`` runs filled the one record, so every later run of yours that
records there (a grant leaving your own project through a link, ``splice run --dir``) was
refused. Filling the shared record now refuses only runs in such places, which that user
may stop anyway.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from splice_build.file_keys import SameFile, same_file_at
from splice_build.records import dataclass
from splice_build.spec.limits import MAX_PROJECT_STATE_BYTES

RECORD_NAME = "write-grants.json"
# SPLICE_HOME's record of the runs in a place another user may change (module docstring).
SHARED_RECORD_NAME = "write-grants-shared.json"
MAX_BYTES = MAX_PROJECT_STATE_BYTES


def max_entries() -> int:
    """The most entries a record holds: what one package may be granted fits in an empty
    one (module docstring), so it is read from the schema that bounds the list; a package of
    more write grants than the record held installed, then never ran, after its directories
    were made. Read when asked: a no-op ``splice sync`` reads records, never fills one."""
    from splice_build.spec.permissions import max_entries as schema_max_entries

    return schema_max_entries(("fs", "write"))


@dataclass(frozen=True)
class Recorded:
    """One directory a tool was granted for writing."""

    root: str  # the directory the entry was joined to (the project, or the run's directory)
    grant: str  # the entry as the manifest wrote it
    path: str  # its real path when granted
    identity: SameFile

    def identities(self) -> set[SameFile]:
        """The recorded identity, and that of what lies at the recorded path now (a file
        system mounted again may number its devices anew): more only ever drops more."""
        now = same_file_at(self.path)
        return {self.identity} if now is None else {self.identity, now}


def record_file(root: Path, home: Path, shared: bool) -> Path:
    """The record of a run in ``root``: its ``.splice/`` when ``root`` is a project, else
    SPLICE_HOME's (a ``splice run --dir`` outside any project): ``home_record``'s."""
    from splice_build.project.layout import PROJECT_FILE, STATE_DIR

    if (root / PROJECT_FILE).is_file():
        return root / STATE_DIR / RECORD_NAME
    return home_record(home, shared)


def home_record(home: Path, shared: bool) -> Path:
    """SPLICE_HOME's record of a run; ``shared``: in a place another user may change, whose
    entries are kept apart (module docstring)."""
    return home / (SHARED_RECORD_NAME if shared else RECORD_NAME)


def read_records(path: Path) -> list[Recorded]:
    """The entries of a record file; none when it is missing or cannot be read."""
    return read_records_and_stat(path)[0]


def read_records_and_stat(path: Path) -> tuple[list[Recorded], os.stat_result | None]:
    """The entries of a record file and the ``fstat`` of the file they were read from (whose
    owner tells whose grants they are: project/state_owner.py); ``([], None)`` when it is
    missing or cannot be read."""
    from splice_build.spec.regular_file import read_regular_file_and_stat

    try:
        data, info = read_regular_file_and_stat(path, MAX_BYTES)
        document = json.loads(data)
    except (OSError, ValueError, RecursionError):
        return [], None
    grants = document.get("grants") if isinstance(document, dict) else None
    found = []
    for entry in grants if isinstance(grants, list) else []:
        recorded = _entry(entry)
        if recorded is not None:
            found.append(recorded)
    return found, info


def _entry(entry: object) -> Recorded | None:
    if not isinstance(entry, dict):
        return None
    texts = [entry.get(key) for key in ("root", "grant", "path")]
    numbers = [entry.get(key) for key in ("dev", "ino")]
    if not all(isinstance(t, str) for t in texts):
        return None
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
        return None
    root, grant, path = texts
    if not _real_path(root):
        return None
    return Recorded(root, grant, path, (numbers[0], numbers[1]))


def _real_path(text: str) -> bool:
    """Whether ``text`` is a path the runtime could have recorded as a root (a real path:
    absolute, and one the system can name). Workspace discovery resolves a root of
    SPLICE_HOME's record as it stands: one holding a NUL or a lone surrogate that stood for
    no byte made ``os.path.realpath`` raise, and ``splice sync`` end ``INTERNAL_ERROR``."""
    try:
        return os.path.isabs(text) and b"\0" not in os.fsencode(text)
    except UnicodeEncodeError:
        return False


def remember(record: Path, root: Path, grants: Sequence[tuple[str, Path]]) -> set[SameFile]:
    """Record each ``(entry, directory)`` granted in ``root`` that exists and the file does
    not hold yet; the identities now recorded. ``OSError`` when the file cannot be written,
    ``OverflowError`` when it is full of live entries: the tool must not run then."""
    wanted = {}
    for grant, directory in grants:
        identity = same_file_at(str(directory))
        if identity is not None:  # one that does not exist lies in another (``_grant``)
            wanted[identity] = Recorded(str(root), grant, os.path.realpath(directory), identity)
    held = {entry.identity for entry in read_records(record)}
    if held.issuperset(wanted):
        return set(wanted)
    from splice_build.project.atomic import atomic_write_bytes
    from splice_build.project.locking import lock

    record.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # .splice, or SPLICE_HOME
    with lock(record.with_name(f"{RECORD_NAME}.lock")):
        entries = read_records(record)  # again: another run may have added its own
        held = {entry.identity for entry in entries}
        new = [entry for identity, entry in wanted.items() if identity not in held]
        atomic_write_bytes(record, _fitted(record, entries, new))
    return set(wanted)


def check_room(record: Path, root: Path, grants: Sequence[tuple[str, Path]]) -> None:
    """``OverflowError`` when ``remember`` would refuse ``grants`` (the record full of live
    entries), told before the runtime creates any of their directories: each that does not
    exist yet counts as a new entry at the real path it would be made at, as long as the
    longest identity. Nothing is written."""
    entries = read_records(record)
    held = {entry.identity for entry in entries}
    new = {}
    for grant, directory in grants:
        identity = same_file_at(str(directory))
        if identity not in held:
            path = os.path.realpath(directory)
            new[path] = Recorded(str(root), grant, path, identity or _LONGEST_IDENTITY)
    if new:
        _fitted(record, entries, list(new.values()))


# (st_dev, st_ino) of the most digits: a directory not made yet takes no fewer bytes than this.
_LONGEST_IDENTITY = (2**64 - 1, 2**64 - 1)


def _fitted(record: Path, entries: list[Recorded], new: list[Recorded]) -> bytes:
    """The file holding ``entries`` and ``new``; when over the bounds, ``entries`` whose
    directory is gone are left out. ``OverflowError`` when it is still over them: never a
    file that cannot be read back."""
    most = max_entries()
    data = _encoded([*entries, *new])
    if len(entries) + len(new) > most or len(data) > MAX_BYTES:
        entries = [entry for entry in entries if same_file_at(entry.path) == entry.identity]
        data = _encoded([*entries, *new])
    if len(entries) + len(new) > most or len(data) > MAX_BYTES:
        raise OverflowError(f"{record} is full of write grants whose directories exist")
    return data


def _encoded(entries: Iterable[Recorded]) -> bytes:
    grants = [
        {"root": e.root, "grant": e.grant, "path": e.path, "dev": e.identity[0],
         "ino": e.identity[1]}
        for e in entries
    ]  # fmt: skip
    return (json.dumps({"grants": grants}, indent=2) + "\n").encode("ascii")
