"""The test suite's switches, read once, before any test runs.

``tests/conftest.py`` clears every ``SPLICE_*`` variable around each test (no test sees the
developer's settings). The switches are ``SPLICE_TEST_*`` variables too, so they are read
here, when ``tests/conftest.py`` imports this module at the start of the session, and every
helper that needs a switch reads ``SWITCHES`` — never ``os.environ``. Whatever runs first
(``-k``, one file, another order), a switch means the same thing.

``SPLICE_TEST_REQUIRE_SERVICES=1``
    a missing PostgreSQL or S3 test server, or nginx (the deployment test), fails the tests
    that need it (set by ``.ci/services.sh``); without it they are skipped with the reason.
``SPLICE_TEST_REQUIRE_OS_LAYER=1``
    a missing OS layer (user/PID/mount/network namespaces) or network-namespace tool
    (``unshare``, ``ip``) fails the tests that need it (set by ``.ci/run``).
``SPLICE_TEST_PG_BIN``
    the directory holding PostgreSQL's ``initdb`` and ``pg_ctl``.
``SPLICE_TEST_CACHE``
    where test tools downloaded once are kept (the MCP Inspector); default ``.cache`` in the
    repository.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

REQUIRE_SERVICES = "SPLICE_TEST_REQUIRE_SERVICES"
REQUIRE_OS_LAYER = "SPLICE_TEST_REQUIRE_OS_LAYER"
PG_BIN = "SPLICE_TEST_PG_BIN"
CACHE = "SPLICE_TEST_CACHE"
NAMES = (REQUIRE_SERVICES, REQUIRE_OS_LAYER, PG_BIN, CACHE)


@dataclass(frozen=True)
class Switches:
    require_services: bool
    require_os_layer: bool
    pg_bin: Path | None
    cache: Path

    @classmethod
    def read(cls, environ: Mapping[str, str]) -> Switches:
        pg_bin = environ.get(PG_BIN)
        return cls(
            require_services=environ.get(REQUIRE_SERVICES, "") == "1",
            require_os_layer=environ.get(REQUIRE_OS_LAYER, "") == "1",
            pg_bin=Path(pg_bin) if pg_bin else None,
            cache=Path(environ.get(CACHE) or REPO / ".cache"),
        )

    def environ(self) -> dict[str, str]:
        """The switches as variables, for a child test run that must see the same ones."""
        out = {CACHE: str(self.cache)}
        if self.require_services:
            out[REQUIRE_SERVICES] = "1"
        if self.require_os_layer:
            out[REQUIRE_OS_LAYER] = "1"
        if self.pg_bin is not None:
            out[PG_BIN] = str(self.pg_bin)
        return out

    def describe(self) -> str:
        """One line for pytest's header."""
        return (
            f"splice test switches: require services={self.require_services}, "
            f"require OS layer={self.require_os_layer}, cache={self.cache}"
        )


SWITCHES = Switches.read(os.environ)
