"""The process's open-file limit (``RLIMIT_NOFILE``), raised where a command needs many
descriptors at once: the HTTP servers (connections, splice_build/connections.py), a
workspace sync, which holds every member's state lock until it is done
(splice_build/tasks/sync.py ``room_for_members``, which imports this module only when the
limit is too low), and a sandbox's file view (runtime/isolation/child.py)."""

from __future__ import annotations


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
