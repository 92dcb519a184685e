"""Where a project keeps its files: ``splice.json``, ``splice.lock`` and ``.splice/``.

docs/compatibility.md#splice-layout. Only paths here, no I/O: every module that touches a project asks this
one where things are, so the layout is written down once.

::

    <root>/splice.json                     project file (ranges)
    <root>/splice.lock                     lock file (exact versions, integrity, grants)
    <root>/splice-lock.json                legacy lock (read as fallback, deleted on write)
    <root>/workspace/                      the @splice/files skill's directory
    <root>/.splice/state.lock              lock file serializing writers of all of the above
    <root>/.splice/graph.sqlite3           the doit state graph
    <root>/.splice/statcache.json          stat records of installed files and the no-op state
                                           (install/statcache.py)
    <root>/.splice/workspace.json          a workspace root's memo of its members
                                           (project/workspace.py)
    <root>/.splice/walks.json              a workspace root's walks below its members' grants
                                           (project/walk_record.py)
    <root>/.splice/packages/@ns/name/      installed, verified files
    <root>/.splice/tmp/                    staging and backups during an install
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from splice_build.records import dataclass
from splice_build.spec.names import PackageId

# The names live with the rule that no grant may reach them (spec/project_state.py).
from splice_build.spec.project_state import LEGACY_LOCK_FILE, LOCK_FILE, PROJECT_FILE, STATE_DIR

__all__ = [
    "LEGACY_LOCK_FILE",
    "LOCK_FILE",
    "PROJECT_FILE",
    "STATE_DIR",
    "STAT_CACHE_FILE",
    "ProjectLayout",
]

STAT_CACHE_FILE = "statcache.json"  # in STATE_DIR


@dataclass(frozen=True)
class ProjectLayout:
    """The paths of one project, rooted at the directory holding ``splice.json``.

    Each path is built once per layout (``cached_property``): a no-op ``splice sync`` asks a
    layout for the same few paths many times for every member."""

    root: Path

    @cached_property
    def project_file(self) -> Path:
        return self.root / PROJECT_FILE

    @cached_property
    def lock_file(self) -> Path:
        return self.root / LOCK_FILE

    @cached_property
    def legacy_lock_file(self) -> Path:
        return self.root / LEGACY_LOCK_FILE

    @cached_property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    @cached_property
    def packages_dir(self) -> Path:
        return self.state_dir / "packages"

    def package_dir(self, package_id: str) -> Path:
        """``.splice/packages/@ns/name``; raises ``SpecError(INVALID_NAME)`` for a bad id.

        The id is parsed rather than joined as text, so no id can point outside
        ``packages_dir``.
        """
        scope, name = PackageId.parse(package_id).id.split("/")
        return self.packages_dir.joinpath(scope, name)

    @cached_property
    def tmp_dir(self) -> Path:
        return self.state_dir / "tmp"

    @cached_property
    def state_lock(self) -> Path:
        return self.state_dir / "state.lock"

    @cached_property
    def graph_db(self) -> Path:
        return self.state_dir / "graph.sqlite3"

    @cached_property
    def stat_cache(self) -> Path:
        return self.state_dir / STAT_CACHE_FILE

    @cached_property
    def workspace_dir(self) -> Path:
        return self.root / "workspace"
