"""The process's open-file limit (``RLIMIT_NOFILE``), raised where a command needs many
descriptors at once: the HTTP servers (connections, splice_build/connections.py) and a
workspace sync, which holds every member's state lock until it is done
(splice_build/tasks/sync.py)."""

from __future__ import annotations

import os

# Descriptors a sync wants beside its members' locks (the graph database, registry
# connections, files being hashed or written, the interpreter's own), and the fewest it is
# let start with: a no-op took 5, a sync reinstalling a package 12.
SYNC_HEADROOM = 64
SYNC_MINIMUM_HEADROOM = 16


def raise_open_file_limit() -> int:
    """Raise the soft open-file limit to the hard one (where the system allows); returns the
    soft limit now in force."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            return soft  # e.g. macOS refuses more than OPEN_MAX: keep what we have
        return hard
    return soft


def room_for_members(members: int) -> None:
    """Make room for a sync holding ``members`` locks at once, raising the soft limit when it
    leaves less than ``SYNC_HEADROOM``; ``INVALID_CONFIG`` before any lock is taken when even
    the hard limit leaves less than ``SYNC_MINIMUM_HEADROOM``.

    A user's soft limit is often 1,024: a larger monorepo ran out of files part-way, and the
    failure surfaced as whichever file could not be opened next (an install journal "cannot
    be read", with the hint to remove it)."""
    needed = members + SYNC_HEADROOM
    # The soft limit without importing ``resource`` (a no-op sync's budget is milliseconds);
    # -1 is no limit.
    soft = os.sysconf("SC_OPEN_MAX")
    if soft < 0 or soft >= needed:
        return
    import resource

    soft = raise_open_file_limit()
    if soft == resource.RLIM_INFINITY or soft >= members + SYNC_MINIMUM_HEADROOM:
        return
    from splice_build.errors import ErrorCode, ProjectError

    raise ProjectError(
        ErrorCode.INVALID_CONFIG,
        f"the workspace has {members} member projects and sync holds each one's lock until it "
        f"is done: the open-file limit ({soft}) is too low",
        hint=f"raise it to at least {needed} (ulimit -n {needed}) and sync again",
    )
