"""Fixtures for registry tests, parametrized over the store back ends.

Every test that asks for ``server``, ``backend`` or ``new_backend`` runs twice: against
SQLite + the filesystem (``sqlite``) and against PostgreSQL + S3 (``postgres``, real
servers started once per session by ``testing.services``). Without PostgreSQL's programs
the ``postgres`` runs are skipped with the reason, or fail when the environment says the
services must be there (``SPLICE_TEST_REQUIRE_SERVICES=1``, CI).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from testing.registry_backends import KINDS, ScaleServices, StoreBackend, make_backend
from testing.registry_server import RunningRegistry, registry_server
from testing.services import missing_services, postgres_server, s3_server, services_required


@pytest.fixture(scope="session")
def scale_services() -> Iterator[ScaleServices]:
    reason = missing_services()
    if reason is not None:
        if services_required():
            pytest.fail(f"PostgreSQL + S3 back end required but unavailable: {reason}")
        pytest.skip(reason=f"PostgreSQL + S3 back end not tested: {reason}")
    with postgres_server() as postgres, s3_server() as s3:
        yield ScaleServices(postgres, s3)


def _services(request: pytest.FixtureRequest, kind: str) -> ScaleServices | None:
    return request.getfixturevalue("scale_services") if kind == "postgres" else None


@pytest.fixture(scope="module", params=KINDS)
def backend_kind(request: pytest.FixtureRequest) -> str:
    _services(request, request.param)  # skip (or fail) early when the services are missing
    return str(request.param)


@pytest.fixture
def new_backend(
    backend_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Callable[..., StoreBackend]:
    """Make a new, empty store of this run's kind (``new_backend("name")`` for several)."""
    services = _services(request, backend_kind)
    return lambda name="data": make_backend(backend_kind, tmp_path / name, services)


@pytest.fixture
def backend(new_backend: Callable[..., StoreBackend]) -> StoreBackend:
    return new_backend()


@pytest.fixture(scope="module")
def server(
    backend_kind: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[RunningRegistry]:
    """A registry with rate limits on publishes and requests off (many tests share it)."""
    data = tmp_path_factory.mktemp("registry-data")
    store = make_backend(backend_kind, data, _services(request, backend_kind))
    with registry_server(
        data, "--publish-limit", "0", "--request-limit", "0", backend=store
    ) as running:
        yield running


@pytest.fixture
def pkg_root(tmp_path: Path) -> Path:
    return tmp_path / "packages"
