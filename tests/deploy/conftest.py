"""The deployment of docs/deploy.md on loopback, started once for the module's tests.

nginx (docs/deploy/nginx.conf) in front of two ``splice registry serve`` instances sharing
one PostgreSQL database and one S3 bucket (the session's servers from tests/registry), and two
``splice mcp --http`` instances serving one project, every instance started with
``--trusted-proxy`` naming nginx's address. Without nginx, PostgreSQL or S3 the tests are
skipped with the reason, or fail when ``SPLICE_TEST_REQUIRE_SERVICES=1`` (CI).
"""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from testing.cli import run_splice
from testing.deploy import PROXY_ADDRESS, RunningNginx, missing_nginx, nginx, nginx_required
from testing.mcp_clients import child_env, free_port, http_server, splice_argv
from testing.registry import package_dir
from testing.registry_backends import ScaleServices, make_backend
from testing.registry_server import RunningRegistry, registry_server, user_token
from tests.registry.conftest import scale_services  # noqa: F401  (the session's PG + S3)

PACKAGE = "@acme/greeter"
MCP_TOKEN = "deploy-test-token-" + "0" * 24


@dataclass
class Deployment:
    nginx: RunningNginx
    registries: tuple[RunningRegistry, RunningRegistry]
    mcp: list[tuple[str, subprocess.Popen[bytes]]]  # (url, process) of each MCP instance
    token: str  # a managing token of user "acme"
    project: Path  # installed through the proxy, served by both MCP instances
    env: dict[str, str]  # HOME and SPLICE_HOME of the project's user

    def splice(self, *args: str, cwd: Path | None = None, token: bool = False):
        extra = {"SPLICE_TOKEN": self.token} if token else {}
        return run_splice(
            "--registry", self.nginx.registry_url, *args, cwd=cwd, env={**self.env, **extra}
        )


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/", 1)[0])


@pytest.fixture(scope="module")
def deployment(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    reason = missing_nginx()
    if reason is not None:
        if nginx_required():
            pytest.fail(f"the deployment test needs nginx: {reason}")
        pytest.skip(reason=f"deployment not tested: {reason}")
    services: ScaleServices = request.getfixturevalue("scale_services")
    root = tmp_path_factory.mktemp("deploy")
    home = root / "home"
    env = {"HOME": str(home), "SPLICE_HOME": str(home / ".splice")}
    store = make_backend("postgres", root / "store", services)
    trusted = ("--trusted-proxy", PROXY_ADDRESS)
    with ExitStack() as stack:
        first, second = (
            stack.enter_context(registry_server(root / f"registry-{i}", *trusted, backend=store))
            for i in (1, 2)
        )
        registries = (first, second)
        mcp_ports = (free_port(), free_port())
        proxy = stack.enter_context(
            nginx(
                root / "nginx",
                registry_upstreams=(_port(registries[0].url), _port(registries[1].url)),
                mcp_upstreams=mcp_ports,
            )
        )
        token = user_token(registries[0], "acme")
        deployment = Deployment(proxy, registries, [], token, root / "project", env)
        published = deployment.splice("publish", str(package_dir(root / "pkgs")), token=True)
        assert published.code == 0, published.stderr
        deployment.project.mkdir()
        for args in (("init",), ("add", PACKAGE)):
            done = deployment.splice(*args, cwd=deployment.project)
            assert done.code == 0, done.stderr
        mcp_env = child_env({**env, "SPLICE_MCP_TOKEN": MCP_TOKEN})
        for port in mcp_ports:
            argv = splice_argv("mcp", "--http", "--port", str(port), "--project", ".", *trusted)
            deployment.mcp.append(
                stack.enter_context(http_server(argv, env=mcp_env, cwd=deployment.project))
            )
        yield deployment


def new_token() -> str:
    """A well-formed user token the registry never issued."""
    return "splice_" + secrets.token_hex(32)
