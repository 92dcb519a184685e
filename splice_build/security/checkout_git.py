"""The one way Splice starts git in a checkout that may be anyone's.

A repository's own configuration can name commands that git runs while it only reads
(``core.fsmonitor`` is run on every read of the index, so ``git ls-files`` runs it), and a
directory of a clone that looks like a bare repository (``HEAD``, ``objects/``, ``refs/``,
``config``) is a repository of its own to a git started inside it. Settings given on the
command line win over any repository's: an implicit bare repository is refused and no
monitor command ever runs. Used by the workspace's member listing
(``project/workspace.py``) and ``splice secret-scan`` (``security/secret_scan.py``).
"""

from __future__ import annotations

GIT = ("git", "-c", "safe.bareRepository=explicit", "-c", "core.fsmonitor=false")
