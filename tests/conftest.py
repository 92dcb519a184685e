"""Guards for every test: a private SPLICE_HOME and HOME, and no ambient SPLICE_*/proxy variables."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

_CLEARED_PREFIXES = ("SPLICE_",)
_CLEARED_NAMES = {
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "NO_COLOR",
}


@pytest.fixture(autouse=True)
def clean_environ(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Each test gets its own SPLICE_HOME and HOME; the real home directory is never touched."""
    saved = dict(os.environ)
    for name in list(os.environ):
        if name.startswith(_CLEARED_PREFIXES) or name in _CLEARED_NAMES:
            del os.environ[name]
    home = tmp_path_factory.mktemp("home")
    os.environ["HOME"] = str(home)
    os.environ["SPLICE_HOME"] = str(home / ".splice")
    try:
        yield home / ".splice"
    finally:
        os.environ.clear()
        os.environ.update(saved)
