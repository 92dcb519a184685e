"""Guards for every test: a private SPLICE_HOME and HOME, umask 022, and no ambient SPLICE_*/proxy variables.

The test switches (``SPLICE_TEST_*``, ``testing/switches.py``) are read when this file is
imported, before any test clears the environment; tests and helpers read them from there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from testing.switches import SWITCHES  # first: read before any test clears SPLICE_*

# Property tests judge what the code does, never how fast: Hypothesis's 200 ms deadline per
# example failed them on a loaded machine (an example held up by other processes:
# DeadlineExceeded, or "Unreliable test timings" when its replay was quick). A bound on time
# is a test of its own, on this thread's CPU time (fuzz/targets.py's pumped oracle).
settings.register_profile("splice", deadline=None)
settings.load_profile("splice")

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


def pytest_configure(config: pytest.Config) -> None:
    from testing.isolation import MARK

    config.addinivalue_line(
        "markers", f"{MARK}: needs the OS layer (skipped, or failed when it is required)"
    )


def pytest_report_header(config: pytest.Config) -> str:
    return SWITCHES.describe()


def pytest_runtest_setup(item: pytest.Item) -> None:
    from testing.isolation import MARK, require_os_layer

    if item.get_closest_marker(MARK) is not None:
        require_os_layer()


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """Each test starts under umask 022, as a job run by root does. What Splice makes follows
    the umask, and keeps the group's write where a directory gives it (docs/lifecycle.md): run
    under 002 (a regular user's default on Debian and Ubuntu) the directories the tests make
    are a team's, and the modes 7 tests expect were the group-writable ones. A test about
    another umask sets its own."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


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
