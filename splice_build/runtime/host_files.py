"""Where the JavaScript host ships: ``splice_build/runtime/host/`` as package data."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path


@lru_cache(maxsize=1)
def host_dir() -> Path:
    """Absolute, canonical directory of host.mjs, its modules and their bundle."""
    return Path(str(resources.files("splice_build.runtime") / "host")).resolve(strict=True)


def host_entry() -> Path:
    """What Node runs: ``bundle.mjs``, the host's modules in one file (runtime/host_bundle.py)."""
    return host_dir() / "bundle.mjs"
